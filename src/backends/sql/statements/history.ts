/**
 * The statements of a work item's history and holds (docs/history.md, migration 13): hold,
 * unhold, history, handoffCheckpoint and the history's retention (run by prune). The history rows
 * of the lease calls are written by those calls' own statements (acquire.ts, release.ts,
 * statements.ts: forceRelease, requestRelease, prune).
 */
import type { LeaseFragments } from './fragments.ts';
import { INFO_COLUMNS, MS } from './fragments.ts';

export interface HistoryStatements {
  hold: { text: string };
  unhold: { text: string };
  history: { text: string };
  handoffCheckpoint: { text: string };
  pruneHistory: { text: string };
}

/**
 * hold / unhold: lock the row, update it (only when it is not held / held), write the audit row and
 * the history row, all from the same locked version (like requestRelease). $1 work_id, $2 operator,
 * $3 reason. Read as a text row by position: changed, then INFO_COLUMNS of the lease before the
 * call (cur), then INFO_COLUMNS after it (all NULL when nothing was written). No row: no lease.
 * The write bumps the version but not change_xid nor last_op: a hold is not an ownership change, so
 * it adds no change-feed entry (a reader of the feed would otherwise see the last handoff again,
 * with a new version: `watch` printed a second `released` line for it). Like a renew's, the new
 * version reaches readers with the row: get, list, and any later feed entry of the item.
 */
function holdStatement(f: LeaseFragments, on: boolean): { text: string } {
  const { s, L, info } = f;
  const set = on
    ? 'held_at = n.now, held_by = $2, hold_reason = $3'
    : 'held_at = NULL, held_by = NULL, hold_reason = NULL';
  const when = on ? 'cur.raw_held_at IS NULL' : 'cur.raw_held_at IS NOT NULL';
  return {
    text: `
WITH n AS MATERIALIZED (SELECT clock_timestamp() AS now),
cur AS (
  SELECT ${info()}, held_at AS raw_held_at FROM ${L} WHERE work_id = $1 AND last_op <> 'pruned' FOR UPDATE
),
upd AS (
  UPDATE ${L} l SET ${set}, version = l.version + 1
  FROM n, cur
  WHERE l.work_id = cur.work_id AND ${when}
  RETURNING ${info('l')}
),
aud AS (
  INSERT INTO ${s}.audit (at, action, work_id, operator, reason, old_holder_id, old_token, new_token)
  SELECT n.now, '${on ? 'hold' : 'unhold'}', cur.work_id, $2, $3, cur.holder_id, cur.token, cur.token
  FROM n, cur, upd
),
his AS (
  INSERT INTO ${s}.history (work_id, at, kind, holder_id, token, operator, reason)
  SELECT cur.work_id, n.now, '${on ? 'held' : 'unheld'}', cur.holder_id, cur.token, $2, $3
  FROM n, cur, upd
)
SELECT upd.work_id IS NOT NULL AS changed, ${INFO_COLUMNS.map((c) => `cur.${c}`).join(', ')}, upd.*
FROM cur LEFT JOIN upd ON true`,
  };
}

export function historyStatements(f: LeaseFragments): HistoryStatements {
  const { s, L } = f;
  return {
    hold: holdStatement(f, true),
    unhold: holdStatement(f, false),

    // $1 work_id, $2 before id or NULL, $3 limit. Newest first, by the history's (work_id, id) index.
    history: {
      text: `
SELECT id, at, kind, holder_id, token, operator, reason, checkpoint_bytes
FROM ${s}.history WHERE work_id = $1 AND ($2::bigint IS NULL OR id < $2::bigint)
ORDER BY id DESC LIMIT $3`,
    },

    // $1 work_id, $2 offset (0-based), $3 length. No row: no lease, or no checkpoint at its last handoff.
    handoffCheckpoint: {
      text: `
SELECT hs.token, octet_length(hs.state) AS size, substring(hs.state FROM $2::integer + 1 FOR $3::integer) AS bytes
FROM ${L} l JOIN ${s}.handoff_states hs ON hs.work_id = l.work_id
WHERE l.work_id = $1 AND l.last_op <> 'pruned'`,
    },

    // $1 older_than_ms, $2 entries kept per work item, $3 at most this many deleted. The count rule
    // reads the whole (work_id, id) index: prune is an occasional batch, not a lease call.
    pruneHistory: {
      text: `
WITH n AS MATERIALIZED (SELECT clock_timestamp() - $1::bigint ${MS} AS cutoff),
old AS (SELECT h.id FROM ${s}.history h, n WHERE h.at < n.cutoff ORDER BY h.id LIMIT $3),
many AS (
  SELECT x.id FROM (
    SELECT id, row_number() OVER (PARTITION BY work_id ORDER BY id DESC) AS rn FROM ${s}.history
  ) x WHERE x.rn > $2 LIMIT $3
),
del AS (
  DELETE FROM ${s}.history h WHERE h.id IN (SELECT id FROM old UNION SELECT id FROM many) RETURNING 1
)
SELECT count(*)::int AS deleted FROM del`,
    },
  };
}
