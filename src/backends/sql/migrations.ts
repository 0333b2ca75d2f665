/**
 * Numbered schema migrations and the runner that applies them.
 *
 * Migrations are append-only: once released, a migration's SQL is never edited;
 * a change is a new number. The runner is safe when several processes open the
 * same schema at once: it takes a transaction-scoped advisory lock keyed by the
 * schema name, so one process migrates while the others wait and then find
 * nothing left to do. DDL is transactional in Postgres, so a failed migration
 * leaves the schema exactly as it was.
 */
import { SchemaMismatchError } from '../../lease/errors.ts';
import { migrateCommandFor } from '../url.ts';
import type { SqlClient, SqlQuery } from './client.ts';
import { HISTORY_MIGRATIONS } from './migrations-history.ts';
import { quoteIdent } from './statements.ts';

export interface Migration {
  readonly version: number;
  readonly name: string;
  /** The DDL, given the quoted schema name. May hold several statements. */
  sql(schema: string): string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: '001_init',
    sql: (s) => `
-- One row per work item. work_id uses the "C" collation so that keyset paging and
-- prefix ranges follow code point order, whatever the database's default collation.
-- Prune does not delete a row: it drops the checkpoint and marks the row
-- last_op = 'pruned' (a tombstone), so the token survives in the very row that the
-- next acquire locks (see statements.ts for why a separate table would be unsafe).
CREATE TABLE ${s}.leases (
  work_id         text COLLATE "C" PRIMARY KEY,
  holder_id       text NOT NULL,
  token           bigint NOT NULL,
  expires_at      timestamptz NOT NULL,
  ttl_ms          integer NOT NULL,
  step_id         text,
  acquired_at     timestamptz NOT NULL,
  renewed_at      timestamptz,
  checkpointed_at timestamptz,
  released_at     timestamptz,
  state           bytea,
  clean_handoff   boolean NOT NULL,
  predecessor_end text NOT NULL CHECK (predecessor_end IN ('none', 'released', 'expired', 'force-released')),
  ended           text CHECK (ended IN ('released', 'force-released')),
  last_op         text NOT NULL
    CHECK (last_op IN ('acquired', 'renewed', 'checkpointed', 'released', 'force-released', 'pruned')),
  version         bigint NOT NULL,
  -- The transaction that wrote this version of the row; the change feed reads by it.
  change_xid      xid8 NOT NULL
);
CREATE INDEX leases_change_idx ON ${s}.leases (change_xid, work_id);

CREATE TABLE ${s}.audit (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at            timestamptz NOT NULL,
  action        text NOT NULL,
  work_id       text COLLATE "C" NOT NULL,
  operator      text NOT NULL,
  reason        text NOT NULL,
  old_holder_id text NOT NULL,
  old_token     bigint NOT NULL,
  new_token     bigint NOT NULL
);
CREATE INDEX audit_work_idx ON ${s}.audit (work_id, id);
`,
  },
  {
    version: 2,
    name: '002_handoff_counts',
    sql: (s) => `
-- How often each work item changed hands and ended. The change feed delivers a row's latest
-- version only, so a reader that missed the versions in between (several handoffs between two
-- polls, a reconnect) still counts each acquisition, release and force-release exactly once
-- from the differences. Rows from before this migration count their current lease as one.
ALTER TABLE ${s}.leases
  ADD COLUMN acquisitions bigint NOT NULL DEFAULT 1,
  ADD COLUMN releases bigint NOT NULL DEFAULT 0,
  ADD COLUMN force_releases bigint NOT NULL DEFAULT 0;
`,
  },
  {
    version: 3,
    name: '002_ended_notify',
    sql: (s) => `
-- Waiting acquires LISTEN for the end of a lease instead of polling: a row whose
-- write ended its lease (release, force-release, prune) sends NOTIFY with the work
-- id on the channel endedChannel(schema). Only those writes: NOTIFY serializes the
-- commits of all notifying transactions (one lock on the notification queue), so
-- notifying every renew would cap the write rate; a lease ends far less often.
-- Acquire and renew pay one WHEN test per row (no function call).
CREATE FUNCTION ${s}.notify_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(TG_ARGV[0], NEW.work_id);
  RETURN NULL;
END
$$;
CREATE TRIGGER leases_ended AFTER UPDATE ON ${s}.leases FOR EACH ROW
  WHEN (NEW.last_op IN ('released', 'force-released', 'pruned'))
  EXECUTE FUNCTION ${s}.notify_ended(${quoteLiteral(`wl_ended_${unquote(s)}`)});
`,
  },
  {
    version: 4,
    name: '004_release_request',
    sql: (s) => `
-- An operator's request that the holder hand its lease over (admin.requestRelease): when it was
-- first made (server clock), by whom and why. NULL when there is none; every change of hands or
-- end (acquire, release, force-release, prune) clears it. renew and checkpoint return it in the
-- row they already return, so the holder learns of it with no extra round trip. The request
-- itself is a write of its own (last_op 'release-requested'), so the change feed carries it.
ALTER TABLE ${s}.leases
  ADD COLUMN release_requested_at timestamptz,
  ADD COLUMN release_requested_by text,
  ADD COLUMN release_request_reason text;
ALTER TABLE ${s}.leases DROP CONSTRAINT leases_last_op_check;
ALTER TABLE ${s}.leases ADD CONSTRAINT leases_last_op_check CHECK (last_op IN
  ('acquired', 'renewed', 'checkpointed', 'released', 'force-released', 'release-requested', 'pruned'));
`,
  },
  {
    version: 5,
    name: '005_audit_batch',
    sql: (s) => `
-- The batch a force-release belongs to (the console's bulk force-release of a filtered
-- selection writes one audit entry per lease, all with the same batch id); NULL for a
-- single force-release and for entries written before this migration.
ALTER TABLE ${s}.audit ADD COLUMN batch_id text;
CREATE INDEX audit_batch_idx ON ${s}.audit (batch_id) WHERE batch_id IS NOT NULL;
`,
  },
  {
    version: 6,
    name: '006_hot_renew_wanted_end',
    sql: (s) => `
-- The change feed carries ownership changes only (acquired, released, force-released,
-- release-requested, pruned): renew and checkpoint no longer write change_xid nor last_op, so
-- they change no indexed column and can be HOT updates (no index entry, the new row version on
-- the same page). HOT needs room on that page: with the default fillfactor of 100 a page filled
-- by inserts has none, and 17 % of 4 000 renews of distinct leases among 20 000 went to another
-- page (non-HOT); with 90 all 4 000 were HOT (80: also all, for a heap 13 % larger). The setting
-- applies to pages filled from now on.
ALTER TABLE ${s}.leases SET (fillfactor = 90);
-- A waiting acquire asks to hear of the end of a lease (admin.notifyEnd): until this time a
-- release, force-release or prune of the row sends the NOTIFY of migration 3; otherwise it sends
-- none. NOTIFY serializes the commits of all notifying transactions (one lock on the
-- notification queue, held through the commit's WAL flush): with it on every release, releases
-- at 16 in flight ran at 1 730/s against 6 894/s without it. Written only by waiters; acquire
-- clears it (the waiters that lost ask again after their refused acquire).
ALTER TABLE ${s}.leases ADD COLUMN wanted_until timestamptz;
DROP TRIGGER leases_ended ON ${s}.leases;
CREATE TRIGGER leases_ended AFTER UPDATE ON ${s}.leases FOR EACH ROW
  WHEN (NEW.last_op IN ('released', 'force-released', 'pruned') AND NEW.wanted_until > now())
  EXECUTE FUNCTION ${s}.notify_ended(${quoteLiteral(`wl_ended_${unquote(s)}`)});
`,
  },
  {
    version: 7,
    name: '007_lease_states',
    sql: (s) => `
-- Checkpoint bytes out of the lease row, so a renew (a HOT update: a new version of the whole
-- row on the same page) neither copies them nor logs them: one row per work item that has a
-- checkpoint, written only by checkpoint (and deleted by prune), read only by readCheckpoint and
-- readState. The lease row keeps the size for the console. Measured with a 1 KiB checkpoint in
-- the row: a renew logged 1 167-1 227 B of WAL (PostgreSQL logs the changed middle of the row
-- version, and version comes after state) and 7.5 % of renews went non-HOT for want of page
-- room; TOAST does not help below 2 kB: toast_tuple_target only applies to rows already over
-- TOAST_TUPLE_THRESHOLD, so a 1 KiB state stays inline whatever the column's storage.
-- A checkpoint replaces its row: room on the page for one more version keeps that a HOT update
-- too (3 000 checkpoints of 1 KiB over 1 000 leases, 8 in flight: 89 % HOT with fillfactor 80,
-- 81 % with 100).
CREATE TABLE ${s}.lease_states (
  work_id text COLLATE "C" PRIMARY KEY,
  state   bytea NOT NULL
) WITH (fillfactor = 80);
ALTER TABLE ${s}.leases ADD COLUMN state_size integer;
INSERT INTO ${s}.lease_states (work_id, state) SELECT work_id, state FROM ${s}.leases WHERE state IS NOT NULL;
UPDATE ${s}.leases SET state_size = octet_length(state), state = NULL WHERE state IS NOT NULL;
ALTER TABLE ${s}.leases DROP COLUMN state;
`,
  },
  {
    version: 8,
    name: '008_refusal_in_the_update',
    sql: (s) => `
-- renew, checkpoint and release decide in their UPDATE's WHERE (statements.ts, accepts): a row
-- that is not the caller's live lease calls this function, which raises SQLSTATE WL001 with the
-- stored token, expiry (epoch ms) and last_op as JSON in DETAIL. The refusal then needs no second
-- branch in the statement: with the guarded FOR UPDATE read of before (and three request columns)
-- a renew ran at 0.78x the raw upsert at 1 in flight and 0.71x at 16; deciding in the WHERE (one
-- request column) 0.84x and 0.84x (the statements taking turns, 9 rounds of 2 000, load 1.6-4.5).
-- The function runs only on a refusal.
CREATE FUNCTION ${s}.lease_refused(tok bigint, exp timestamptz, op text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING
    ERRCODE = 'WL001',
    MESSAGE = 'worklease: lease call refused: the lease was taken over or ran out (the holder gets FENCED or LEASE_EXPIRED; not a fault of the server)',
    DETAIL = json_build_object(
      'token', tok::text,
      'expires_at', (extract(epoch FROM date_trunc('milliseconds', exp)) * 1000)::int8,
      'last_op', op)::text;
END
$$;
-- The trigger of migration 6 only for the writes that set last_op (release, force-release, prune
-- and the ownership changes): renew and checkpoint no longer evaluate its WHEN nor queue an
-- after-trigger event. Renew at 1 / 16 in flight 0.88x / 0.85x the raw upsert against 0.84x /
-- 0.84x (same rounds); the statement of before alone gained 0.78x -> 0.82x at 1.
DROP TRIGGER leases_ended ON ${s}.leases;
CREATE TRIGGER leases_ended AFTER UPDATE OF last_op ON ${s}.leases FOR EACH ROW
  WHEN (NEW.last_op IN ('released', 'force-released', 'pruned') AND NEW.wanted_until > now())
  EXECUTE FUNCTION ${s}.notify_ended(${quoteLiteral(`wl_ended_${unquote(s)}`)});
`,
  },
  {
    version: 9,
    name: '009_held_in_the_upsert',
    sql: (s) => `
-- acquire decides LEASE_HELD in its ON CONFLICT's WHERE (statements.ts): on a live lease this
-- function sends a NOTICE (SQLSTATE WL002) with the holder, token and expiry as JSON in DETAIL and
-- answers false, so nothing is written and nothing returned. A NOTICE, not an error as for the
-- refusals of migration 8: a held work item is routine where workers compete, and a NOTICE is
-- neither logged by the server (log_min_messages defaults to WARNING) nor a rollback. With
-- client_min_messages above NOTICE the client hears nothing: the call is still LEASE_HELD, without
-- the holder's details. Against the second branch that read the live row before, a first acquire
-- ran at 0.959x the raw upsert at 1 in flight instead of 0.867x, 0.704x at 16 instead of 0.633x
-- (the statements taking turns, 7 rounds of 2 000).
CREATE FUNCTION ${s}.lease_held(tok bigint, exp timestamptz, holder text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  RAISE NOTICE USING
    ERRCODE = 'WL002',
    MESSAGE = 'worklease: acquire refused, the lease is held',
    DETAIL = json_build_object(
      'token', tok::text,
      'expires_at', (extract(epoch FROM date_trunc('milliseconds', exp)) * 1000)::int8,
      'holder', holder)::text;
  RETURN false;
END
$$;
`,
  },
  {
    version: 10,
    name: '010_domain_checks',
    sql: (s) => `
-- The allowed values of last_op, ended and predecessor_end as domains instead of table CHECK
-- constraints. PostgreSQL keeps a table's CHECK constraints in the catalog as node-tree text and
-- reads that text back (stringToNode: pg_strtok and strtoll over every byte of every listed word)
-- for each statement that writes the table, whatever columns it sets: in a profile of updates
-- like a renew at 4 in flight (perf, the whole machine) that was 4-5 % of all samples. A domain's
-- check is compiled once per session (the type cache) and runs only where a value is assigned to
-- the column: renew and checkpoint assign none of the three. Measured with pgbench (16 clients,
-- prepared, 64 leases, 9 rounds of 16 x 1 000-1 500 taking turns, PostgreSQL 15, medians; the
-- machine's CPU per statement lower in 7-9 of the 9 pairs): renew 7 119 -> 8 758 statements/s
-- (219 -> 179 us of CPU each), checkpoint 1 KiB 6 929 -> 7 770 (255 -> 226), a first acquire
-- 5 129 -> 5 718 (276 -> 262), an update setting last_op and ended 10 328 -> 11 001 (166 -> 150).
-- The domains are created bare, so that changing the columns' type needs no rewrite of the table
-- (a domain with a check would make PostgreSQL rewrite every row), and get their checks after,
-- which validates the stored rows (one scan, under the lock this migration already holds). The
-- trigger names last_op, so it is dropped and created again unchanged.
CREATE DOMAIN ${s}.lease_op AS text;
CREATE DOMAIN ${s}.lease_end AS text;
CREATE DOMAIN ${s}.lease_predecessor_end AS text;
DROP TRIGGER leases_ended ON ${s}.leases;
ALTER TABLE ${s}.leases
  DROP CONSTRAINT leases_last_op_check,
  DROP CONSTRAINT leases_ended_check,
  DROP CONSTRAINT leases_predecessor_end_check,
  ALTER COLUMN last_op TYPE ${s}.lease_op,
  ALTER COLUMN ended TYPE ${s}.lease_end,
  ALTER COLUMN predecessor_end TYPE ${s}.lease_predecessor_end;
ALTER DOMAIN ${s}.lease_op ADD CONSTRAINT lease_op_check CHECK (VALUE IN
  ('acquired', 'renewed', 'checkpointed', 'released', 'force-released', 'release-requested', 'pruned'));
ALTER DOMAIN ${s}.lease_end ADD CONSTRAINT lease_end_check CHECK (VALUE IN ('released', 'force-released'));
ALTER DOMAIN ${s}.lease_predecessor_end ADD CONSTRAINT lease_predecessor_end_check CHECK (VALUE IN
  ('none', 'released', 'expired', 'force-released'));
CREATE TRIGGER leases_ended AFTER UPDATE OF last_op ON ${s}.leases FOR EACH ROW
  WHEN (NEW.last_op IN ('released', 'force-released', 'pruned') AND NEW.wanted_until > now())
  EXECUTE FUNCTION ${s}.notify_ended(${quoteLiteral(`wl_ended_${unquote(s)}`)});
`,
  },
  {
    version: 11,
    name: '011_end_notify_in_statements',
    sql: (s) => `
-- The NOTIFY of an ended lease (migration 3; only while a waiter asked for it, migration 6) is
-- sent by the statements that end a lease (release, force-release, prune: statements.ts,
-- notifyEnded) from their RETURNING, instead of by the AFTER UPDATE OF last_op trigger, whose
-- WHEN ran (with the row trigger machinery around it) on every write that sets last_op, acquire's
-- takeover included. RETURNING is evaluated once for each row the statement wrote, so the NOTIFY is
-- sent for the same rows as before, by the same test (wanted_until > now()), and only the
-- committed ones are delivered. Measured (acquire + release cycles, 16 in flight, PostgreSQL 15,
-- 11 alternating rounds of 2 000): through two backends of the code before and after, 3 257 and
-- 3 388 cycles/s (pairs 0.95-1.18, median 1.066; load 1.2-2.7); the two release statements alone
-- sent through pg, 3 438 and 3 751 (pairs 1.00-1.24, median 1.08; load 1.5-1.9). Processes of an older
-- worklease still running send no NOTIFY once this is applied: their waiters find the end by
-- their safety poll; stop them before migrating.
DROP TRIGGER leases_ended ON ${s}.leases;
DROP FUNCTION ${s}.notify_ended();
`,
  },
  {
    version: 12,
    name: '012_acquire_deadline',
    sql: (s) => `
-- acquire carries its caller's deadline in the server's clock (statements/acquire.ts): past it, this
-- function raises SQLSTATE WL003 before anything is written, so an acquire that its caller already
-- gave up on (the call timed out while the server was stalled, or while the statement waited for
-- the row lock) never grants a lease that nobody holds. The client reports it as the call's
-- BACKEND_UNAVAILABLE timeout. Runs only past the deadline.
CREATE FUNCTION ${s}.acquire_late(deadline_ms float8) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING
    ERRCODE = 'WL003',
    MESSAGE = 'worklease: acquire refused: its caller had given up (the call''s deadline had passed when the server came to it; nothing was written)',
    DETAIL = json_build_object(
      'deadline_ms', deadline_ms,
      'now_ms', floor(extract(epoch FROM clock_timestamp()) * 1000))::text;
END
$$;
`,
  },
  ...HISTORY_MIGRATIONS,
];

function unquote(quoted: string): string {
  return quoted.startsWith('"') ? quoted.slice(1, -1).replaceAll('""', '"') : quoted;
}

function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** The schema version this code needs. */
export const LATEST_VERSION = MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);

/**
 * The migrations in version order. Numbers need not be consecutive nor listed in order: a
 * migration numbered below one already applied (written on another branch at the same time) is
 * still applied, since the runner compares the set of applied versions, not only the highest.
 */
const ORDERED: readonly Migration[] = [...MIGRATIONS].sort((a, b) => a.version - b.version);

/** Arbitrary constant that namespaces worklease's advisory locks (first key of the two-key form). */
const LOCK_CLASS = 0x776c6d; // 'wlm'

function migrateHint(url: string): string {
  return `run \`${migrateCommandFor(url)}\` to create or upgrade it`;
}

/** The applied migration versions, ascending; null when the schema has no migrations table. */
async function appliedVersions(q: SqlQuery, schema: string): Promise<number[] | null> {
  const [present] = await q.query({ text: 'SELECT to_regclass($1) IS NOT NULL AS present' }, [
    `${quoteIdent(schema)}.schema_migrations`,
  ]);
  if (present?.present !== true) return null;
  const rows = await q.query(
    { text: `SELECT version::int AS version FROM ${quoteIdent(schema)}.schema_migrations ORDER BY version` },
    [],
  );
  return rows.map((r) => Number(r.version));
}

/** The migrations of `known` not applied yet, in version order (exported for its test). */
export function pendingMigrations(
  applied: readonly number[],
  known: readonly Migration[] = ORDERED,
): Migration[] {
  const done = new Set(applied);
  return [...known].sort((a, b) => a.version - b.version).filter((m) => !done.has(m.version));
}

function missing(applied: readonly number[]): Migration[] {
  return pendingMigrations(applied);
}

function tooNew(schema: string, version: number, url: string): SchemaMismatchError {
  return new SchemaMismatchError(
    `schema "${schema}" on ${url} is at version ${version}, newer than this worklease (which knows up to ${LATEST_VERSION}); upgrade worklease`,
    { details: { schema, version, expected: LATEST_VERSION } },
  );
}

/** With `migrate: false`: refuses a missing, older or newer schema. Writes nothing. */
export async function checkSchema(client: SqlClient, schema: string, url: string): Promise<void> {
  const applied = await appliedVersions(client, schema);
  if (applied === null) {
    throw new SchemaMismatchError(
      `schema "${schema}" on ${url} has no worklease tables; ${migrateHint(url)}`,
      {
        details: { schema, version: 0, expected: LATEST_VERSION },
      },
    );
  }
  const version = applied.length === 0 ? 0 : applied[applied.length - 1]!;
  if (version > LATEST_VERSION) throw tooNew(schema, version, url);
  const todo = missing(applied);
  if (todo.length > 0) {
    throw new SchemaMismatchError(
      `schema "${schema}" on ${url} is at version ${version}${version >= todo[0]!.version ? ` without ${todo.map((m) => m.version).join(', ')}` : ''}, this worklease needs ${LATEST_VERSION}; ${migrateHint(url)}`,
      { details: { schema, version, expected: LATEST_VERSION, missing: todo.map((m) => m.version) } },
    );
  }
}

/**
 * Creates or upgrades the schema. Returns the migrations applied by this call (empty when up to date).
 * An up-to-date schema is only read (the applied versions), so a role with the runtime grants alone
 * opens it; the migration transaction (which creates the schema if missing, and needs CREATE on the
 * database for that even when it exists) runs only when something is missing.
 */
export async function migrateSchema(client: SqlClient, schema: string, url: string): Promise<string[]> {
  const now = await appliedVersions(client, schema);
  if (now !== null) {
    const version = now.length === 0 ? 0 : now[now.length - 1]!;
    if (version > LATEST_VERSION) throw tooNew(schema, version, url);
    if (missing(now).length === 0) return [];
  }
  return client.transaction(async (tx) => {
    // hashtext may collide for two schema names; that only makes them wait for each other.
    await tx.query({ text: 'SELECT pg_advisory_xact_lock($1, hashtext($2))' }, [LOCK_CLASS, schema]);
    const s = quoteIdent(schema);
    await tx.query({ text: `CREATE SCHEMA IF NOT EXISTS ${s}` }, []);
    await tx.query(
      {
        text: `CREATE TABLE IF NOT EXISTS ${s}.schema_migrations (
          version integer PRIMARY KEY,
          name text NOT NULL,
          applied_at timestamptz NOT NULL DEFAULT clock_timestamp())`,
      },
      [],
    );
    const done = (await appliedVersions(tx, schema)) ?? [];
    const version = done.length === 0 ? 0 : done[done.length - 1]!;
    if (version > LATEST_VERSION) throw tooNew(schema, version, url);
    const applied: string[] = [];
    for (const m of missing(done)) {
      await tx.query({ text: m.sql(s) }, []);
      await tx.query({ text: `INSERT INTO ${s}.schema_migrations (version, name) VALUES ($1, $2)` }, [
        m.version,
        m.name,
      ]);
      applied.push(m.name);
    }
    return applied;
  });
}
