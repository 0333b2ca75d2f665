/**
 * `admin.countByStatus`: the whole fleet's counts by console status (console/status.ts
 * `leaseStatus`: force-released, released, expired, stuck, expiring, live) judged at the server's
 * clock, in one aggregate statement: what the console shows while its index still loads (issue 43).
 * It scans the lease table once on the server and sends six numbers back; an operator's read, not
 * a lease call (no index is added for it: renews stay HOT, issue 45). Pruned tombstones are not
 * counted, as `list` does not return them.
 */
import type { Statement } from './client.ts';
import { epochMs } from './statements/fragments.ts';
import { quoteIdent } from './statements.ts';

/** Status codes of the statement's `st` column, in the order of console/api.ts LEASE_STATUSES. */
export const STATUS_CODE_NAMES = [
  'live',
  'expiring',
  'expired',
  'released',
  'stuck',
  'force-released',
] as const;

/**
 * $1: expiring fraction (0..1), $2: stuck after (ms). Rows: (at, st, n), `at` the server time judged
 * at (epoch ms). The stored times are compared as timestamps, never converted row by row (that
 * costs most of the scan): a time `x` truncated to the millisecond, as the console reads it, is at
 * most an integer `A` of ms exactly when `x < A + 1 ms`, so each test below equals the one on the
 * console's millisecond values.
 */
export function statusCountsStatement(schema: string, exactExtract: boolean): Statement {
  const ms = (c: string): string => epochMs(c, exactExtract);
  const ts = (epochMsExpr: string): string =>
    `(timestamptz 'epoch' + (${epochMsExpr}) * interval '1 millisecond')`;
  return {
    text: `WITH n AS (SELECT date_trunc('milliseconds', clock_timestamp()) AS now),
t AS (SELECT n.now, ${ms('n.now')} AS at FROM n),
r AS (
  SELECT CASE
    WHEN l.ended = 'force-released' THEN 5
    WHEN l.ended = 'released' THEN 3
    WHEN l.expires_at < t.now + interval '1 millisecond' THEN 2
    WHEN greatest(l.checkpointed_at, l.acquired_at) < ${ts('floor(t.at - $2::float8) + 1')}
      AND date_trunc('milliseconds', greatest(l.renewed_at, l.checkpointed_at, l.acquired_at))
        > date_trunc('milliseconds', greatest(l.checkpointed_at, l.acquired_at))
      AND l.work_id !~ '^group:.+:member:.' THEN 4
    WHEN l.expires_at < ${ts('ceil(t.at + l.ttl_ms * $1::float8)')} THEN 1
    ELSE 0 END AS st
  FROM ${quoteIdent(schema)}.leases l CROSS JOIN t
  WHERE l.last_op <> 'pruned'
)
SELECT (SELECT at FROM t)::text AS at, st, count(*)::text AS n FROM r GROUP BY st
UNION ALL SELECT (SELECT at FROM t)::text, -1, '0'`,
  };
}
