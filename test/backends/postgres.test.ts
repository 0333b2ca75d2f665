import { execFileSync } from 'node:child_process';
/**
 * PostgreSQL-specific behaviour: migrations, schema checks, pool recovery,
 * timeouts, schema isolation, the change feed under concurrent writers and
 * token continuity across prune. The lease contract itself is covered by the
 * conformance suite (test/conformance).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/backends/postgres/index.ts';
import { LATEST_VERSION, MIGRATIONS, pendingMigrations } from '../../src/backends/sql/migrations.ts';
import { changeScanParams, decodeChangeCursor } from '../../src/backends/sql/rows.ts';
import { buildStatements } from '../../src/backends/sql/statements.ts';
import type { LeaseBackend, LeaseChange, LeaseRecord, OpenOptions, WorkleaseError } from '../../src/index.ts';
import { codeOf, PG_URL, uniqueNamespace } from '../support/backends.ts';
import { quietCursor } from '../support/feed.ts';
import { startProxy, type TcpProxy } from '../support/proxy.ts';
import { holdRow } from '../support/row-lock.ts';
import { expectLeaseInfoReadsAgree } from './sql-lease-info.ts';

const schemas: string[] = [];
const backends: LeaseBackend[] = [];
let admin: pg.Client;

function newSchema(): string {
  const s = uniqueNamespace('pgt');
  schemas.push(s);
  return s;
}

async function open(schema: string, extra: OpenOptions = {}): Promise<LeaseBackend> {
  const b = await openPostgres(PG_URL, { schema, ...extra });
  backends.push(b);
  return b;
}

beforeAll(async () => {
  admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
});

afterAll(async () => {
  await Promise.allSettled(backends.map((b) => b.close()));
  for (const s of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  await admin.end();
});

describe('migrations', () => {
  it('four backends opening a fresh schema at once migrate it exactly once', async () => {
    const schema = newSchema();
    const opened = await Promise.all([1, 2, 3, 4].map(() => open(schema, { poolSize: 2 })));
    const { rows } = await admin.query(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`);
    expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version).sort((x, y) => x - y));
    // All four share the tables: one's lease is held for the others.
    const rec = await opened[0]!.acquire('shared', 'h0', 10_000);
    expect((await opened[1]!.admin.get('shared'))?.fencingToken).toBe(rec.fencingToken);
    for (const b of opened.slice(1))
      expect(await codeOf(b.acquire('shared', 'h1', 10_000))).toBe('LEASE_HELD');
  });

  it('applies a migration numbered below one already applied (registered later), and checkSchema asks for it', () => {
    const m = (version: number) => ({ version, name: `m${version}`, sql: () => '' });
    const known = [m(1), m(2), m(3), m(5), m(4)];
    expect(pendingMigrations([1, 2, 3, 5], known).map((x) => x.version)).toEqual([4]);
    expect(pendingMigrations([1, 2], known).map((x) => x.version)).toEqual([3, 4, 5]);
    expect(pendingMigrations([1, 2, 3, 4, 5], known)).toEqual([]);
  });

  it('a schema missing a lower-numbered migration is refused with migrate: false and completed by migrate', async () => {
    const schema = newSchema();
    await (await open(schema)).close();
    // As if migration 9 were registered after a higher one was applied: undo it and forget it.
    await admin.query(`DROP FUNCTION "${schema}".lease_held(bigint, timestamptz, text)`);
    await admin.query(`DELETE FROM "${schema}".schema_migrations WHERE version = 9`);
    const err = await openPostgres(PG_URL, { schema, migrate: false }).then(
      () => null,
      (e: unknown) => e as Error & { code: string },
    );
    expect(err?.code).toBe('SCHEMA_MISMATCH');
    expect(err?.message).toContain(`at version ${LATEST_VERSION} without 9`);
    const b = await open(schema);
    try {
      const { rows } = await admin.query(
        `SELECT version FROM "${schema}".schema_migrations ORDER BY version`,
      );
      expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((x) => x.version).sort((x, y) => x - y));
      const fn = await admin.query(
        `SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.proname = 'lease_held' AND n.nspname = $1`,
        [schema],
      );
      expect(fn.rows).toHaveLength(1);
      // The acquire that needs it works again, and refuses a held item with the holder's details.
      await b.acquire('m9', 'h1', 60_000);
      await expect(b.acquire('m9', 'h2', 60_000)).rejects.toMatchObject({
        code: 'LEASE_HELD',
        details: { holderId: 'h1' },
      });
    } finally {
      await b.close();
    }
  });

  it('migrate: false refuses a missing schema with SCHEMA_MISMATCH and a hint', async () => {
    const schema = newSchema();
    const err = await openPostgres(PG_URL, { schema, migrate: false }).then(
      () => null,
      (e: unknown) => e as Error & { code: string },
    );
    expect(err?.code).toBe('SCHEMA_MISMATCH');
    expect(err?.message).toContain('worklease migrate');
    const { rows } = await admin.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    expect(rows).toHaveLength(0); // nothing was created
  });

  it('migrate: false refuses an older schema, and any open refuses a newer one', async () => {
    const schema = newSchema();
    await (await open(schema)).close();
    await admin.query(`DELETE FROM "${schema}".schema_migrations WHERE version = $1`, [LATEST_VERSION]);
    expect(await codeOf(openPostgres(PG_URL, { schema, migrate: false }))).toBe('SCHEMA_MISMATCH');
    await admin.query(`INSERT INTO "${schema}".schema_migrations (version, name) VALUES ($1, 'restored')`, [
      LATEST_VERSION,
    ]);
    const ok = await open(schema, { migrate: false });
    expect(await ok.admin.serverTime()).toBeInstanceOf(Date);
    await admin.query(`INSERT INTO "${schema}".schema_migrations (version, name) VALUES ($1, 'future')`, [
      LATEST_VERSION + 1,
    ]);
    expect(await codeOf(openPostgres(PG_URL, { schema, migrate: false }))).toBe('SCHEMA_MISMATCH');
    expect(await codeOf(openPostgres(PG_URL, { schema }))).toBe('SCHEMA_MISMATCH');
  });
});

describe('schemas', () => {
  it('keeps two schemas apart', async () => {
    const a = await open(newSchema());
    const b = await open(newSchema());
    const ra = await a.acquire('same-id', 'ha', 10_000);
    const rb = await b.acquire('same-id', 'hb', 10_000);
    // Each schema holds its own lease (tokens come from the clock, so they differ anyway).
    expect(await a.admin.get('same-id')).toMatchObject({ holderId: 'ha', fencingToken: ra.fencingToken });
    expect(await b.admin.get('same-id')).toMatchObject({ holderId: 'hb', fencingToken: rb.fencingToken });
    await a.checkpoint(ra, new Uint8Array([1]), 10_000);
    expect((await b.readCheckpoint(rb)).state).toBeNull();
    expect((await a.admin.list()).items.map((i) => i.holderId)).toEqual(['ha']);
  });

  it('continues tokens after a prune', async () => {
    const schema = newSchema();
    const b = await open(schema);
    let rec = await b.acquire('p', 'h', 10_000);
    await b.checkpoint(rec, new Uint8Array([7]), 10_000);
    await b.release(rec);
    const first = rec.fencingToken;
    rec = await b.acquire('p', 'h', 10_000);
    await b.release(rec);
    expect(rec.fencingToken > first).toBe(true);
    expect(await b.admin.prune({ olderThanMs: 0 })).toBe(1);
    expect(await b.admin.get('p')).toBeNull();
    // The tombstone keeps the token: raise the kept token far above the clock, so the next token can
    // only come from it (+1), not from the clock floor.
    await admin.query(`UPDATE "${schema}".leases SET token = $1 WHERE work_id = 'p'`, [
      (rec.fencingToken + 10n ** 12n).toString(),
    ]);
    const next = await b.acquire('p', 'h2', 10_000);
    expect(next.fencingToken).toBe(rec.fencingToken + 10n ** 12n + 1n);
    // The checkpoint went with the pruned row; the pruned lease was released, so the handoff is clean.
    expect(await b.readCheckpoint(next)).toEqual({ state: null, cleanHandoff: true });
    expect((await b.admin.get('p'))?.predecessorEnd).toBe('released');
    // Pruning again keeps the newest token.
    await b.release(next);
    expect(await b.admin.prune({ olderThanMs: 0 })).toBe(1);
    expect((await b.acquire('p', 'h3', 10_000)).fencingToken).toBe(next.fencingToken + 1n);
  });

  it('refuses malformed list and change cursors with INVALID_ARGUMENT', async () => {
    const b = await open(newSchema());
    for (const cursor of ['x', 'pg1:', 'pg1:12:3', 'pg1:1:2:3:!!', 'pg1:99999999999999999999999']) {
      expect(await codeOf(b.admin.changes({ cursor }))).toBe('INVALID_ARGUMENT');
    }
    for (const cursor of ['x', 'l1:', 'l1:%%%', 'pg1:1']) {
      expect(await codeOf(b.admin.list({ cursor }))).toBe('INVALID_ARGUMENT');
    }
  });

  it('filters by a prefix holding LIKE wildcards literally', async () => {
    const b = await open(newSchema());
    for (const id of ['a%b', 'a%c', 'axb', 'a_b', 'a', 'b']) await b.acquire(id, 'h', 10_000);
    const ids = async (workIdPrefix: string): Promise<string[]> =>
      (await b.admin.list({ workIdPrefix })).items.map((i) => i.workId);
    expect(await ids('a%')).toEqual(['a%b', 'a%c']);
    expect(await ids('a_')).toEqual(['a_b']);
    expect(await ids('a')).toEqual(['a', 'a%b', 'a%c', 'a_b', 'axb']);
  });
});

describe('refusals (migration 8: decided in the UPDATE, raised as WL001)', () => {
  /** Commits an update of the lease row while `call` waits on its row lock; returns the call's outcome. */
  async function whileLocked<T>(schema: string, workId: string, set: string, call: () => Promise<T>) {
    const locker = new pg.Client({ connectionString: PG_URL });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`UPDATE "${schema}".leases SET ${set} WHERE work_id = $1`, [workId]);
      const outcome = call().then(
        (value) => ({ value }),
        (error: WorkleaseError) => ({ error }),
      );
      // The call is now waiting on the row lock (it has no other way to finish before COMMIT).
      await expect
        .poll(async () => {
          const { rows } = await admin.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'`,
            [`"${schema}".leases`],
          );
          return rows[0].n;
        })
        .toBe(1);
      await locker.query('COMMIT');
      return await outcome;
    } finally {
      await locker.end();
    }
  }

  it('a renew waiting on a concurrent takeover is refused from the row that takeover committed', async () => {
    const schema = newSchema();
    const b = await open(schema);
    const rec = await b.acquire('taken', 'h', 60_000);
    const out = await whileLocked(schema, 'taken', 'token = token + 7', () => b.renew(rec, 60_000));
    expect('error' in out && out.error.code).toBe('FENCED');
    const details = 'error' in out ? (out.error.details as { storedToken: bigint }) : undefined;
    expect(details?.storedToken).toBe(rec.fencingToken + 7n);
  });

  it('a renew waiting on a write that keeps its lease succeeds after it, on the latest row', async () => {
    const schema = newSchema();
    const b = await open(schema);
    const rec = await b.acquire('kept', 'h', 60_000);
    const out = await whileLocked(schema, 'kept', 'version = version + 10', () => b.renew(rec, 60_000));
    expect('value' in out && out.value.fencingToken).toBe(rec.fencingToken);
    expect((await b.admin.get('kept'))?.version).toBe(12n);
  });

  it('a refused call writes nothing and leaves its connection usable (pool of 1)', async () => {
    const schema = newSchema();
    const b = await open(schema, { poolSize: 1 });
    const rec = await b.acquire('r', 'h', 60_000);
    const stale = { ...rec, fencingToken: rec.fencingToken - 1n };
    for (let i = 0; i < 3; i++) {
      expect(await codeOf(b.renew(stale, 60_000))).toBe('FENCED');
      expect(await codeOf(b.checkpoint(stale, new Uint8Array([1]), 60_000))).toBe('FENCED');
      expect(await codeOf(b.release(stale))).toBe('FENCED');
    }
    const before = await b.admin.get('r');
    expect(before?.version).toBe(1n);
    expect(before?.checkpointSize).toBe(null);
    expect((await b.renew(rec, 60_000)).fencingToken).toBe(rec.fencingToken);
    await b.release(rec);
    expect(await codeOf(b.release(rec))).toBe('LEASE_EXPIRED');
    const { rows } = await admin.query(`SELECT count(*)::int AS n FROM "${schema}".lease_states`);
    expect(rows[0].n).toBe(0);
  });

  it('a held acquire writes nothing and reads the holder from its NOTICE; without the notice it is still LEASE_HELD', async () => {
    const schema = newSchema();
    const b = await open(schema, { poolSize: 1 });
    const rec = await b.acquire('held', 'h1', 60_000);
    const before = await b.admin.get('held');
    const err = (await b.acquire('held', 'h2', 60_000).catch((e: WorkleaseError) => e)) as WorkleaseError;
    expect(err.code).toBe('LEASE_HELD');
    expect(err.details).toEqual({
      workId: 'held',
      holderId: 'h1',
      expiresAt: rec.expiresAt,
      storedToken: rec.fencingToken,
    });
    expect(await b.admin.get('held')).toEqual(before);
    // What a session with client_min_messages above NOTICE gets: no notice reaches the client.
    await admin.query(`CREATE OR REPLACE FUNCTION "${schema}".lease_held(tok bigint, exp timestamptz, holder text)
      RETURNS boolean LANGUAGE sql AS 'SELECT false'`);
    const quiet = (await b.acquire('held', 'h2', 60_000).catch((e: WorkleaseError) => e)) as WorkleaseError;
    expect(quiet.code).toBe('LEASE_HELD');
    expect(quiet.details).toEqual({ workId: 'held' });
    expect(await b.admin.get('held')).toEqual(before);
    // The one connection still serves the next call after two held acquires.
    expect((await b.renew(rec, 60_000)).fencingToken).toBe(rec.fencingToken);
  });

  it('a WL001 error without its stored row is an INTERNAL error, not a refusal', async () => {
    const schema = newSchema();
    const b = await open(schema);
    const rec = await b.acquire('odd', 'h', 60_000);
    // A lease_refused replaced by one that forgets the row (what a hand-edited schema could do).
    await admin.query(`CREATE OR REPLACE FUNCTION "${schema}".lease_refused(tok bigint, exp timestamptz, op text)
      RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION USING ERRCODE = 'WL001', DETAIL = 'x'; END $$`);
    const err = await b.renew({ ...rec, fencingToken: 1n }, 60_000).catch((e: WorkleaseError) => e);
    expect((err as WorkleaseError).code).toBe('INTERNAL');
    expect((err as Error).message).toContain('refusal came without its stored row (x)');
  });
});

describe('connections', () => {
  async function ourPids(schema: string): Promise<number[]> {
    const { rows } = await admin.query('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [
      `worklease:${schema}`,
    ]);
    return rows.map((r) => Number(r.pid));
  }

  it('recovers after the server terminates its connections', async () => {
    const schema = newSchema();
    const b = await open(schema, { poolSize: 3 });
    let rec = await b.acquire('r', 'h', 30_000);
    // Open all three connections of the pool and three lease calls connections.
    await Promise.all([
      b.admin.serverTime(),
      b.admin.serverTime(),
      b.admin.serverTime(),
      ...[0, 1, 2].map(() => b.renew(rec, 30_000)),
    ]);
    const pids = await ourPids(schema);
    expect(pids.length).toBeGreaterThan(0);
    await admin.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [pids]);
    await expect.poll(async () => (await ourPids(schema)).filter((p) => pids.includes(p))).toEqual([]);
    // Each call runs on a fresh connection or fails as unavailable (a pooled connection
    // may not have noticed yet that it is dead): never hangs, never a wrong answer.
    // At most one failure per pooled connection, then the pool is healthy again.
    const outcomes: string[] = [];
    for (let i = 0; i < 4 && outcomes.at(-1) !== 'OK'; i++) {
      outcomes.push(await codeOf(b.renew(rec, 30_000).then((r) => (rec = r))));
    }
    expect(outcomes.at(-1)).toBe('OK');
    for (const o of outcomes) expect(['OK', 'BACKEND_UNAVAILABLE']).toContain(o);
    const token = rec.fencingToken;
    for (let i = 0; i < 5; i++) rec = await b.renew(rec, 30_000);
    expect(rec.fencingToken).toBe(token);
    expect(await ourPids(schema)).not.toContain(pids[0]);
  });

  it('a call whose connection broke drops the idle ones too, so the next call runs on a fresh one', async () => {
    const schema = newSchema();
    const b = await open(schema, { poolSize: 4 });
    const recs = await Promise.all([0, 1, 2, 3].map((i) => b.acquire(`r${i}`, 'h', 30_000)));
    // Four lease calls at once open four lease calls connections (postgres/hot.ts); the pool's
    // own (migrations, reads) stay open beside them.
    await Promise.all(recs.map((r) => b.renew(r, 30_000)));
    await b.admin.serverTime();
    // On a busy machine the first connection can serve all four calls while the others still open:
    // wait until all four are up and idle, with the pool's, before one is made the most recent.
    await expect
      .poll(
        async () =>
          (
            await admin.query(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND state = 'idle'",
              [`worklease:${schema}`],
            )
          ).rows[0].n,
      )
      .toBeGreaterThanOrEqual(5);
    // The lease calls connections hand out the most recently returned one first: make that one known.
    const rec = await b.renew(recs[0]!, 30_000);
    const { rows } = await admin.query(
      'SELECT pid FROM pg_stat_activity WHERE application_name = $1 ORDER BY state_change DESC',
      [`worklease:${schema}`],
    );
    const [next, ...others] = rows.map((r) => Number(r.pid));
    // Three idle lease calls connections and at least one of the pool's.
    expect(others.length).toBeGreaterThanOrEqual(4);
    // Terminated synchronously (the event loop is blocked meanwhile), so the backend cannot have
    // noticed before the renew takes that connection: the renew fails on it.
    execFileSync('psql', [PG_URL, '-Atqc', `SELECT pg_terminate_backend(${next})`]);
    expect(await codeOf(b.renew(rec, 30_000))).toBe('BACKEND_UNAVAILABLE');
    // Every other one, of both kinds, was closed by the client, not left to fail a call each.
    await expect.poll(async () => (await ourPids(schema)).filter((p) => others.includes(p))).toEqual([]);
    expect((await b.renew(rec, 30_000)).fencingToken).toBe(rec.fencingToken);
    expect((await b.admin.get('r1'))?.fencingToken).toBe(recs[1]!.fencingToken);
  });

  it('fails an in-flight call with BACKEND_UNAVAILABLE when its connection is terminated', async () => {
    const schema = newSchema();
    const b = await open(schema, { poolSize: 2 });
    const rec = await b.acquire('locked', 'h', 30_000);
    const lock = await holdRow(schema, 'locked');
    try {
      const pending = codeOf(b.renew(rec, 30_000));
      // Wait until the renew is blocked on the row lock, then cut its connection.
      await lock.waiting();
      await admin.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [
        await ourPids(schema),
      ]);
      expect(await pending).toBe('BACKEND_UNAVAILABLE');
    } finally {
      await lock.close();
    }
    expect((await b.renew(rec, 30_000)).fencingToken).toBe(rec.fencingToken);
  });

  it('times out a blocked call after callTimeoutMs with BACKEND_UNAVAILABLE', async () => {
    const schema = newSchema();
    const b = await open(schema, { poolSize: 1, callTimeoutMs: 300 });
    const rec = await b.acquire('slow', 'h', 30_000);
    const lock = await holdRow(schema, 'slow');
    try {
      const started = Date.now();
      expect(await codeOf(b.renew(rec, 30_000))).toBe('BACKEND_UNAVAILABLE');
      expect(Date.now() - started).toBeLessThan(10_000); // liveness only
    } finally {
      await lock.close();
    }
    // The pool (size 1) is usable again.
    expect((await b.renew(rec, 30_000)).fencingToken).toBe(rec.fencingToken);
  });

  /** Runs `body` on a backend (4 connections, callTimeoutMs 400) opened through a TCP proxy. */
  async function behindProxy(body: (b: LeaseBackend, proxy: TcpProxy) => Promise<void>): Promise<void> {
    const proxy = await startProxy('127.0.0.1', Number(new URL(PG_URL).port || 5432));
    try {
      const b = await openPostgres(proxy.rewrite(PG_URL), {
        schema: newSchema(),
        poolSize: 4,
        callTimeoutMs: 400,
      });
      backends.push(b);
      await body(b, proxy);
    } finally {
      proxy.restore();
      await proxy.close();
    }
  }

  it('fails every call in flight soon after callTimeoutMs when the server stops answering, then recovers', async () => {
    await behindProxy(async (b, proxy) => {
      const recs = await Promise.all([0, 1, 2, 3].map((i) => b.acquire(`wire-${i}`, 'h', 30_000)));
      proxy.blackhole();
      const started = Date.now();
      const failed = await Promise.all(
        recs.map((r) =>
          b.renew(r, 30_000).then(
            () => null,
            (e: unknown) => ({ e: e as WorkleaseError, ms: Date.now() - started }),
          ),
        ),
      );
      for (const f of failed) {
        expect(f?.e.code).toBe('BACKEND_UNAVAILABLE');
        // "no answer … within": written and not answered; "waiting for a connection … took over":
        // its connection was still being opened (a loaded machine) when the server went silent.
        expect(f?.e.message).toMatch(/within 400 ms|took over 400 ms/);
        // The deadline is swept every 40 ms (a tenth of the timeout): late by at most a tick.
        expect(f?.ms).toBeGreaterThanOrEqual(395);
        expect(f?.ms).toBeLessThan(2000);
      }
      proxy.restore();
      // The stalled connections were destroyed, not reused: the next calls run on fresh ones.
      const renewed = await Promise.all(recs.map((r) => b.renew(r, 30_000)));
      expect(renewed.map((r) => r.fencingToken)).toEqual(recs.map((r) => r.fencingToken));
    });
  });

  it('fails a call whose connection the silent server never finishes opening with BACKEND_UNAVAILABLE, then recovers', async () => {
    // No lease call has run yet, so none of their connections is open: the call waits for one
    // that never finishes opening. `pg`'s connect timeout once failed it as INTERNAL; now the
    // call's own deadline ends the wait.
    await behindProxy(async (b, proxy) => {
      proxy.blackhole();
      const started = Date.now();
      const err = (await b.acquire('unopened', 'h', 30_000).catch((e: unknown) => e)) as WorkleaseError;
      expect(err.code).toBe('BACKEND_UNAVAILABLE');
      expect(err.message).toContain('waiting for a connection to');
      expect(err.message).toContain('took over 400 ms');
      expect(Date.now() - started).toBeGreaterThanOrEqual(395);
      expect(Date.now() - started).toBeLessThan(2000);
      proxy.restore();
      expect((await b.acquire('unopened', 'h', 30_000)).fencingToken).toBeGreaterThan(0n);
    });
  });

  it('refuses an unreachable server with BACKEND_UNAVAILABLE', async () => {
    const err = await codeOf(openPostgres('postgres://postgres@127.0.0.1:1/test', { callTimeoutMs: 2000 }));
    expect(err).toBe('BACKEND_UNAVAILABLE');
  });
});

describe('change feed', () => {
  interface Seen {
    token: bigint;
    version: bigint;
    pruned: boolean;
  }

  function apply(model: Map<string, Seen>, c: LeaseChange): void {
    const old = model.get(c.workId);
    const newer =
      old === undefined ||
      c.fencingToken > old.token ||
      (c.fencingToken === old.token && c.version > old.version);
    if (newer)
      model.set(c.workId, { token: c.fencingToken, version: c.version, pruned: c.kind === 'pruned' });
  }

  it('misses no committed change while writers run concurrently', async () => {
    const schema = newSchema();
    const reader = await open(schema, { poolSize: 1 });
    const writers = await open(schema, { poolSize: 6 });
    let cursor = await reader.admin.changeCursor();
    const model = new Map<string, Seen>();
    let stop = false;

    const ids = Array.from({ length: 12 }, (_, i) => `item-${i}`);
    const writer = async (w: number): Promise<void> => {
      let n = 0;
      while (!stop) {
        const id = ids[(w * 7 + n++) % ids.length]!;
        let rec: LeaseRecord;
        try {
          rec = await writers.acquire(id, `w${w}`, 1 + (n % 3) * 1000);
        } catch {
          continue;
        }
        await writers.checkpoint(rec, new Uint8Array([w, n & 0xff]), 5_000).catch(() => {});
        if (n % 4 === 0) {
          await writers.admin
            .forceRelease(id, { expectedToken: rec.fencingToken, operator: 'test', reason: 'churn' })
            .catch(() => {});
        } else if (n % 5 === 0) {
          await writers.admin.prune({ olderThanMs: 0, limit: 3 });
        } else {
          await writers.release(rec).catch(() => {});
        }
      }
    };
    const running = [0, 1, 2, 3].map(writer);
    const deadline = Date.now() + 2_500;
    let polls = 0;
    while (Date.now() < deadline) {
      const batch = await reader.admin.changes({ cursor, limit: 7 });
      expect(batch.gap).toBe(false);
      for (const c of batch.changes) apply(model, c);
      cursor = batch.cursor;
      polls++;
    }
    stop = true;
    await Promise.all(running);
    // Drain: the feed may need a few polls (paging, duplicates) to reach the head.
    for (let i = 0; i < 1000; i++) {
      const batch = await reader.admin.changes({ cursor, limit: 50 });
      for (const c of batch.changes) apply(model, c);
      cursor = batch.cursor;
      if (batch.changes.length === 0) break;
    }
    expect(polls).toBeGreaterThan(5);

    const listed = (await reader.admin.list({ limit: 10_000 })).items;
    const live = new Map([...model].filter(([, s]) => !s.pruned));
    expect(new Set(live.keys())).toEqual(new Set(listed.map((i) => i.workId)));
    for (const info of listed) {
      const seen = live.get(info.workId);
      expect(seen?.token).toBe(info.fencingToken);
      // Checkpoints bump the version without a feed entry (the feed carries ownership changes):
      // a live lease may be ahead of what the feed last said; an ended one was last written by its end.
      if (info.ended === null) expect(seen!.version <= info.version).toBe(true);
      else expect(seen?.version).toBe(info.version);
    }
  });

  it('pages a large batch and resumes exactly at the head', async () => {
    const b = await open(newSchema());
    const start = await b.admin.changeCursor();
    for (let i = 0; i < 25; i++) await b.acquire(`k${String(i).padStart(2, '0')}`, 'h', 10_000);
    let cursor = start;
    const seen: string[] = [];
    for (let i = 0; i < 10; i++) {
      const batch = await b.admin.changes({ cursor, limit: 10 });
      seen.push(...batch.changes.map((c) => c.workId));
      cursor = batch.cursor;
      if (batch.changes.length < 10) break;
    }
    expect(new Set(seen).size).toBe(25);
    const rec = await b.acquire('late', 'h', 10_000);
    const after = await b.admin.changes({ cursor });
    expect(after.changes.map((c) => [c.workId, c.kind, c.fencingToken])).toContainEqual([
      'late',
      'acquired',
      rec.fencingToken,
    ]);
  });
});

describe('change feed cost', () => {
  /** Shared buffers (hit + read) the plan of one `changes` statement touched, from EXPLAIN. */
  async function buffersOfPoll(schema: string, cursor: string): Promise<number> {
    const sql = buildStatements(schema, { serverVersionNum: 150000 }).changes.text;
    const params = changeScanParams(decodeChangeCursor(cursor), 1000);
    const { rows } = await admin.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, params);
    const plan = (rows[0] as { 'QUERY PLAN': [{ Plan: Record<string, number> }] })['QUERY PLAN'][0].Plan;
    return (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
  }

  it('an idle poll touches a few pages whatever the fleet size (20 000 rows)', async () => {
    const schema = newSchema();
    const b = await open(schema);
    await b.acquire('seed', 'h', 60_000);
    // 20 000 more rows, copies of the seed with other work ids (every column of the real schema).
    await admin.query(
      `INSERT INTO "${schema}".leases
       SELECT (jsonb_populate_record(l, jsonb_build_object('work_id', 'bulk-' || g))).*
       FROM "${schema}".leases l, generate_series(1, 20000) g`,
    );
    await admin.query(`ANALYZE "${schema}".leases`);
    const idle = await quietCursor(b.admin);
    // The change index of 20 000 rows has about a hundred pages; a scan from its left edge read them all.
    expect(await buffersOfPoll(schema, idle)).toBeLessThan(10);
    // And the cheap scan still finds what follows: the acquire, with the row as the renew left it.
    const rec = await b.renew(await b.acquire('after', 'h', 60_000), 60_000);
    const batch = await b.admin.changes({ cursor: idle });
    expect(batch.changes.map((c) => [c.workId, c.kind, c.fencingToken, c.version])).toContainEqual([
      'after',
      'acquired',
      rec.fencingToken,
      2n,
    ]);
  });
});

describe('LeaseInfo reads', () => {
  it('get, list, changes and forceRelease return the same LeaseInfo for a row with every field set', async () => {
    await expectLeaseInfoReadsAgree(await open(newSchema()));
  });

  it('reads timestamps as the millisecond a Date parsed from the timestamptz holds, in both epoch forms', async () => {
    const schema = newSchema();
    const b = await open(schema);
    const stamps = [
      '2024-05-01 12:00:00+00',
      '2024-05-01 12:00:00.123+00',
      '2024-05-01 12:00:00.123999+00',
      '2024-05-01 12:00:00.999999+00',
      '2024-05-01 12:00:00.000001+00',
      '1969-12-31 23:59:59.999999+00',
      '1969-12-31 23:59:59.0005+00',
      '1900-03-04 05:06:07.891234+00',
      '2200-12-31 23:59:59.999+00',
      // Whole milliseconds that floor(float8 epoch * 1000) puts one millisecond low.
      '2039-05-15 16:50:27.253+00',
      '1978-09-05 21:06:18.256+00',
      '1961-04-18 11:08:36.002+00',
    ];
    // Microsecond values on whole milliseconds are where a float8 epoch goes wrong.
    for (let i = 0; i < 200; i++) {
      const us = String(Math.floor(Math.random() * 1_000_000)).padStart(6, '0');
      stamps.push(
        `2026-0${1 + (i % 9)}-1${i % 10} 0${i % 10}:1${i % 10}:2${i % 10}.${i % 2 === 0 ? us : `${us.slice(0, 3)}000`}+00`,
      );
    }
    await admin.query(
      `INSERT INTO "${schema}".leases (work_id, holder_id, token, expires_at, ttl_ms, acquired_at, renewed_at,
         checkpointed_at, released_at, clean_handoff, predecessor_end, last_op, version, change_xid)
       SELECT 'ts-' || lpad(n::text, 4, '0'), 'h', 1, t, 1000, t, t, t, t, true, 'none', 'acquired', 1, pg_current_xact_id()
       FROM unnest($1::timestamptz[]) WITH ORDINALITY AS u(t, n)`,
      [stamps],
    );
    // What pg's own timestamptz parser makes of each value: the reference.
    const { rows: parsed } = await admin.query<{ work_id: string; t: Date }>(
      `SELECT work_id, expires_at AS t FROM "${schema}".leases ORDER BY work_id`,
    );
    expect(parsed).toHaveLength(stamps.length);

    const filters = { limit: 1000, after: undefined, from: 'ts-', below: 'ts.', holder: undefined };
    const text = { getTypeParser: () => (v: string) => v };
    for (const serverVersionNum of [130000, 150000]) {
      const q = buildStatements(schema, { serverVersionNum }).list(filters);
      const { rows } = await admin.query<string[]>({
        text: q.text,
        values: q.params,
        rowMode: 'array',
        types: text,
      });
      expect(rows.map((r) => r[0])).toEqual(parsed.map((p) => p.work_id));
      for (const [i, r] of rows.entries()) {
        const want = parsed[i]!.t.getTime();
        // expires_at, acquired_at, renewed_at, checkpointed_at, released_at
        for (const col of [3, 6, 7, 8, 9])
          expect(Number(r[col]), `${stamps[i]} (v${serverVersionNum})`).toBe(want);
      }
    }
    // And through the backend itself.
    const listed = (await b.admin.list({ workIdPrefix: 'ts-', limit: 1000 })).items;
    expect(listed.map((i) => i.expiresAt.getTime())).toEqual(parsed.map((p) => p.t.getTime()));
  });
});
