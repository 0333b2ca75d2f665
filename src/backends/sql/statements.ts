/**
 * The SQL of the Postgres and PGlite backends: one statement per lease call.
 *
 * Why each call is exactly one statement
 * --------------------------------------
 * The contract (DESIGN §2) asks for one round trip per call and no client-side
 * read-modify-write. A single statement runs in its own transaction (autocommit),
 * so it is atomic, and Postgres's row locks order it against every other write
 * to the same work item. Each statement below is shaped so that its result rows
 * alone tell every outcome apart; the driver never needs a second query.
 *
 * Time is the server's: every statement reads one server time and uses that single value for
 * both the decision ("is the lease live?") and the new timestamps, so a decision and the expiry
 * it writes can never disagree. No client clock is ever sent. The hot statements (acquire,
 * checkpoint, renew, release) use `statement_timestamp()`, the time the server began the
 * statement ({@link NOW}); the others read `clock_timestamp()` once, in a one-row CTE.
 *
 * Read committed and the row we decide on
 * ---------------------------------------
 * In READ COMMITTED an UPDATE / ON CONFLICT DO UPDATE decides on the *latest
 * committed* version of the row (it waits for a concurrent writer and re-checks
 * its WHERE on the new version), while a plain SELECT in the same statement sees
 * the statement's snapshot, which may be older. So the success path always
 * decides on the latest version. checkpoint, renew and release also decide their refusals in
 * the UPDATE's WHERE ({@link buildStatements}, `accepts`): on the row version the WHERE refused,
 * which after a wait on the row lock is the latest one (PostgreSQL re-checks the WHERE on it), the
 * refusal raises SQLSTATE WL001 with the stored token, expiry and last_op (migration 8,
 * `lease_refused`). Hence FENCED vs LEASE_EXPIRED is decided on the same row version the UPDATE
 * refused, and the success path pays nothing for it: the function never runs there.
 * Before migration 8 a guarded `FOR UPDATE` read in a second branch (`NOT EXISTS (SELECT 1 FROM
 * upd)`) reported the refusal: never executed on success, its plan nodes still cost a renew 7-10 %
 * at 1 in flight and 6-7 % at 16 (two runs of 7 rounds against the same UPDATE raising instead);
 * with the request columns also cut from three to one, 8 % and 19 % (Cost, below).
 * What a refusal costs instead: the statement ends in an error, so the server's log gets an ERROR
 * line for it (with log_min_messages at its default) and pg_stat_database counts a rollback. A
 * refusal means the holder lost its lease, rare in a healthy fleet. acquire, whose refusal
 * (LEASE_HELD) is routine where workers compete, sends a NOTICE instead (migration 9, below).
 *
 * Outcomes, statement by statement
 * --------------------------------
 * acquire (`INSERT … ON CONFLICT (work_id) DO UPDATE … WHERE <expires_at <= now, or else the
 * held notice>`):
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
 * checkpoint / renew / release (`UPDATE … WHERE work_id = $1 AND <token = $2 AND expires_at > now,
 * or else the refusal>`):
 *   - stored token matches and lease live: writes (state + expiry / expiry / expiry in the
 *     past + ended = 'released'), returns the new expiry (and, for checkpoint and renew, the
 *     release request in one column, `rq`).
 *   - otherwise the WHERE raises WL001 with the stored token, expiry and last_op: token differs
 *     → FENCED; token matches → LEASE_EXPIRED. Nothing is written.
 *   - no row at all (never acquired) → empty result → FENCED; a pruned row → FENCED too
 *     (its lease is gone, even though the tombstone keeps the same token).
 * readState (`SELECT`): operators read a slice of the checkpoint without a record; the
 *   slice is cut on the server, so a large checkpoint is never sent whole.
 * readCheckpoint (`SELECT`): one row; token differs, no row or pruned row → FENCED. The state column
 *   is only sent when the token matches, so a fenced caller costs no payload.
 * forceRelease (CTE: lock the row, update it, insert the audit row): the lock comes
 *   first (`cur … FOR UPDATE`) so the audit row, the CONFLICT decision and the update
 *   all see the same latest version. No row → NOT_FOUND; token differs from the
 *   operator's expected token, or the lease already ended (released / force-released)
 *   → CONFLICT with the stored token and holder; else the next token, expiry in the past,
 *   ended = 'force-released', and the audit row, all committed together.
 * requestRelease (CTE: lock the row, update it, insert the audit row, like forceRelease): no row
 *   → NOT_FOUND; token differs, lease ended or ran out → CONFLICT; a request already stored →
 *   nothing written, the lease as it is (idempotent, the first request is kept); else the request
 *   columns (migration 4), last_op = 'release-requested', and the audit row (new_token = old_token).
 *   checkpoint and renew RETURN the request columns with the new expiry: the holder learns of a
 *   request from the answer it already gets. acquire, release, force-release and prune clear them.
 * prune (CTE: pick + lock victims, turn them into tombstones): rows not live and expired
 *   more than `olderThanMs` ago; `SKIP LOCKED` so prune never waits for (or blocks) a
 *   holder. The checkpoint is dropped, the token kept, `last_op = 'pruned'`; get, list,
 *   readState and forceRelease treat the row as absent.
 *
 * Why tombstones live in the leases row and not in a table of their own
 * ---------------------------------------------------------------------
 * With a separate table (prune: DELETE the lease row + INSERT its tombstone; acquire:
 * INSERT reading the tombstone's token), an acquire that starts while a prune is in
 * flight waits on the deleted row, then inserts with the token it read from the
 * tombstone table *in its snapshot*, which predates the prune's commit: token 1 again,
 * a reused fencing token. The change-feed test caught exactly that. Keeping the row
 * makes every acquire an ON CONFLICT DO UPDATE on the row that carries the last token,
 * which READ COMMITTED always evaluates on the latest committed version.
 *
 * The token rule
 * --------------
 * A new token (acquire, force-release) is greatest(previous + 1, server time in µs),
 * the same rule as the Redis scripts (docs/durability.md says why it holds): +1 keeps
 * tokens strictly increasing per work item whatever the clock does, and the clock floor
 * keeps a database that lost its latest commits (a promoted asynchronous standby, a
 * restored backup) from handing out a token it had already handed out, unless its clock
 * lags by more than the failover took. bigint arithmetic: exact up to 2^63 - 1.
 *
 * Every write sets `version = version + 1`. The change feed (see `changes`) carries
 * ownership changes only: acquire, release, forceRelease, requestRelease and prune also
 * set `last_op` (the feed's kind) and `change_xid = pg_current_xact_id()`, which the
 * feed reads by. renew and checkpoint (heartbeats and progress, the bulk of all writes)
 * set neither since migration 6: the console re-reads live rows for them, and a later
 * feed entry of the item carries the row as it is stored then, with its version.
 * The feed delivers each row's latest version, so acquire, release and forceRelease
 * also count themselves in the row (`acquisitions`, `releases`,
 * `force_releases`, migration 2; prune resets them, so a row that comes back
 * counts from zero like a new one): a reader counts every handoff exactly once
 * from the differences, however many writes a poll coalesced.
 *
 * Cost: the hot statements touch one row through the primary key. renew and
 * checkpoint write no indexed column, so they are HOT updates (no index entry; the
 * table's fillfactor of 90 leaves the page room for the new version, migration 6);
 * acquire, release, forceRelease and prune also write the change_xid index. The end NOTIFY goes
 * only to an ended lease that a waiter asked for (migration 6), and since migration 11 comes from
 * the RETURNING of the statements that end a lease ({@link buildStatements}, notifyEnded) instead
 * of a trigger whose WHEN ran on every write that sets last_op (acquire's takeover included):
 * acquire + release cycles at 16 in flight 1.066x with the NOTIFY in the RETURNING against the
 * trigger (11 alternating rounds of 2 000 through two backends, old and new code, load 1.2-2.7).
 * They run as named prepared statements (on PostgreSQL on the lease calls' own connections,
 * postgres/hot.ts: the statements marked `hot`). Measured before migration 6 with `pgbench -M prepared -r` (per-statement
 * latency, both statements in one script so the shared machine's noise hits both
 * alike), PostgreSQL 15, 200 rows:
 *   1 client:  raw upsert 0.400 ms, renew 0.504 ms, same renew as a plain UPDATE
 *              0.497 ms, checkpoint 1 KiB 0.555 ms;
 *   16 clients: raw upsert 3.23 ms, renew 3.64 ms, plain UPDATE 3.53 ms.
 * So the CTE shape (clock read once, guarded fallback) costs nothing measurable.
 * Measured again with migrations 6 and 7, 16 in flight on a `pg.Pool` of 16, 9 interleaved
 * rounds, load 3.4, as a share of the raw upsert's calls per second: a plain one-column UPDATE of
 * the lease row 0.90x; the renew's CTE and RETURNING list without the refused branch 0.83x; the
 * renew statement as it is 0.76x; backend.renew 0.71x. So the refused branch (UNION ALL + the
 * guarded FOR UPDATE read) costs about 7 % even when it returns nothing, and the library about 5 %.
 * The clock's one-row CTE cost about 3 % at 1 in flight: the hot statements no longer have it ({@link NOW}).
 * A raw upsert carrying 1 KiB ran at 1.05x the raw one: a checkpoint's bytes cost little; its
 * second row (lease_states) and the statement's shape do.
 * Migration 8, renew as a share of the raw upsert's calls per second, the statements sent through
 * `pg` taking turns (9 rounds of 2 000, load 1.6-4.5), at 1 / 16 in flight: with the refused
 * branch and three request columns 0.78x / 0.71x; the refusal in the WHERE with one request column
 * 0.84x / 0.84x; with the trigger also limited to last_op 0.88x / 0.85x. A plain one-column UPDATE
 * of the lease row: 0.99x / 0.85x in a run of its own, the ceiling at 16 that the row's width and
 * its index leave.
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
function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

const MS = `* interval '1 millisecond'`;

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
const NOW = 'statement_timestamp()';

/** The server time `t` (timestamptz) in whole microseconds since the epoch: the token rule's floor. */
const us = (t: string): string => `floor(extract(epoch FROM ${t}) * 1000000)::bigint`;

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
] as const;

const TIMESTAMP_COLUMNS: ReadonlySet<string> = new Set([
  'expires_at',
  'acquired_at',
  'renewed_at',
  'checkpointed_at',
  'released_at',
  'release_requested_at',
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
function epochMs(column: string, exactExtract: boolean): string {
  return exactExtract
    ? `floor(extract(epoch FROM ${column}) * 1000)::int8`
    : `(extract(epoch FROM date_trunc('milliseconds', ${column})) * 1000)::int8`;
}

export interface ListFilters {
  limit: number;
  /** Keyset: only work ids after this one. */
  after: string | undefined;
  /** Prefix range, inclusive lower bound. */
  from: string | undefined;
  /** Prefix range, exclusive upper bound (absent when the prefix has no successor). */
  below: string | undefined;
  holder: string | undefined;
}

export interface StatementOptions {
  /** `server_version_num` of the server: picks the exact epoch expression (see `epochMs`). */
  serverVersionNum: number;
}

export interface Statements {
  acquire: { name: string; text: string; hot: true };
  checkpoint: { name: string; text: string; hot: true };
  renew: { name: string; text: string; hot: true };
  release: { name: string; text: string; hot: true };
  readCheckpoint: { name: string; text: string; hot: true };
  notifyEnd: { text: string };
  get: { name: string; text: string };
  readState: { text: string };
  serverTime: { name: string; text: string };
  forceRelease: { text: string };
  requestRelease: { text: string };
  audit: { text: string };
  prune: { text: string };
  changeCursor: { text: string };
  changes: { text: string };
  list(filters: ListFilters): { text: string; params: unknown[] };
}

/**
 * Builds the statements for one schema. Statement names are static: each backend
 * has its own connections, so two schemas never share a prepared statement.
 */
export function buildStatements(schemaName: string, options: StatementOptions): Statements {
  const s = quoteIdent(schemaName);
  const L = `${s}.leases`;
  /** The checkpoints (migration 7): written by checkpoint, deleted by prune, read by readCheckpoint and readState. */
  const S = `${s}.lease_states`;
  const exactExtract = options.serverVersionNum >= 140000;

  /** The LeaseInfo select list (INFO_COLUMNS, timestamps as epoch ms), optionally qualified by a table alias. */
  const info = (alias = ''): string => {
    const p = alias === '' ? '' : `${alias}.`;
    return INFO_COLUMNS.map((c) => {
      if (TIMESTAMP_COLUMNS.has(c)) return `${epochMs(p + c, exactExtract)} AS ${c}`;
      return `${p}${c}`;
    }).join(', ');
  };

  // The feed's kind of a row: its last ownership change. Rows renewed or checkpointed before
  // migration 6 (or by a worklease older than it) still say 'renewed' / 'checkpointed': their last
  // ownership change was the acquire, or the release request when one is pending.
  const feedKind = `CASE WHEN last_op IN ('renewed', 'checkpointed')
      THEN CASE WHEN release_requested_at IS NULL THEN 'acquired' ELSE 'release-requested' END
      ELSE last_op END AS kind`;

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

  return {
    // $1 work_id, $2 holder_id, $3 ttl_ms, $4 step_id
    acquire: {
      name: 'wl_acquire',
      hot: true,
      text: `
INSERT INTO ${L} AS l (work_id, holder_id, token, expires_at, ttl_ms, step_id, acquired_at,
    clean_handoff, predecessor_end, last_op, version, change_xid)
  SELECT $1, $2, ${us(NOW)}, ${NOW} + $3::integer ${MS}, $3::integer, $4, ${NOW}, true, 'none', 'acquired', 1,
    pg_current_xact_id()
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
  WHERE CASE WHEN l.expires_at <= EXCLUDED.acquired_at THEN true
    ELSE ${s}.lease_held(l.token, l.expires_at, l.holder_id) END
RETURNING l.token, l.expires_at`,
    },

    // $1 work_id, $2 token, $3 state, $4 ttl_ms. The state's INSERT is the main statement rather
    // than a second CTE read by a SELECT: one CTE scan less; against the raw upsert, taking turns
    // (two runs of 7 and 9 rounds of 2 000) 0.898x / 0.896x at 1 in flight against 0.856x / 0.878x,
    // and 0.669x / 0.704x at 16 against 0.652x / 0.658x.
    checkpoint: {
      name: 'wl_checkpoint',
      hot: true,
      text: `
WITH upd AS (
  UPDATE ${L} l SET
    state_size = octet_length($3::bytea),
    checkpointed_at = ${NOW},
    renewed_at = ${NOW},
    expires_at = ${NOW} + $4::integer ${MS},
    ttl_ms = $4::integer,
    version = l.version + 1
  WHERE l.work_id = $1 AND ${accepts}
  RETURNING l.work_id, l.expires_at, ${request}
)
INSERT INTO ${S} AS st (work_id, state) SELECT upd.work_id, $3::bytea FROM upd
ON CONFLICT (work_id) DO UPDATE SET state = EXCLUDED.state
RETURNING (SELECT upd.expires_at FROM upd), (SELECT upd.rq FROM upd)`,
    },

    // $1 work_id, $2 token, $3 ttl_ms
    renew: {
      name: 'wl_renew',
      hot: true,
      text: `
UPDATE ${L} l SET
  renewed_at = ${NOW},
  expires_at = ${NOW} + $3::integer ${MS},
  ttl_ms = $3::integer,
  version = l.version + 1
WHERE l.work_id = $1 AND ${accepts}
RETURNING l.expires_at, ${request}`,
    },

    // $1 work_id, $2 token
    release: {
      name: 'wl_release',
      hot: true,
      text: `
UPDATE ${L} l SET
  ${ends(NOW, 'released', 'releases')}
WHERE l.work_id = $1 AND ${accepts}
RETURNING l.expires_at, ${notifyEnded('l')}`,
    },

    // $1 work_id, $2 token
    readCheckpoint: {
      name: 'wl_read_checkpoint',
      hot: true,
      text: `
SELECT l.token, l.expires_at, l.last_op, l.clean_handoff, st.state
FROM ${L} l LEFT JOIN ${S} st ON st.work_id = l.work_id AND l.token = $2
WHERE l.work_id = $1`,
    },

    // $1 work_id, $2 for_ms. A write of the waiter's own: no version, no change_xid (not a change
    // of the lease, not in the feed), no indexed column (HOT). No row: the lease is not live.
    // Live: not ended ({@link notEnded}) and not run out.
    notifyEnd: {
      text: `
WITH n AS MATERIALIZED (SELECT clock_timestamp() AS now)
UPDATE ${L} l SET wanted_until = greatest(l.wanted_until, n.now + $2::integer ${MS})
FROM n
WHERE l.work_id = $1 AND l.expires_at > n.now AND ${notEnded}
RETURNING true AS live`,
    },

    get: { name: 'wl_get', text: `SELECT ${info()} FROM ${L} WHERE work_id = $1 AND last_op <> 'pruned'` },

    // $1 work_id, $2 offset (0-based), $3 length. substring() is 1-based.
    readState: {
      text: `
SELECT l.token, l.state_size AS size, substring(st.state FROM $2::integer + 1 FOR $3::integer) AS bytes
FROM ${L} l LEFT JOIN ${S} st ON st.work_id = l.work_id
WHERE l.work_id = $1 AND l.last_op <> 'pruned'`,
    },

    serverTime: { name: 'wl_server_time', text: 'SELECT clock_timestamp() AS now' },

    // $1 work_id, $2 expected token, $3 operator, $4 reason, $5 batch id or NULL. Read as a text row by
    // position: stored_token, stored_holder_id, stored_ended, audit_id, then INFO_COLUMNS
    // (all NULL when refused).
    forceRelease: {
      text: `
WITH n AS MATERIALIZED (SELECT clock_timestamp() AS now),
cur AS (
  SELECT work_id, token, holder_id, ended FROM ${L} WHERE work_id = $1 AND last_op <> 'pruned' FOR UPDATE
),
upd AS (
  UPDATE ${L} l SET
    token = greatest(l.token + 1, ${us('n.now')}),
    ${ends('n.now', 'force-released', 'force_releases')}
  FROM n, cur
  WHERE l.work_id = cur.work_id AND cur.token = $2 AND cur.ended IS NULL
  RETURNING ${info('l')}, ${notifyEnded('l')}
),
aud AS (
  INSERT INTO ${s}.audit (at, action, work_id, operator, reason, old_holder_id, old_token, new_token, batch_id)
  SELECT n.now, 'force-release', cur.work_id, $3, $4, cur.holder_id, cur.token, upd.token, $5::text
  FROM n, cur, upd
  RETURNING id
)
SELECT cur.token AS stored_token, cur.holder_id AS stored_holder_id, cur.ended AS stored_ended,
  (SELECT id FROM aud) AS audit_id, upd.*
FROM cur LEFT JOIN upd ON true`,
    },

    // $1 work_id, $2 expected token, $3 operator, $4 reason. Read as a text row by position:
    // live, requested, then INFO_COLUMNS of the lease before the call (cur), then INFO_COLUMNS
    // after it (all NULL when nothing was written). No row: no lease. The lock comes first, as in
    // forceRelease, so the decision, the update and the audit row see the same latest version.
    requestRelease: {
      text: `
WITH n AS MATERIALIZED (SELECT clock_timestamp() AS now),
cur AS (
  SELECT ${info()}, expires_at AS raw_expires_at, release_requested_at AS raw_requested_at
  FROM ${L} WHERE work_id = $1 AND last_op <> 'pruned' FOR UPDATE
),
upd AS (
  UPDATE ${L} l SET
    release_requested_at = n.now,
    release_requested_by = $3,
    release_request_reason = $4,
    last_op = 'release-requested',
    version = l.version + 1,
    change_xid = pg_current_xact_id()
  FROM n, cur
  WHERE l.work_id = cur.work_id AND cur.token = $2 AND cur.ended IS NULL
    AND cur.raw_expires_at > n.now AND cur.raw_requested_at IS NULL
  RETURNING ${info('l')}
),
aud AS (
  INSERT INTO ${s}.audit (at, action, work_id, operator, reason, old_holder_id, old_token, new_token)
  SELECT n.now, 'request-release', cur.work_id, $3, $4, cur.holder_id, cur.token, cur.token
  FROM n, cur, upd
  RETURNING id
)
SELECT cur.raw_expires_at > n.now AS live, cur.raw_requested_at IS NOT NULL AS requested,
  ${INFO_COLUMNS.map((c) => `cur.${c}`).join(', ')}, upd.*
FROM n, cur LEFT JOIN upd ON true`,
    },

    // $1 work_id or NULL, $2 limit
    audit: {
      text: `
SELECT id, at, action, work_id, operator, reason, old_holder_id, old_token, new_token, batch_id
FROM ${s}.audit WHERE ($1::text IS NULL OR work_id = $1)
ORDER BY id DESC LIMIT $2`,
    },

    // $1 older_than_ms, $2 limit
    prune: {
      text: `
WITH n AS MATERIALIZED (SELECT clock_timestamp() - $1::bigint ${MS} AS cutoff),
victims AS (
  SELECT v.work_id FROM ${L} v, n
  WHERE v.expires_at < n.cutoff AND v.last_op <> 'pruned'
  ORDER BY v.expires_at LIMIT $2
  FOR UPDATE OF v SKIP LOCKED
),
upd AS (
  UPDATE ${L} l SET
    state_size = NULL,
    checkpointed_at = NULL,
    release_requested_at = NULL,
    release_requested_by = NULL,
    release_request_reason = NULL,
    last_op = 'pruned',
    acquisitions = 0,
    releases = 0,
    force_releases = 0,
    version = l.version + 1,
    change_xid = pg_current_xact_id()
  FROM victims, n
  WHERE l.work_id = victims.work_id AND l.expires_at < n.cutoff
  RETURNING l.work_id, ${notifyEnded('l')}
),
gone AS (DELETE FROM ${S} st USING upd WHERE st.work_id = upd.work_id)
SELECT count(*)::int AS pruned FROM upd`,
    },

    changeCursor: { text: 'SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin' },

    // $1 lower bound xid8, $2/$3 keyset (change_xid, work_id) to start after, $4 limit.
    // The left join keeps one row (with the snapshot's xmin) when there are no changes.
    // Read as text rows by position: snap_xmin, change_xid, kind, then INFO_COLUMNS.
    changes: {
      text: `
SELECT snap.xmin AS snap_xmin, c.* FROM
  (SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin) snap
LEFT JOIN LATERAL (
  SELECT change_xid, ${feedKind}, ${info()} FROM ${L}
  WHERE change_xid >= $1::xid8 AND (change_xid, work_id) > ($2::xid8, $3::text)
  ORDER BY change_xid, work_id
  LIMIT $4
) c ON true`,
    },

    list(filters) {
      // Only fixed fragments are concatenated; every value is a parameter.
      const params: unknown[] = [filters.limit];
      const where: string[] = ["last_op <> 'pruned'"];
      const add = (sql: string, value: string | undefined): void => {
        if (value === undefined) return;
        params.push(value);
        where.push(`${sql} $${params.length}::text`);
      };
      add('work_id >', filters.after);
      add('work_id >=', filters.from);
      add('work_id <', filters.below);
      add('holder_id =', filters.holder);
      return {
        text: `SELECT ${info()} FROM ${L} WHERE ${where.join(' AND ')} ORDER BY work_id LIMIT $1`,
        params,
      };
    },
  };
}
