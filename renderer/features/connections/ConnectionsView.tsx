import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useId, useMemo, useState } from 'react';
import type { ConnectionInfo } from '../../../src/console/common/index.ts';
import { DEFAULT_THRESHOLDS } from '../../../src/console/common/index.ts';
import { keys } from '../../api/queries.ts';
import { useServices } from '../../app/context.tsx';
import { ageOf, freshnessText, useFreshness } from '../../app/freshness.ts';
import { useConnections, useInfo, usePermissions, useSession } from '../../app/hooks.ts';
import { EnvBadge, ErrorNotice } from '../../app/ui.tsx';
import { useNow } from '../../lib/clock.ts';
import { formatSeconds } from '../../lib/format.ts';
import { heartbeatCheckText } from '../detail/DetailPane.tsx';

export function ConnectionsView() {
  const connections = useConnections();
  const info = useInfo().data;
  const add = useSession().data?.addConnection;
  const editable = info?.profilesEditable === true && add?.allowed === true;
  const [editing, setEditing] = useState<ConnectionInfo | 'new' | null>(null);

  return (
    <div className="page">
      <div className="page-head">
        <h2>Connections</h2>
        {editable && editing === null && (
          <button type="button" className="primary" onClick={() => setEditing('new')}>
            Add connection
          </button>
        )}
      </div>
      {info !== undefined && !info.profilesEditable && (
        <p className="notice">
          Connection profiles are fixed by the server (for example <code>worklease serve --connect …</code>);
          they are shown read-only here.
        </p>
      )}
      {info?.profilesEditable === true && add?.allowed === false && <p className="notice">{add.reason}</p>}
      {editing !== null && (
        <ConnectionForm initial={editing === 'new' ? null : editing} onDone={() => setEditing(null)} />
      )}
      {connections.error !== null && (
        <ErrorNotice error={connections.error} title="Cannot list connections" />
      )}
      {connections.data?.length === 0 && (
        <p className="empty">No connection yet.{editable ? ' Add one to watch a fleet.' : ''}</p>
      )}
      <div className="conn-list">
        {connections.data?.map((c) => (
          <ConnectionCard
            key={c.id}
            conn={c}
            editable={info?.profilesEditable === true}
            onEdit={() => setEditing(c)}
          />
        ))}
      </div>
    </div>
  );
}

function ConnectionCard({
  conn,
  editable,
  onEdit,
}: {
  conn: ConnectionInfo;
  editable: boolean;
  onEdit: () => void;
}) {
  const { client, sync } = useServices();
  const perm = usePermissions(conn.id);
  // Whether this caller may edit this connection, and turn its read-only off (a shared console never does).
  const mayEdit = editable && perm?.edit.allowed === true;
  const roLocked = conn.readOnly && perm?.makeWritable.allowed !== true;
  const roReason = !mayEdit
    ? perm?.edit.allowed === false
      ? perm.edit.reason
      : undefined
    : roLocked && perm?.makeWritable.allowed === false
      ? perm.makeWritable.reason
      : undefined;
  const queryClient = useQueryClient();
  const now = useNow();
  const fresh = useFreshness(useMemo(() => [conn], [conn])).get(conn.id);
  const check = sync.heartbeats.get(conn.id) ?? conn.heartbeats;
  const [confirmRemove, setConfirmRemove] = useState(false);
  const update = useMutation({
    mutationFn: (readOnly: boolean) =>
      client.call('connections.update', { id: conn.id, changes: { readOnly } }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: keys.connections(), exact: true }),
  });
  const remove = useMutation({
    mutationFn: () => client.call('connections.remove', { id: conn.id }),
    onSuccess: () => {
      queryClient.removeQueries({ queryKey: keys.connection(conn.id) });
      return queryClient.invalidateQueries({ queryKey: keys.connections(), exact: true });
    },
  });
  const roId = useId();

  return (
    <article className={`conn-card state-${conn.state}`} aria-label={conn.name}>
      <div className="conn-title">
        <span className={`dot dot-${conn.state}`} aria-hidden="true" />
        <h3>{conn.name}</h3>
        <EnvBadge env={conn.environment} />
        <span className="kind">{conn.kind}</span>
        {conn.readOnly && <span className="ro-tag">read-only</span>}
      </div>
      <div className="mono url" title={conn.url}>
        {conn.url}
      </div>
      <div className="conn-meta">
        <span className="freshness">
          {fresh === undefined ? conn.state : freshnessText(conn, fresh, now)}
        </span>
        <span className="muted">
          stuck after {formatSeconds(conn.thresholds.stuckAfterMs)} · expiring under{' '}
          {Math.round(conn.thresholds.expiringFraction * 100)} % of ttl · clock offset{' '}
          {Math.round(conn.clockOffsetMs)} ms
        </span>
        {conn.callsPerSecond !== undefined && (
          <span
            className="muted"
            title="The console's own calls to this backend, averaged over the last 10 s"
          >
            console load {conn.callsPerSecond.toLocaleString(undefined, { maximumFractionDigits: 1 })} calls/s
          </span>
        )}
        {check !== undefined && (
          <span
            className="muted"
            data-testid="heartbeat-check"
            title="The change feed carries ownership changes only: the console re-reads the fleet this often to see renews and checkpoints, and shows a lease expired only once such a check confirms it"
          >
            heartbeats checked {check.asOf === null ? 'not yet' : ageOf(check.asOf, conn, now)} ·{' '}
            {heartbeatCheckText(check)}
          </span>
        )}
      </div>
      {conn.error !== null && <ErrorNotice error={conn.error} url={conn.url} context="connection" />}
      <div className="conn-actions">
        <label htmlFor={roId} className="toggle">
          <input
            id={roId}
            type="checkbox"
            checked={conn.readOnly}
            disabled={!mayEdit || roLocked || update.isPending}
            title={roReason}
            onChange={(e) => update.mutate(e.target.checked)}
          />
          Read-only
        </label>
        {editable && !mayEdit && perm?.edit.allowed === false && (
          <span className="muted">{perm.edit.reason}</span>
        )}
        {mayEdit && (
          <>
            <button type="button" onClick={onEdit} aria-label={`Edit ${conn.name}`}>
              Edit
            </button>
            {confirmRemove ? (
              <>
                <span>Remove this profile?</span>
                <button type="button" className="danger" onClick={() => remove.mutate()}>
                  Confirm remove
                </button>
                <button type="button" onClick={() => setConfirmRemove(false)}>
                  Keep
                </button>
              </>
            ) : (
              <button type="button" onClick={() => setConfirmRemove(true)} aria-label={`Remove ${conn.name}`}>
                Remove
              </button>
            )}
          </>
        )}
      </div>
      {update.error !== null && <ErrorNotice error={update.error} />}
      {remove.error !== null && <ErrorNotice error={remove.error} />}
    </article>
  );
}

function ConnectionForm({ initial, onDone }: { initial: ConnectionInfo | null; onDone: () => void }) {
  const { client } = useServices();
  const queryClient = useQueryClient();
  const [name, setName] = useState(initial?.name ?? '');
  const [url, setUrl] = useState('');
  const [environment, setEnvironment] = useState(initial?.environment ?? '');
  const [readOnly, setReadOnly] = useState(initial?.readOnly ?? false);
  const [stuckS, setStuckS] = useState(
    String((initial?.thresholds.stuckAfterMs ?? DEFAULT_THRESHOLDS.stuckAfterMs) / 1000),
  );
  const [expPct, setExpPct] = useState(
    String(Math.round((initial?.thresholds.expiringFraction ?? DEFAULT_THRESHOLDS.expiringFraction) * 100)),
  );
  const test = useMutation({ mutationFn: (u: string) => client.call('connections.test', { url: u }) });
  const save = useMutation({
    mutationFn: async () => {
      const thresholds = {
        stuckAfterMs: Math.round(Number(stuckS) * 1000),
        expiringFraction: Number(expPct) / 100,
      };
      if (initial === null) {
        return client.call('connections.add', { name, url, readOnly, environment, thresholds });
      }
      return client.call('connections.update', {
        id: initial.id,
        changes: { name, readOnly, environment, thresholds, ...(url !== '' ? { url } : {}) },
      });
    },
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: keys.connections(), exact: true });
      onDone();
    },
  });
  const ids = useId();
  const canSave = name.trim() !== '' && (initial !== null || url.trim() !== '') && !save.isPending;

  return (
    <form
      className="conn-form"
      aria-label={initial === null ? 'New connection' : `Edit ${initial.name}`}
      onSubmit={(e) => {
        e.preventDefault();
        if (canSave) save.mutate();
      }}
    >
      <h3>{initial === null ? 'New connection' : `Edit ${initial.name}`}</h3>
      <div className="form-grid">
        <label htmlFor={`${ids}-name`}>Name</label>
        <input
          id={`${ids}-name`}
          value={name}
          onChange={(e) => setName(e.target.value)}
          required
          maxLength={100}
        />
        <label htmlFor={`${ids}-url`}>Backend URL</label>
        <input
          id={`${ids}-url`}
          value={url}
          onChange={(e) => setUrl(e.target.value)}
          placeholder={
            initial === null
              ? 'postgres://user@host:5432/db or redis://host:6379'
              : `${initial.url} (leave empty to keep)`
          }
          spellCheck={false}
          autoComplete="off"
        />
        <label htmlFor={`${ids}-env`}>Environment</label>
        <input
          id={`${ids}-env`}
          value={environment}
          onChange={(e) => setEnvironment(e.target.value)}
          placeholder="prod, staging, demo…"
          maxLength={40}
        />
        <label htmlFor={`${ids}-stuck`}>Stuck after (seconds)</label>
        <input
          id={`${ids}-stuck`}
          type="number"
          min={1}
          value={stuckS}
          onChange={(e) => setStuckS(e.target.value)}
        />
        <label htmlFor={`${ids}-exp`}>Expiring under (% of ttl)</label>
        <input
          id={`${ids}-exp`}
          type="number"
          min={1}
          max={99}
          value={expPct}
          onChange={(e) => setExpPct(e.target.value)}
        />
        <span />
        <label className="toggle">
          <input type="checkbox" checked={readOnly} onChange={(e) => setReadOnly(e.target.checked)} />
          Read-only (never offer force release)
        </label>
      </div>
      {test.data !== undefined && (
        <p className="ok" role="status">
          Reached {test.data.kind} in {Math.round(test.data.latencyMs)} ms (server time{' '}
          {new Date(test.data.serverTime).toISOString()}).
        </p>
      )}
      {test.error !== null && <ErrorNotice error={test.error} url={url} title="Test failed" context="test" />}
      {save.error !== null && <ErrorNotice error={save.error} url={url} title="Not saved" />}
      <div className="dialog-actions">
        <button type="button" onClick={onDone}>
          Cancel
        </button>
        <button type="button" disabled={url.trim() === '' || test.isPending} onClick={() => test.mutate(url)}>
          {test.isPending ? 'Testing…' : 'Test connection'}
        </button>
        <button type="submit" className="primary" disabled={!canSave}>
          Save
        </button>
      </div>
    </form>
  );
}
