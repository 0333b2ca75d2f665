import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import type { ConnectionInfo, LeaseRow } from '../../../src/console/api.ts';
import { leaseStatus } from '../../../src/console/status.ts';
import { visible } from '../../../src/console/text.ts';
import { auditQuery } from '../../api/queries.ts';
import { useServices } from '../../app/context.tsx';
import type { Freshness } from '../../app/freshness.ts';
import { useInfo, usePermissions } from '../../app/hooks.ts';
import { EnvBadge, ErrorNotice, StatusBadge } from '../../app/ui.tsx';
import { formatAgo, formatBytes, formatDuration, formatExpiresIn, formatTime } from '../../lib/format.ts';
import { ForceReleaseDialog } from '../force-release/ForceReleaseDialog.tsx';
import { CheckpointViewer } from './CheckpointViewer.tsx';

export interface DetailPaneProps {
  connection: ConnectionInfo;
  /** Latest row from the fleet model; null when the lease was pruned. */
  row: LeaseRow | null;
  /** Re-render marker for pushed updates. */
  rev: number;
  localNow: number;
  /** The connection's freshness: while stale the clock stops at its last confirmed time and force release is off. */
  freshness?: Freshness | undefined;
  onClose: () => void;
}

export function DetailPane({ connection, row, localNow, freshness, onClose }: DetailPaneProps) {
  const info = useInfo().data;
  const [confirming, setConfirming] = useState<LeaseRow | null>(null);
  const stale = freshness?.stale === true;
  const serverNow = stale && freshness?.asOf != null ? freshness.asOf : localNow + connection.clockOffsetMs;
  const perm = usePermissions(connection.id);
  // The server's answer decides (role, read-only); before it arrives, nothing is offered.
  const writable = perm?.forceRelease.allowed === true && !connection.readOnly && info?.readOnly === false;
  const refusal = perm?.forceRelease.allowed === false ? perm.forceRelease.reason : null;

  return (
    <aside className="detail" aria-label="Lease details">
      <header className="detail-head">
        <h2>
          <span className="muted">Lease</span> <span className="mono">{row?.workId ?? '—'}</span>
        </h2>
        <button type="button" className="icon" aria-label="Close details" onClick={onClose}>
          ✕
        </button>
      </header>
      {row === null ? (
        <p className="empty">This lease is no longer in the fleet (it was pruned).</p>
      ) : (
        <>
          <dl className="fields">
            <dt>Connection</dt>
            <dd>
              {connection.name} <EnvBadge env={connection.environment} />
              {connection.readOnly && <span className="ro-tag">read-only</span>}
            </dd>
            <dt>Status</dt>
            <dd>
              <StatusBadge status={leaseStatus(row, serverNow, connection.thresholds)} />
            </dd>
            <dt>Work ID</dt>
            <dd className="mono">{visible(row.workId)}</dd>
            <dt>Holder</dt>
            <dd className="mono">{visible(row.holderId)}</dd>
            <dt>Fencing token</dt>
            <dd className="mono">{row.fencingToken}</dd>
            <dt>Step</dt>
            <dd className="mono">{row.stepId ?? '—'}</dd>
            <dt>Expires</dt>
            <dd>
              {formatTime(row.expiresAt)}{' '}
              {row.ended === null && (
                <span className="muted">({formatExpiresIn(row.expiresAt, serverNow)})</span>
              )}
            </dd>
            <dt>TTL</dt>
            <dd>{formatDuration(row.ttlMs)}</dd>
            <dt>Acquired</dt>
            <dd>
              {formatTime(row.acquiredAt)}{' '}
              <span className="muted">({formatAgo(serverNow - row.acquiredAt)})</span>
            </dd>
            <dt>Last heartbeat</dt>
            <dd>
              {formatTime(row.renewedAt)}{' '}
              {row.renewedAt !== null && (
                <span className="muted">({formatAgo(serverNow - row.renewedAt)})</span>
              )}
            </dd>
            <dt>Last checkpoint</dt>
            <dd>
              {formatTime(row.checkpointedAt)}{' '}
              {row.checkpointedAt !== null && (
                <span className="muted">({formatAgo(serverNow - row.checkpointedAt)})</span>
              )}
            </dd>
            <dt>Checkpoint size</dt>
            <dd>{formatBytes(row.checkpointSize)}</dd>
            <dt>Released</dt>
            <dd>{formatTime(row.releasedAt)}</dd>
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
            {writable && row.ended !== 'force-released' && (
              <button
                type="button"
                className="danger"
                disabled={stale}
                aria-describedby={stale ? 'force-release-off' : undefined}
                onClick={() => setConfirming(row)}
              >
                Force release
              </button>
            )}
            {writable && stale && (
              <p className="muted" id="force-release-off">
                Force release is off: this view is not current ({freshness?.reason ?? 'stale'}), so the token
                and status shown may be out of date.
              </p>
            )}
            {!writable && (
              <p className="muted">
                {connection.readOnly
                  ? 'This connection is read-only: force release is not offered.'
                  : info?.readOnly !== false
                    ? 'The console is read-only: force release is not offered.'
                    : `Force release is not offered: ${refusal ?? 'checking your permissions…'}`}
              </p>
            )}
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
        <ForceReleaseDialog connection={connection} row={confirming} onClose={() => setConfirming(null)} />
      )}
    </aside>
  );
}

function LeaseAudit({ connectionId, workId }: { connectionId: string; workId: string }) {
  const { client } = useServices();
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
            {formatTime(e.at)}
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
