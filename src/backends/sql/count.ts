/**
 * `admin.count`: how many work items a `list` with the same filters returns in
 * all. Its own statement (beside statements.ts) because it is an operator's
 * read, not a lease call: one `count(*)` over the rows `list` pages through
 * (tombstones of pruned items excluded), with the same prefix range and holder
 * filter, so "N of M" in `worklease ls --limit N` never disagrees with the pages.
 * It scans the matching rows on the server and sends one number back.
 */
import type { Statement } from './client.ts';
import { quoteIdent } from './statements.ts';

export function countStatement(schema: string): Statement {
  return {
    text: `SELECT count(*)::int AS n FROM ${quoteIdent(schema)}.leases
WHERE last_op <> 'pruned'
  AND ($1::text IS NULL OR work_id >= $1::text)
  AND ($2::text IS NULL OR work_id < $2::text)
  AND ($3::text IS NULL OR holder_id = $3::text)`,
  };
}
