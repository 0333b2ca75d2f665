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
 * acquire, checkpoint, renew, release, readCheckpoint: each in a file of its own under
 *   statements/, with its outcomes (the lease calls; their expanded text is snapshotted in
 *   test/backends/__snapshots__/, so a review diff shows what the server runs).
 * readState (`SELECT`): operators read a slice of the checkpoint without a record; the
 *   slice is cut on the server, so a large checkpoint is never sent whole.
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
 *   more than `olderThanMs` ago and not held; `SKIP LOCKED` so prune never waits for (or blocks) a
 *   holder. The checkpoint (and the one kept from the last handoff) is dropped, the token kept,
 *   `last_op = 'pruned'`; get, list, readState and forceRelease treat the row as absent. A lease
 *   that ran out without an end gets its `expired` history row here (no acquire noticed it).
 *   The history's retention is a statement of its own (statements/history.ts, pruneHistory).
 * History (migration 13): acquire, release, forceRelease, requestRelease, prune, hold and unhold
 *   each insert their history row in their own statement (statements/history.ts says which).
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

import { acquireStatement } from './statements/acquire.ts';
import { checkpointStatement } from './statements/checkpoint.ts';
import { INFO_COLUMNS, leaseFragments, MS, us } from './statements/fragments.ts';
import { type HistoryStatements, historyStatements } from './statements/history.ts';
import { readCheckpointStatement } from './statements/read-checkpoint.ts';
import { releaseStatement } from './statements/release.ts';
import { renewStatement } from './statements/renew.ts';

export { endedChannel, INFO_COLUMNS, quoteIdent } from './statements/fragments.ts';

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

export interface Statements extends HistoryStatements {
  acquire: { name: string; text: string; hot: true };
  checkpoint: { name: string; text: string; hot: true };
  renew: { name: string; text: string; hot: true };
  release: { name: string; text: string; hot: true };
  readCheckpoint: { name: string; text: string; hot: true };
  notifyEnd: { text: string };
  get: { name: string; text: string };
  /** $1 text[] of work ids: their leases (any order). */
  getMany: { name: string; text: string };
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
  const f = leaseFragments(schemaName, options.serverVersionNum >= 140000);
  const { s, L, S, info, notEnded, ends, notifyEnded } = f;

  // The feed's kind of a row: its last ownership change. Rows renewed or checkpointed before
  // migration 6 (or by a worklease older than it) still say 'renewed' / 'checkpointed': their last
  // ownership change was the acquire, or the release request when one is pending.
  const feedKind = `CASE WHEN last_op IN ('renewed', 'checkpointed')
      THEN CASE WHEN release_requested_at IS NULL THEN 'acquired' ELSE 'release-requested' END
      ELSE last_op END AS kind`;

  return {
    ...historyStatements(f),
    acquire: acquireStatement(f),
    checkpoint: checkpointStatement(f),
    renew: renewStatement(f),
    release: releaseStatement(f),
    readCheckpoint: readCheckpointStatement(f),

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
    getMany: {
      name: 'wl_get_many',
      text: `SELECT ${info()} FROM ${L} WHERE work_id = ANY($1::text[]) AND last_op <> 'pruned'`,
    },

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
),
his AS (
  INSERT INTO ${s}.history (work_id, at, kind, holder_id, token, operator, reason, checkpoint_bytes)
  SELECT cur.work_id, n.now, 'force-released', cur.holder_id, cur.token, $3, $4, upd.state_size
  FROM n, cur, upd
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
),
his AS (
  INSERT INTO ${s}.history (work_id, at, kind, holder_id, token, operator, reason)
  SELECT cur.work_id, n.now, 'release-requested', cur.holder_id, cur.token, $3, $4
  FROM n, cur, upd
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
  SELECT v.work_id, v.holder_id, v.token, v.expires_at, v.ended, v.state_size FROM ${L} v, n
  WHERE v.expires_at < n.cutoff AND v.last_op <> 'pruned' AND v.held_at IS NULL
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
gone AS (DELETE FROM ${S} st USING upd WHERE st.work_id = upd.work_id),
handed AS (DELETE FROM ${s}.handoff_states hs USING upd WHERE hs.work_id = upd.work_id),
expired AS (
  INSERT INTO ${s}.history (work_id, at, kind, holder_id, token, checkpoint_bytes)
  SELECT v.work_id, v.expires_at, 'expired', v.holder_id, v.token, v.state_size
  FROM victims v JOIN upd ON upd.work_id = v.work_id WHERE v.ended IS NULL
)
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
