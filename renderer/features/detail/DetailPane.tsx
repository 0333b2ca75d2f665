import { useQuery } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import type {
  ConnectionInfo,
  HeartbeatCheckWire,
  LeaseRow,
  LeaseStatus,
} from '../../../src/console/common/index.ts';
import { visible } from '../../../src/console/common/index.ts';
import { auditQuery } from '../../api/queries.ts';
import { CopyButton } from '../../app/CopyButton.tsx';
import { useServices } from '../../app/context.tsx';
import { backendNow, type Freshness } from '../../app/freshness.ts';
import { useInfo, usePermissions } from '../../app/hooks.ts';
import { Time, useTimeMode } from '../../app/Time.tsx';
import { showToast } from '../../app/toast.tsx';
import { EnvBadge, ErrorNotice, StatusBadge } from '../../app/ui.tsx';
import { formatBytes, formatDuration, formatTime } from '../../lib/format.ts';
import { isTypingTarget } from '../../lib/keys.ts';
import { ForceReleaseDialog } from '../force-release/ForceReleaseDialog.tsx';
import { escalationReason } from '../request-release/deadline.ts';
import { ReleaseRequestNote } from '../request-release/ReleaseRequestNote.tsx';
import { RequestReleaseDialog } from '../request-release/RequestReleaseDialog.tsx';
import { CheckpointViewer } from './CheckpointViewer.tsx';

export interface DetailPaneProps {
  connection: ConnectionInfo;
  /**
   * The lease as its connection's index holds it (kept current by a view watch, see
   * LeaseDetail.tsx); null when it is not there, and `missing` says why in words.
   */
  row: LeaseRow | null;
  /** Its status as the server judged it (with the counts and the table's rows). */
  status: LeaseStatus | null;
  /** With no row: why ("No lease … exists", "it left the fleet", "still reading the fleet…"). */
  missing?: string | undefined;
  /** The work id asked for (shown while there is no row). */
  workId: string;
  localNow: number;
  /** The connection's freshness: while stale the clock stops at its last confirmed time and force release is off. */
  freshness?: Freshness | undefined;
  /** When the connection's heartbeats were last checked: an expiry past it is "awaiting check", not expired. */
  heartbeatsAsOf?: number | null | undefined;
  onClose: () => void;
  /** Puts focus back on this lease's row in the table (after the dialog closes). */
  onReturnFocus?: (() => void) | undefined;
}

/** "every 2 s · the last check read 1,000 leases in 12 ms": how current heartbeats can be. */
export function heartbeatCheckText(check: HeartbeatCheckWire): string {
  const every = `every ${formatDuration(check.intervalMs)}`;
  if (check.lastMs === null) return every;
  const n = check.lastRows;
  return `${every} · the last check read ${n.toLocaleString()} ${n === 1 ? 'lease' : 'leases'} in ${formatDuration(check.lastMs)}`;
}

export function DetailPane({
  connection,
  row,
  localNow,
  freshness,
  status,
  missing,
  workId,
  heartbeatsAsOf = null,
  onClose,
  onReturnFocus,
}: DetailPaneProps) {
  const info = useInfo().data;
  const { sync } = useServices();
  const check = sync.heartbeats.get(connection.id) ?? connection.heartbeats;
  const [confirming, setConfirming] = useState<{ row: LeaseRow; reason?: string } | null>(null);
  const [asking, setAsking] = useState<LeaseRow | null>(null);
  const [fNote, setFNote] = useState<string | null>(null);
  const zone = useTimeMode() === 'utc' ? 'utc' : 'local';
  const stale = freshness?.stale === true;
  // The connection's one clock (app/freshness.ts): running while live, stopped at "as of" while stale.
  const serverNow = stale && freshness?.asOf != null ? freshness.asOf : backendNow(connection, localNow);
  const perm = usePermissions(connection.id);
  // The server's answer decides (role, read-only); before it arrives, nothing is offered.
  const writable = perm?.forceRelease.allowed === true && !connection.readOnly && info?.readOnly === false;
  const refusal = perm?.forceRelease.allowed === false ? perm.forceRelease.reason : null;
  // Why the action is not offered on this lease, when it is not (the button says it, so does `f`).
  const ended =
    row === null
      ? 'this lease is no longer in the fleet.'
      : row.ended === 'force-released'
        ? 'this lease was already force-released.'
        : row.ended !== null
          ? 'this lease is released: no holder to fence.'
          : null;
  const notOffered = !writable
    ? connection.readOnly
      ? 'this connection is read-only.'
      : info?.readOnly !== false
        ? 'the console is read-only.'
        : (refusal ?? 'checking your permissions…')
    : stale
      ? `this view is not current (${freshness?.reason ?? 'stale'}).`
      : ended;
  // Request release asks a live holder: the session's permission (role, read-only) decides first.
  const requestNotOffered =
    perm === undefined || info === undefined
      ? 'checking your permissions…'
      : !perm.requestRelease.allowed
        ? `${perm.requestRelease.reason}.`
        : info.readOnly
          ? 'the console is read-only.'
          : stale
            ? `this view is not current (${freshness?.reason ?? 'stale'}).`
            : row === null
              ? 'this lease is no longer in the fleet.'
              : row.ended !== null || status === 'expired'
                ? 'this lease is not live: no holder to ask.'
                : row.releaseRequest != null
                  ? 'the holder was already asked (see the request above).'
                  : null;
  const rowRef = useRef(row);
  rowRef.current = row;
  const notOfferedRef = useRef(notOffered);
  notOfferedRef.current = notOffered;
  const requestNotOfferedRef = useRef(requestNotOffered);
  requestNotOfferedRef.current = requestNotOffered;
  const paneRef = useRef<HTMLElement>(null);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.key !== 'f' && e.key !== 'r') || e.ctrlKey || e.metaKey || e.altKey) return;
      if (document.querySelector('dialog[open]') !== null) return;
      if (isTypingTarget(e.target)) return;
      // The fleet stays mounted behind other views: its keys are not theirs.
      if (paneRef.current?.closest('[hidden]') != null) return;
      e.preventDefault();
      const current = rowRef.current;
      if (e.key === 'r') {
        if (requestNotOfferedRef.current === null && current !== null) {
          setFNote(null);
          setAsking(current);
        } else {
          setFNote(`Request release is not offered: ${requestNotOfferedRef.current ?? 'no lease.'}`);
        }
      } else if (notOfferedRef.current === null && current !== null) {
        setFNote(null);
        setConfirming({ row: current });
      } else {
        setFNote(`Force release is not offered: ${notOfferedRef.current ?? 'no lease.'}`);
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
  const closeDialog = (released: LeaseRow | null) => {
    setConfirming(null);
    if (released !== null) {
      showToast({
        text: `Force-released ${visible(released.workId)}: new fencing token ${released.fencingToken}.`,
        link: {
          label: 'Audit entry',
          route: { view: 'audit', connectionId: connection.id, workId: null, query: { q: released.workId } },
        },
      });
    }
    onReturnFocus?.();
  };
  const closeRequest = (requested: LeaseRow | null) => {
    setAsking(null);
    if (requested !== null) {
      showToast({
        text: `Release requested for ${visible(requested.workId)}: ${visible(requested.holderId)} is asked to hand over on its next renew or checkpoint.`,
        link: {
          label: 'Audit entry',
          route: { view: 'audit', connectionId: connection.id, workId: null, query: { q: requested.workId } },
        },
      });
    }
    onReturnFocus?.();
  };

  return (
    <aside className="detail" aria-label="Lease details" ref={paneRef}>
      <header className="detail-head">
        <h2>
          <span className="muted">Lease</span> <span className="mono">{visible(row?.workId ?? workId)}</span>
        </h2>
        <button type="button" className="icon" aria-label="Close details" onClick={onClose}>
          ✕
        </button>
      </header>
      {row === null ? (
        <p className="empty" role="status">
          {missing ?? 'This lease is not in the fleet.'}
        </p>
      ) : (
        <>
          {row.releaseRequest != null && (
            <ReleaseRequestNote
              request={row.releaseRequest}
              serverNow={serverNow}
              forceOff={notOffered}
              onEscalate={(ageMs) => {
                const request = row.releaseRequest;
                if (request != null) setConfirming({ row, reason: escalationReason(request, ageMs) });
              }}
            />
          )}
          <dl className="fields">
            <dt>Connection</dt>
            <dd>
              {connection.name} <EnvBadge env={connection.environment} />
              {connection.readOnly && <span className="ro-tag">read-only</span>}
            </dd>
            <dt>Status</dt>
            <dd>{status === null ? '—' : <StatusBadge status={status} />}</dd>
            <dt>Work ID</dt>
            <dd className="mono">
              {visible(row.workId)} <CopyButton text={row.workId} what="work id" />
            </dd>
            <dt>Holder</dt>
            <dd className="mono">
              {visible(row.holderId)} <CopyButton text={row.holderId} what="holder" />
            </dd>
            <dt>Fencing token</dt>
            <dd className="mono">
              {row.fencingToken} <CopyButton text={row.fencingToken} what="token" />
            </dd>
            <dt>Step</dt>
            <dd className="mono">{row.stepId ?? '—'}</dd>
            <dt>Expires</dt>
            <dd>
              {row.ended === null ? (
                <Time at={row.expiresAt} serverNow={serverNow} checkedAt={heartbeatsAsOf} expiry />
              ) : (
                <>
                  {formatTime(row.expiresAt, zone)} <span className="muted">(ended)</span>
                </>
              )}
            </dd>
            <dt>TTL</dt>
            <dd>{formatDuration(row.ttlMs)}</dd>
            <dt>Acquired</dt>
            <dd>
              <Time at={row.acquiredAt} serverNow={serverNow} />
            </dd>
            <dt>Last heartbeat</dt>
            <dd>{row.renewedAt === null ? '—' : <Time at={row.renewedAt} serverNow={serverNow} />}</dd>
            <dt>Heartbeats checked</dt>
            <dd data-testid="heartbeats-checked">
              {/* A freshness value: its age counts on the page's one clock (app/freshness.ts), also while
                  the view is frozen, so it agrees with the stale note above the table. */}
              {heartbeatsAsOf === null ? (
                'not yet'
              ) : (
                <Time at={heartbeatsAsOf} serverNow={backendNow(connection, localNow)} />
              )}
              {stale && <span className="muted"> · not current</span>}
              {check !== undefined && <span className="muted"> · {heartbeatCheckText(check)}</span>}
            </dd>
            <dt>Last checkpoint</dt>
            <dd>
              {row.checkpointedAt === null ? '—' : <Time at={row.checkpointedAt} serverNow={serverNow} />}
            </dd>
            <dt>Checkpoint size</dt>
            <dd>{formatBytes(row.checkpointSize)}</dd>
            <dt>Released</dt>
            <dd>{row.releasedAt === null ? '—' : <Time at={row.releasedAt} serverNow={serverNow} />}</dd>
            <dt>Ended</dt>
            <dd>{row.ended ?? '—'}</dd>
            <dt>Clean handoff</dt>
            <dd>{row.cleanHandoff ? 'yes' : 'no'}</dd>
            <dt>Predecessor</dt>
            <dd>{row.predecessorEnd}</dd>
            <dt>Version</dt>
            <dd className="mono">{row.version}</dd>
          </dl>
          <div className="detail-actions">
            {writable && (
              <button
                type="button"
                className="danger"
                disabled={notOffered !== null}
                aria-describedby={notOffered !== null ? 'force-release-off' : undefined}
                aria-keyshortcuts="f"
                onClick={() => setConfirming({ row })}
              >
                Force release
              </button>
            )}{' '}
            <button
              type="button"
              disabled={requestNotOffered !== null}
              aria-describedby={requestNotOffered !== null ? 'request-release-off' : undefined}
              aria-keyshortcuts="r"
              onClick={() => setAsking(row)}
            >
              Request release
            </button>
            {notOffered !== null && (
              <p className="muted" id="force-release-off">
                {writable && stale
                  ? `Force release is off: this view is not current (${freshness?.reason ?? 'stale'}), so the token and status shown may be out of date.`
                  : writable
                    ? `Force release is not offered: ${notOffered}`
                    : connection.readOnly
                      ? 'This connection is read-only: force release is not offered.'
                      : info?.readOnly !== false
                        ? 'The console is read-only: force release is not offered.'
                        : `Force release is not offered: ${refusal ?? 'checking your permissions…'}`}
              </p>
            )}
            {requestNotOffered !== null && (
              <p className="muted" id="request-release-off">
                Request release is not offered: {requestNotOffered}
              </p>
            )}
            <p className="f-note" role="status">
              {fNote}
            </p>
            {perm !== undefined && <p className="muted">Your role here: {perm.role}</p>}
          </div>
          <section aria-label="Checkpoint">
            <h3>Checkpoint</h3>
            <CheckpointViewer connection={connection} row={row} />
          </section>
          <section aria-label="Audit history">
            <h3>Audit history</h3>
            <LeaseAudit connectionId={connection.id} workId={row.workId} />
          </section>
        </>
      )}
      {confirming !== null && (
        <ForceReleaseDialog
          connection={connection}
          row={confirming.row}
          initialReason={confirming.reason}
          heartbeatsAsOf={heartbeatsAsOf}
          onClose={() => closeDialog(null)}
          onReleased={(released) => closeDialog(released)}
        />
      )}
      {asking !== null && (
        <RequestReleaseDialog
          connection={connection}
          row={asking}
          serverNow={serverNow}
          heartbeatsAsOf={heartbeatsAsOf}
          onClose={() => closeRequest(null)}
          onRequested={(requested) => closeRequest(requested)}
        />
      )}
    </aside>
  );
}

function LeaseAudit({ connectionId, workId }: { connectionId: string; workId: string }) {
  const { client } = useServices();
  const zone = useTimeMode() === 'utc' ? 'utc' : 'local';
  const q = useQuery(auditQuery(client, connectionId, workId));
  if (q.error !== null) return <ErrorNotice error={q.error} />;
  if (q.data === undefined) return <p className="muted">Loading…</p>;
  if (q.data.length === 0) return <p className="muted">No operator action on this lease.</p>;
  return (
    <ul className="audit-mini">
      {q.data.map((e) => (
        <li key={e.id}>
          <div>
            <strong>{e.action}</strong> by <span className="mono">{visible(e.operator)}</span> at{' '}
            {formatTime(e.at, zone)}
          </div>
          <div className="muted">
            holder <span className="mono">{visible(e.oldHolderId)}</span>, token {e.oldToken} → {e.newToken}
          </div>
          <div>Reason: {visible(e.reason, '\n')}</div>
        </li>
      ))}
    </ul>
  );
}
