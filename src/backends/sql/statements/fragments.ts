/**
 * The pieces the statements of statements.ts and of this folder share: quoting, the server time a
 * lease call decides by, the token rule's floor, timestamps as epoch milliseconds, and the
 * fragments of the lease calls (the refusal of a stale token, the end of a lease, the end NOTIFY,
 * the release request) built for one schema by {@link leaseFragments}.
 */
/** The LISTEN channel on which the end of a lease in `schema` is announced (migrations 3 and 11). */
export function endedChannel(schema: string): string {
  return `wl_ended_${schema}`;
}

/** Quotes an identifier (the schema name, already validated as [a-z_][a-z0-9_]*). */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Quotes a string literal (the channel name: the schema name is validated, this is for safety). */
export function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

export const MS = `* interval '1 millisecond'`;

/**
 * The server time of a lease call on the hot path (acquire, checkpoint, renew, release): when the
 * server began the statement, one value for the whole statement. It replaces a clock_timestamp()
 * read in a one-row CTE, which came 6–9 µs later (measured) and was also read before any row-lock
 * wait; only a wait for a table lock (a migration's ALTER TABLE) now lies after the time a call
 * decides by, as a row-lock wait always did (the decision then errs the way it does there: a
 * lease that ran out during the wait can still be renewed, never one another holder took nor one
 * released or pruned meanwhile, since the UPDATE re-checks the token, `ended` and `last_op` on the
 * row it locked). It needs no plan node of its own: a renew
 * at 1 in flight ran at 0.866–0.883x the raw upsert against 0.843–0.860x with the CTE (the two
 * statements taking turns in one process, 3 runs of 9 rounds of 1 000); through the backend
 * (`npm run bench:overhead`, 3 alternating runs of each) 0.82–0.83x against 0.80–0.83x.
 */
export const NOW = 'statement_timestamp()';

/** The server time `t` (timestamptz) in whole microseconds since the epoch: the token rule's floor. */
export const us = (t: string): string => `floor(extract(epoch FROM ${t}) * 1000000)::bigint`;

/**
 * The columns of a LeaseInfo, in this order (rows.ts decodes them by position,
 * see `leaseInfoFromText`); the checkpoint itself is never read, only its size.
 */
export const INFO_COLUMNS = [
  'work_id',
  'holder_id',
  'token',
  'expires_at',
  'ttl_ms',
  'step_id',
  'acquired_at',
  'renewed_at',
  'checkpointed_at',
  'released_at',
  'state_size',
  'clean_handoff',
  'predecessor_end',
  'ended',
  'version',
  'acquisitions',
  'releases',
  'force_releases',
  'release_requested_at',
  'release_requested_by',
  'release_request_reason',
  'held_at',
  'held_by',
  'hold_reason',
] as const;

export const TIMESTAMP_COLUMNS: ReadonlySet<string> = new Set([
  'expires_at',
  'acquired_at',
  'renewed_at',
  'checkpointed_at',
  'released_at',
  'release_requested_at',
  'held_at',
]);

/**
 * A timestamptz as integer milliseconds since the epoch, rounded down: the value
 * a Date parsed from the timestamptz text holds (both `pg`'s parser and V8's drop
 * the sub-millisecond digits), so a LeaseInfo read this way equals one built from
 * the Date of any other statement. Parsing "1718000000123" is a Number() call;
 * parsing the text form was the largest cost of a 10 000-row page (a regex and
 * a Date computation per timestamp in pg-types).
 *
 * From PostgreSQL 14 `extract` returns numeric, so floor(x * 1000) is exact; on
 * 13 it returns float8, and floor() of that puts some whole-millisecond values one
 * millisecond low (2039-05-15 16:50:27.253 comes out as .252; on 15, 0.5% of a
 * random sample from 1960 to 2055), so there the value is truncated to whole
 * milliseconds first and then rounded (exact: the float error is far below 0.5). That form
 * costs about 2.5x the server CPU (date_trunc on timestamptz), so it is only used
 * where it is needed. Server cost on 15, 100 000 rows x 5 columns: 93 ms, against
 * 73 ms for the timestamptz text output it replaces.
 */
export function epochMs(column: string, exactExtract: boolean): string {
  return exactExtract
    ? `floor(extract(epoch FROM ${column}) * 1000)::int8`
    : `(extract(epoch FROM date_trunc('milliseconds', ${column})) * 1000)::int8`;
}

/** The fragments of one schema's statements (see {@link leaseFragments}). */
export interface LeaseFragments {
  /** The schema name as written in the URL (for the NOTIFY channel). */
  readonly schemaName: string;
  /** The quoted schema. */
  readonly s: string;
  /** The leases table. */
  readonly L: string;
  /** The checkpoints (migration 7): written by checkpoint, deleted by prune, read by readCheckpoint and readState. */
  readonly S: string;
  /** Whether `extract` is exact here (PostgreSQL 14+; see {@link epochMs}). */
  readonly exactExtract: boolean;
  info(alias?: string): string;
  readonly notEnded: string;
  readonly accepts: string;
  ends(now: string, kind: 'released' | 'force-released', counter: string): string;
  notifyEnded(alias: string): string;
  readonly request: string;
}

/** The fragments of the statements of one schema, on a server whose `extract` is exact or not. */
export function leaseFragments(schemaName: string, exactExtract: boolean): LeaseFragments {
  const s = quoteIdent(schemaName);
  const L = `${s}.leases`;
  /** The checkpoints (migration 7): written by checkpoint, deleted by prune, read by readCheckpoint and readState. */
  const S = `${s}.lease_states`;

  /** The LeaseInfo select list (INFO_COLUMNS, timestamps as epoch ms), optionally qualified by a table alias. */
  const info = (alias = ''): string => {
    const p = alias === '' ? '' : `${alias}.`;
    return INFO_COLUMNS.map((c) => {
      if (TIMESTAMP_COLUMNS.has(c)) return `${epochMs(p + c, exactExtract)} AS ${c}`;
      return `${p}${c}`;
    }).join(', ');
  };

  // The WHERE of checkpoint / renew / release after `work_id = $1`: true for the caller's live
  // lease; for any other row of that work id, the refusal (migration 8) raises WL001 with the
  // stored token, expiry and last_op, on the row version the UPDATE refused (see the header). The
  // work_id test inside the CASE is redundant with the index condition; it keeps the refusal from
  // ever running on another row, whatever order the planner gives the conditions.
  // A row whose lease no release, force-release or prune has ended, whatever its expiry. The
  // expiry alone cannot tell: a call takes its time (NOW, clock_timestamp()) before it waits for
  // the row, and an end that started later but got the row first sets an expiry (its own time - 1
  // ms) after that time. By expiry alone a renew or checkpoint that waited (behind a checkpoint of
  // the same holder, say) renewed a lease its holder had just released, or the tombstone a prune
  // (olderThanMs below the call timeout) had just made of it, and the row refused every acquire
  // until its new expiry; notifyEnd called such a lease live, the end had sent no NOTIFY, and the
  // waiter slept until its safety poll (test/backends/postgres-hot.test.ts, the racing tests).
  // Release and force-release set `ended`; prune leaves it and sets last_op 'pruned'.
  const notEnded = `l.ended IS NULL AND l.last_op <> 'pruned'`;
  const accepts = `CASE WHEN l.token = $2 AND l.expires_at > ${NOW} AND ${notEnded} THEN true
    WHEN l.work_id = $1 THEN ${s}.lease_refused(l.token, l.expires_at, l.last_op) ELSE false END`;
  // The SET list of the writes that end a lease at `now` (release, forceRelease): expiry just
  // before it, the request cleared, one more in the row's `counter` of such ends, a feed entry.
  const ends = (now: string, kind: 'released' | 'force-released', counter: string): string => `
    expires_at = ${now} - interval '1 millisecond',
    released_at = ${now},
    ended = '${kind}',
    release_requested_at = NULL,
    release_requested_by = NULL,
    release_request_reason = NULL,
    last_op = '${kind}',
    version = l.version + 1,
    ${counter} = l.${counter} + 1,
    change_xid = pg_current_xact_id()`;
  // The end NOTIFY (migration 11) of a row the statement ended (release, force-release, prune) while
  // a waiter asked for it (admin.notifyEnd set wanted_until): in the RETURNING, so it runs once for
  // each row written, after the WHERE held on the row's latest version, and is delivered only if
  // the statement commits. A void column, NULL unless it notified; the callers do not read it.
  const notifyEnded = (alias: string): string =>
    `CASE WHEN ${alias}.wanted_until > now() THEN pg_notify(${quoteLiteral(endedChannel(schemaName))}, ${alias}.work_id) END AS notified`;
  // The release request a checkpoint / renew hands back, one column (NULL when there is none):
  // JSON [at (epoch ms), operator, reason]. Each returned column costs the client a field parser on
  // every call: renews with the refusal in the WHERE, one run of 7 rounds, at 16 in flight 0.82x the
  // raw upsert with this column against 0.69x with the three (at 1 in flight 0.84x and 0.86x, within
  // the rounds' spread); returning the expiry alone 0.90x / 0.78x.
  const request = `CASE WHEN l.release_requested_at IS NULL THEN NULL ELSE json_build_array(
    ${epochMs('l.release_requested_at', exactExtract)}, l.release_requested_by, l.release_request_reason)::text END AS rq`;

  return { schemaName, s, L, S, exactExtract, info, notEnded, accepts, ends, notifyEnded, request };
}
