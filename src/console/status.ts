/**
 * Derived lease status, computed against the backend's clock. Pure: shared by
 * the console service, the CLI and the renderer (which re-derives as time
 * passes, so countdowns and expiry need no event).
 */
import type { LeaseRow, LeaseStatus, Thresholds } from './api.ts';
import { parseMemberWorkId } from './groups.ts';

/**
 * The backend time a connection's statuses are judged at: its backend clock now (or, while the
 * connection is not current, its last confirmed time), but never later than `heartbeatsAsOf`, the
 * start of the console's last complete heartbeat check. Renews and checkpoints reach the console
 * only through those checks (the change feed carries ownership changes), so past that moment a
 * row's `expiresAt` may already have moved: a lease is shown expired only once a check that began
 * after its `expiresAt` still found it run out. Null/undefined: no check yet (no cap).
 */
export function judgedAt(serverNow: number, heartbeatsAsOf: number | null | undefined): number {
  return heartbeatsAsOf === null || heartbeatsAsOf === undefined
    ? serverNow
    : Math.min(serverNow, heartbeatsAsOf);
}

/**
 * - `force-released`: an operator ended it (until the work item is acquired again).
 * - `released`: its holder released it cleanly.
 * - `expired`: it ran out and nobody re-acquired it — orphaned work.
 * - `stuck`: live, renewed within the stuck window, but its checkpoint has not
 *   moved for `stuckAfterMs` (the holder heartbeats without making progress).
 *   Never a consumer group's membership lease (`group:<group>:member:<holderId>`,
 *   src/lease/group.ts): it stands for a member, not for work, and its holder only
 *   ever renews it, so by this rule every healthy member would read stuck.
 * - `expiring`: live with less than `expiringFraction` of its ttl left.
 * - `live`: otherwise.
 *
 * @param serverNow the backend time to judge at, ms: {@link judgedAt} of the backend's clock (local
 *   clock + measured offset) and the last heartbeat check.
 */
export function leaseStatus(
  row: Pick<
    LeaseRow,
    'workId' | 'expiresAt' | 'ttlMs' | 'ended' | 'acquiredAt' | 'renewedAt' | 'checkpointedAt'
  >,
  serverNow: number,
  thresholds: Thresholds,
): LeaseStatus {
  if (row.ended === 'force-released') return 'force-released';
  if (row.ended === 'released') return 'released';
  if (row.expiresAt <= serverNow) return 'expired';
  const progressAt = Math.max(row.checkpointedAt ?? 0, row.acquiredAt);
  const heartbeatAt = Math.max(row.renewedAt ?? 0, row.checkpointedAt ?? 0, row.acquiredAt);
  if (serverNow - progressAt >= thresholds.stuckAfterMs && heartbeatAt > progressAt && !isMembership(row))
    return 'stuck';
  if (row.expiresAt - serverNow < row.ttlMs * thresholds.expiringFraction) return 'expiring';
  return 'live';
}

/** The moment a row's status will change by time alone, or null if it never will. */
export function nextStatusChangeAt(
  row: Pick<LeaseRow, 'workId' | 'expiresAt' | 'ttlMs' | 'ended' | 'acquiredAt' | 'checkpointedAt'>,
  serverNow: number,
  thresholds: Thresholds,
): number | null {
  if (row.ended !== null || row.expiresAt <= serverNow) return null;
  const candidates = [row.expiresAt, row.expiresAt - row.ttlMs * thresholds.expiringFraction];
  if (!isMembership(row))
    candidates.push(Math.max(row.checkpointedAt ?? 0, row.acquiredAt) + thresholds.stuckAfterMs);
  const future = candidates.filter((t) => t > serverNow);
  return future.length === 0 ? null : Math.min(...future);
}

/**
 * A consumer group's membership lease (src/lease/group.ts), which is never `stuck`. The prefix test
 * comes first: statuses are derived for every row on every render, the pattern only for group ids.
 */
function isMembership(row: Pick<LeaseRow, 'workId'>): boolean {
  return row.workId.startsWith('group:') && parseMemberWorkId(row.workId) !== null;
}
