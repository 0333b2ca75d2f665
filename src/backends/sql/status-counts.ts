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

/** $1: expiring fraction (0..1), $2: stuck after (ms). Rows: (at, st, n), `at` the server time judged at. */
export function statusCountsStatement(schema: string, exactExtract: boolean): Statement {
  const ms = (c: string): string => epochMs(c, exactExtract);
  return {
    text: `WITH t AS (SELECT ${ms('clock_timestamp()')} AS at),
r AS (
  SELECT CASE
    WHEN l.ended = 'force-released' THEN 5
    WHEN l.ended = 'released' THEN 3
    WHEN e.exp <= t.at THEN 2
    WHEN t.at - e.prog >= $2::float8 AND e.hb > e.prog AND l.work_id !~ '^group:.+:member:.' THEN 4
    WHEN e.exp - t.at < l.ttl_ms * $1::float8 THEN 1
    ELSE 0 END AS st
  FROM ${quoteIdent(schema)}.leases l CROSS JOIN t
  CROSS JOIN LATERAL (
    SELECT ${ms('l.expires_at')} AS exp,
           greatest(coalesce(${ms('l.checkpointed_at')}, 0), ${ms('l.acquired_at')}) AS prog,
           greatest(coalesce(${ms('l.renewed_at')}, 0), coalesce(${ms('l.checkpointed_at')}, 0), ${ms('l.acquired_at')}) AS hb
  ) e
  WHERE l.last_op <> 'pruned'
)
SELECT (SELECT at FROM t)::text AS at, st, count(*)::text AS n FROM r GROUP BY st
UNION ALL SELECT (SELECT at FROM t)::text, -1, '0'`,
  };
}
