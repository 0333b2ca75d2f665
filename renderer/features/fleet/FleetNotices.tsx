/**
 * What the fleet says above its table when its rows are not simply current: a connection whose
 * rows are stale ("as of"), one whose backend lost its data (with "Reopen connection"), and a
 * link to a connection this console does not know.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { ConnectionInfo, LeaseStatus } from '../../../src/console/common/index.ts';
import { LEASE_STATUSES } from '../../../src/console/common/index.ts';
import { keys } from '../../api/queries.ts';
import { useServices } from '../../app/context.tsx';
import { ageOf, type Freshness } from '../../app/freshness.ts';
import { usePermissions } from '../../app/hooks.ts';
import { navigate } from '../../app/router.ts';
import { HOME } from '../../app/routes.ts';
import { ErrorNotice } from '../../app/ui.tsx';
import { formatClockSeconds } from '../../lib/format.ts';
import type { StatusCounts } from './model.ts';
import type { Summary } from './window.ts';

/** The connection chip's dot: amber while its rows are not current, red on an error. */
export function ConnectionDot({
  conn,
  freshness,
}: {
  conn: ConnectionInfo;
  freshness: Freshness | undefined;
}) {
  const tone = conn.state === 'error' ? 'error' : freshness?.stale === true ? 'stale' : conn.state;
  return <span className={`dot dot-${tone}`} aria-hidden="true" />;
}

/** "as of 09:31:02 — 41 s ago": where the operator looks, for each connection whose rows are not current. */
export function StaleNote({
  conn,
  freshness,
  localNow,
}: {
  conn: ConnectionInfo;
  freshness: Freshness | undefined;
  localNow: number;
}) {
  const asOf = freshness?.asOf ?? null;
  return (
    <div className="stale-note" role="status" aria-label={`${conn.name} is not current`}>
      <strong>{conn.name}</strong>{' '}
      {asOf === null
        ? 'not synced yet'
        : `as of ${formatClockSeconds(asOf)} — ${ageOf(asOf, conn, localNow)}`}
      {freshness?.reason != null && <span className="muted"> · {freshness.reason}</span>}
      <span className="muted">
        {' '}
        · statuses are frozen at that time; force release is off until it is current
      </span>
    </div>
  );
}

/** A backend that lost its data (DATASET_LOST): what was shown is not current, and it can be reopened here. */
export function DataLostNote({ conn }: { conn: ConnectionInfo }) {
  const { client } = useServices();
  const queryClient = useQueryClient();
  const perm = usePermissions(conn.id);
  const reopen = useMutation({
    mutationFn: () => client.call('connections.reopen', { id: conn.id }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: keys.connections(), exact: true }),
  });
  // Reopening is an operator's act; a viewer is told who can.
  const mayReopen = perm?.role === 'operator' || perm?.role === 'admin';
  return (
    <div className="stale-note data-lost" role="alert" aria-label={`${conn.name} lost its data`}>
      <strong>{conn.name}</strong> — the backend lost its data
      {conn.error !== null && <span className="muted"> ({conn.error.message})</span>}. Leases it held before
      are not shown as current; the fleet is read again when the connection reopens.{' '}
      {mayReopen ? (
        <button type="button" disabled={reopen.isPending} onClick={() => reopen.mutate()}>
          {reopen.isPending ? 'Reopening…' : 'Reopen connection'}
        </button>
      ) : (
        <span className="muted">An operator of this connection can reopen it.</span>
      )}
      {reopen.error !== null && <ErrorNotice error={reopen.error} title="The connection was not reopened" />}
    </div>
  );
}

/** A link naming a connection this console does not have: said as such, never "0 leases". */
export function UnknownConnection({ id }: { id: string }) {
  return (
    <div className="notice unknown-connection" role="alert">
      <h2>Unknown connection</h2>
      <p>
        This console has no connection with the id <code className="mono">{id}</code>: the link is from
        another console, or the connection was removed.
      </p>
      <button type="button" onClick={() => navigate(HOME)}>
        Show all connections
      </button>
    </div>
  );
}

/** "loading 30,000 of ~100,000 leases…", "12 of 100,000 leases shown", "100,000 leases": never a part as the whole. */
export function totalText(summary: Summary, filtered: boolean, pending: boolean): string {
  const n = (x: number) => x.toLocaleString();
  if (summary.loading !== null) {
    const { read, estimate } = summary.loading;
    return estimate === null || estimate < read
      ? `loading: ${n(read)} leases read so far… · so far:`
      : `loading ${n(read)} of ~${n(estimate)} leases… · so far:`;
  }
  if (summary.pending && summary.fleet === 0) return 'counting… · whole fleet:';
  if (filtered) {
    return pending || summary.pending
      ? `… of ${n(summary.fleet)} leases shown (updating) · whole fleet:`
      : `${n(summary.shown)} of ${n(summary.fleet)} leases shown · whole fleet:`;
  }
  return `${n(summary.fleet)} leases · whole fleet:`;
}

/** The whole fleet by status: one chip each, clicked to filter. While loading, each is a lower bound ("≥"). */
export function CountChips({
  counts,
  loading,
  selected,
  onToggle,
}: {
  counts: StatusCounts;
  loading: boolean;
  selected: ReadonlySet<LeaseStatus>;
  onToggle: (s: LeaseStatus) => void;
}) {
  return (
    <>
      {LEASE_STATUSES.map((s) => (
        <button
          key={s}
          type="button"
          className={`count-chip status-${s}${loading ? ' loading' : ''}`}
          aria-pressed={selected.has(s)}
          onClick={() => onToggle(s)}
          title={
            loading ? `At least ${counts[s].toLocaleString()}: the fleet is still being read` : undefined
          }
        >
          <span className="count-label">{s}</span>{' '}
          <span className="count-num">
            {loading ? '≥\u202f' : ''}
            {counts[s].toLocaleString()}
          </span>
        </button>
      ))}
    </>
  );
}
