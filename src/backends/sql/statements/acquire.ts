/**
 * acquire: `INSERT … ON CONFLICT (work_id) DO UPDATE … WHERE <in time, and expires_at <= now, or
 * else the held notice>`. One statement: atomic, and READ COMMITTED decides the DO UPDATE on the
 * latest committed version of the row (statements.ts, header).
 *
 *   - no row: inserts the token of the token rule (below) with no predecessor, predecessor
 *     'none', returns the token and expiry.
 *   - row whose lease ran out or ended (including a pruned row, a tombstone that kept
 *     its token): the DO UPDATE takes it over with the next token,
 *     keeps the checkpoint for the successor, records predecessor_end from
 *     `ended` ('released' / 'force-released', or 'expired' when it just ran out) and
 *     clean_handoff = (predecessor released). Returns the token and expiry.
 *   - live row (also the caller's own): the DO UPDATE's WHERE calls lease_held (migration 9),
 *     which sends a NOTICE (WL002) with the holder, token and expiry of the row version it locked
 *     (the latest) and answers false: nothing is written or returned → LEASE_HELD with those
 *     details. A NOTICE and not an error, since a held item is routine: nothing in the server's
 *     log, no rollback. A session whose client_min_messages is above NOTICE hears nothing: still
 *     LEASE_HELD, just without holder details. Before migration 9 a second branch read the row
 *     from the statement's snapshot; a first acquire, statements taking turns, ran at 0.867x the
 *     raw upsert at 1 in flight and 0.633x at 16 with it, 0.959x and 0.704x without.
 *   - past the caller's deadline ($5, epoch ms in the server's clock; NULL: none): the server
 *     raises WL003 (acquire_late, migration 12) before it writes anything, whichever branch it
 *     is in, so a call its caller already gave up on (a client timeout; the server was stalled
 *     or the statement waited for the row lock) never grants a lease that nobody holds. The
 *     driver reports it as the call's BACKEND_UNAVAILABLE timeout. The check reads
 *     clock_timestamp(), not the statement's start: in the DO UPDATE it runs after any wait for
 *     the row lock. What is left after it is the commit itself (a synchronous standby's wait):
 *     the driver's deadline is conservative by the offset's uncertainty (driver.ts, ServerClock).
 *
 *   - a held work item (admin.hold, migration 13): the WHERE calls lease_on_hold, which raises
 *     WL004 with the hold (at, operator, reason) as JSON in DETAIL → ON_HOLD; nothing is written.
 *     Checked before the expiry, so a held item refuses whether or not its lease is live.
 *   - history (migration 13): the statement is wrapped in a CTE that inserts the `acquired` history
 *     row (holder, new token, the size of the checkpoint the holder starts from) and copies the
 *     stored checkpoint into handoff_states (the console's diff; only when one exists). Taking over
 *     a lease that ran out without an end calls lease_expired from the WHERE, which inserts the
 *     `expired` row from the locked version of the row (the old holder and token; nothing else
 *     holds them after the update). The copy reads lease_states in the statement's snapshot.
 *
 * $1 work_id, $2 holder_id, $3 ttl_ms, $4 step_id, $5 deadline (epoch ms, server clock) or NULL.
 * Returns the token and expiry; no row (with the held NOTICE) when the lease is held.
 */
import type { LeaseFragments } from './fragments.ts';
import { MS, NOW, us } from './fragments.ts';

/**
 * `history` false gives the statement without the history rows and the handoff copy (the hold is
 * still checked): only `npm run bench:history` uses it, to measure what the history costs.
 */
export function acquireStatement(
  f: LeaseFragments,
  history = true,
): { name: string; text: string; hot: true } {
  const { s, L, S } = f;
  const expired = history
    ? `CASE WHEN l.ended IS NULL AND l.last_op <> 'pruned'
      THEN ${s}.lease_expired(l.work_id, l.holder_id, l.token, l.expires_at, l.state_size) ELSE true END`
    : 'true';
  const inTime = `$5::float8 IS NULL OR clock_timestamp() <= to_timestamp($5::float8 / 1000)`;
  const late = `${s}.acquire_late($5::float8)`;
  return {
    name: history ? 'wl_acquire' : 'wl_acquire_no_history',
    hot: true,
    text: `
${history ? 'WITH a AS (\n' : ''}INSERT INTO ${L} AS l (work_id, holder_id, token, expires_at, ttl_ms, step_id, acquired_at,
    clean_handoff, predecessor_end, last_op, version, change_xid)
  SELECT $1, $2, ${us(NOW)}, ${NOW} + $3::integer ${MS}, $3::integer, $4, ${NOW}, true, 'none', 'acquired', 1,
    pg_current_xact_id()
  WHERE CASE WHEN ${inTime} THEN true ELSE ${late} END
  ON CONFLICT (work_id) DO UPDATE SET
    holder_id = EXCLUDED.holder_id,
    token = greatest(l.token + 1, EXCLUDED.token),
    expires_at = EXCLUDED.expires_at,
    ttl_ms = EXCLUDED.ttl_ms,
    step_id = EXCLUDED.step_id,
    acquired_at = EXCLUDED.acquired_at,
    renewed_at = NULL,
    released_at = NULL,
    clean_handoff = coalesce(l.ended = 'released', false),
    predecessor_end = coalesce(l.ended, 'expired'),
    ended = NULL,
    release_requested_at = NULL,
    release_requested_by = NULL,
    release_request_reason = NULL,
    wanted_until = NULL,
    last_op = 'acquired',
    version = l.version + 1,
    acquisitions = l.acquisitions + 1,
    change_xid = EXCLUDED.change_xid
  WHERE CASE WHEN NOT (${inTime}) THEN ${late}
    WHEN l.held_at IS NOT NULL THEN ${s}.lease_on_hold(l.held_at, l.held_by, l.hold_reason)
    WHEN l.expires_at <= EXCLUDED.acquired_at THEN ${expired}
    ELSE ${s}.lease_held(l.token, l.expires_at, l.holder_id) END
${history ? withHistory(s, S) : 'RETURNING l.token, l.expires_at'}`,
  };
}

/** The end of the statement that writes the `acquired` history row and the handoff copy. */
function withHistory(s: string, S: string): string {
  return `RETURNING l.work_id, l.holder_id, l.token, l.expires_at, l.acquired_at, l.state_size
),
h AS (
  INSERT INTO ${s}.history (work_id, at, kind, holder_id, token, checkpoint_bytes)
  SELECT a.work_id, a.acquired_at, 'acquired', a.holder_id, a.token, a.state_size FROM a
),
hs AS (
  INSERT INTO ${s}.handoff_states (work_id, token, state)
  SELECT a.work_id, a.token, st.state FROM a JOIN ${S} st ON st.work_id = a.work_id
  ON CONFLICT (work_id) DO UPDATE SET token = EXCLUDED.token, state = EXCLUDED.state
)
SELECT a.token, a.expires_at FROM a`;
}
