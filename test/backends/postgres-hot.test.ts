/**
 * What migration 6 changed on PostgreSQL and PGlite: renew and checkpoint are HOT updates
 * (no indexed column written, no change-feed entry), and the end of a lease is only announced
 * (NOTIFY) while a waiter asked for it with `admin.notifyEnd`.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPglite } from '../../src/backends/pglite/index.ts';
import { openPostgres } from '../../src/backends/postgres/index.ts';
import { buildStatements } from '../../src/backends/sql/statements.ts';
import { claim, type LeaseBackend } from '../../src/index.ts';
import { codeOf, PG_URL, uniqueNamespace } from '../support/backends.ts';
import { quietCursor } from '../support/feed.ts';
import { holdRow, type RowLock } from '../support/row-lock.ts';
import { createSchemaAt } from '../support/schema.ts';

const schemas: string[] = [];
const backends: LeaseBackend[] = [];
let admin: pg.Client;
const HOUR = 3_600_000;

/** The backend's statements for `schema`, to run by hand (EXPLAIN, or in holdRow's transaction). */
const statementsOf = (schema: string) => buildStatements(schema, { serverVersionNum: 150000 });

async function openPg(): Promise<{ b: LeaseBackend; schema: string }> {
  const schema = uniqueNamespace('pgh');
  schemas.push(schema);
  const b = await openPostgres(PG_URL, { schema, poolSize: 4 });
  backends.push(b);
  return { b, schema };
}

/** A new schema as the migrations up to `version` left it (and its quoted name), to upgrade by opening. */
async function schemaAt(prefix: string, version: number): Promise<{ schema: string; s: string }> {
  const schema = uniqueNamespace(prefix);
  schemas.push(schema);
  return { schema, s: await createSchemaAt(admin, schema, version) };
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

describe('HOT renews on postgres', () => {
  it('renew and checkpoint write no indexed column: HOT updates, no feed entry, the version still bumps', async () => {
    const { b, schema } = await openPg();
    const recs = [];
    for (let i = 0; i < 20; i++) recs.push(await b.acquire(`hot-${i}`, 'h', 60_000));
    const cursor = await quietCursor(b.admin);
    const state = new Uint8Array(1024).fill(7);
    // An update can only be HOT when its new row version fits on the old one's page. Room comes
    // back when the page is pruned, which waits while any session of the database holds an older
    // snapshot (other test files run at the same time): such an update goes to another page, not
    // HOT whatever it wrote. So the updates that moved the row are counted, and every update that
    // did not move it must have been HOT.
    const pageOf = async (workId: string): Promise<number> =>
      (
        await admin.query(
          `SELECT (ctid::text::point)[0]::int AS page FROM "${schema}".leases WHERE work_id = $1`,
          [workId],
        )
      ).rows[0].page;
    const pages = new Map<string, number>();
    for (const r of recs) pages.set(r.workId, await pageOf(r.workId));
    let moved = 0;
    const write = async (workId: string, call: () => Promise<unknown>): Promise<void> => {
      await call();
      const page = await pageOf(workId);
      if (page !== pages.get(workId)) moved++;
      pages.set(workId, page);
    };
    for (const r of recs) await write(r.workId, () => b.checkpoint(r, state, 60_000));
    for (let round = 0; round < 10; round++)
      for (const r of recs) await write(r.workId, () => b.renew(r, 60_000));
    expect((await b.admin.changes({ cursor })).changes).toEqual([]);
    expect((await b.admin.get('hot-0'))?.version).toBe(12n);
    // A backend flushes its table statistics when it exits (when idle, only every 10 s).
    await b.close();
    let stats = { upd: 0, hot: 0 };
    await expect
      .poll(
        async () => {
          const { rows } = await admin.query(
            `SELECT n_tup_upd::int AS upd, n_tup_hot_upd::int AS hot FROM pg_stat_user_tables
             WHERE schemaname = $1 AND relname = 'leases'`,
            [schema],
          );
          stats = rows[0];
          return stats.upd;
        },
        { timeout: 10_000, interval: 100 },
      )
      .toBe(recs.length * 11);
    // Run alone, all 220 were HOT; before migration 6 none was (change_xid is indexed), and each of
    // those non-HOT versions stayed on its page while there was room.
    expect(stats.upd - stats.hot).toBe(moved);
    expect(stats.hot).toBeGreaterThan(0);
    const { rows } = await admin.query(
      `SELECT reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = $1 AND c.relname = 'leases'`,
      [schema],
    );
    expect(rows[0].reloptions).toContain('fillfactor=90');
  });

  it('a renew after a 1 KiB checkpoint logs a few hundred bytes of WAL: the checkpoint is not in the lease row', async () => {
    const { b, schema } = await openPg();
    const rec = await b.acquire('wal', 'h', 60_000);
    const state = new Uint8Array(1024).map((_, i) => (i * 31) & 0xff);
    await b.checkpoint(rec, state, 60_000);
    const renew = statementsOf(schema).renew.text;
    const walBytes: number[] = [];
    for (let i = 0; i < 9; i++) {
      const { rows } = await admin.query(`EXPLAIN (ANALYZE, WAL, FORMAT JSON) ${renew}`, [
        'wal',
        rec.fencingToken,
        60_000,
      ]);
      walBytes.push(rows[0]['QUERY PLAN'][0].Plan['WAL Bytes']);
    }
    // The median skips a full-page image (the first write to a page after a server checkpoint).
    // With the state in the row it was 1 167-1 227 B (the row version's changed middle holds it).
    const median = walBytes.sort((x, y) => x - y)[4]!;
    expect(median).toBeGreaterThan(0);
    expect(median).toBeLessThan(400);
    // The bytes are still there, unchanged, for the holder and for operators.
    expect((await b.readCheckpoint(rec)).state).toEqual(state);
    expect((await b.admin.get('wal'))?.checkpointSize).toBe(1024);
    expect((await b.admin.readState('wal', { offset: 1000, length: 100 }))?.bytes).toEqual(state.slice(1000));
  });

  it('migration 7 moves stored checkpoints out of the lease row; prune deletes them', async () => {
    // The schema as migration 6 left it, with a lease and its checkpoint in the row.
    const { schema, s } = await schemaAt('pgm', 6);
    await admin.query(
      `INSERT INTO ${s}.leases (work_id, holder_id, token, expires_at, ttl_ms, acquired_at, checkpointed_at, state,
         clean_handoff, predecessor_end, last_op, version, change_xid)
       VALUES ('old', 'h', 5, clock_timestamp() + interval '1 minute', 60000, clock_timestamp(), clock_timestamp(),
         '\\x010203', true, 'none', 'acquired', 1, pg_current_xact_id()),
         ('bare', 'h', 1, clock_timestamp() + interval '1 minute', 60000, clock_timestamp(), NULL,
         NULL, true, 'none', 'acquired', 1, pg_current_xact_id())`,
    );
    const b = await openPostgres(PG_URL, { schema });
    backends.push(b);
    const rec = { workId: 'old', holderId: 'h', fencingToken: 5n, expiresAt: new Date() };
    expect((await b.readCheckpoint(rec)).state).toEqual(new Uint8Array([1, 2, 3]));
    expect((await b.admin.get('old'))?.checkpointSize).toBe(3);
    expect((await b.admin.get('bare'))?.checkpointSize).toBe(null);
    expect((await b.admin.readState('old'))?.bytes).toEqual(new Uint8Array([1, 2, 3]));
    const { rows: cols } = await admin.query(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'leases'`,
      [schema],
    );
    expect(cols.map((c) => c.column_name)).not.toContain('state');
    // A fenced reader gets no bytes; prune drops the checkpoint with the lease.
    await expect(b.readCheckpoint({ ...rec, fencingToken: 4n })).rejects.toMatchObject({ code: 'FENCED' });
    await b.release(rec);
    expect(await b.admin.prune({ olderThanMs: 0, limit: 10 })).toBe(1);
    const { rows } = await admin.query(`SELECT work_id FROM ${s}.lease_states`);
    expect(rows).toEqual([]);
  });

  it('a row last written by a renew or checkpoint of an older worklease comes out of the feed as its ownership change', async () => {
    const { b, schema } = await openPg();
    const cursor = await b.admin.changeCursor();
    const plain = await b.acquire('old-renewed', 'h', 60_000);
    const asked = await b.acquire('old-checkpointed', 'h', 60_000);
    await b.admin.requestRelease('old-checkpointed', {
      expectedToken: asked.fencingToken,
      operator: 'op',
      reason: 'test',
    });
    // What renew and checkpoint wrote before migration 6.
    await admin.query(
      `UPDATE "${schema}".leases SET last_op = CASE work_id WHEN 'old-renewed' THEN 'renewed' ELSE 'checkpointed' END,
         version = version + 1, change_xid = pg_current_xact_id()`,
    );
    const kinds = new Map(
      (await b.admin.changes({ cursor })).changes.map((c) => [c.workId, [c.kind, c.fencingToken]]),
    );
    expect(kinds.get('old-renewed')).toEqual(['acquired', plain.fencingToken]);
    expect(kinds.get('old-checkpointed')).toEqual(['release-requested', asked.fencingToken]);
  });

  it('migration 10 turns the lease table CHECKs into domains in place: rows kept, no rewrite, bad values still refused', async () => {
    // The schema as migration 9 left it, with a released lease in it.
    const { schema, s } = await schemaAt('pgd', 9);
    await admin.query(
      `INSERT INTO ${s}.leases (work_id, holder_id, token, expires_at, ttl_ms, acquired_at, released_at,
         clean_handoff, predecessor_end, ended, last_op, version, change_xid)
       VALUES ('old', 'h', 5, clock_timestamp() - interval '1 minute', 60000, clock_timestamp(), clock_timestamp(),
         false, 'expired', 'released', 'released', 3, pg_current_xact_id())`,
    );
    const fileOf = async (): Promise<string> =>
      (
        await admin.query(`SELECT relfilenode::text AS f FROM pg_class WHERE oid = $1::regclass`, [
          `${s}.leases`,
        ])
      ).rows[0].f;
    const before = await fileOf();
    const b = await openPostgres(PG_URL, { schema });
    backends.push(b);
    expect(await fileOf()).toBe(before);
    const old = await b.admin.get('old');
    expect(old).toMatchObject({
      fencingToken: 5n,
      ended: 'released',
      predecessorEnd: 'expired',
      version: 3n,
    });
    // No CHECK is left on the table; the domains' checks hold for the stored rows (validated).
    const checks = await admin.query(`SELECT conname FROM pg_constraint WHERE conrelid = $1::regclass`, [
      `${s}.leases`,
    ]);
    expect(checks.rows.map((r) => r.conname)).toEqual(['leases_pkey']);
    const domains = await admin.query(
      `SELECT t.typname, c.convalidated FROM pg_constraint c JOIN pg_type t ON t.oid = c.contypid
        WHERE t.typnamespace = $1::regnamespace ORDER BY t.typname`,
      [s],
    );
    expect(domains.rows).toEqual([
      // Migration 13's, of the history table.
      { typname: 'history_kind', convalidated: true },
      { typname: 'lease_end', convalidated: true },
      { typname: 'lease_op', convalidated: true },
      { typname: 'lease_predecessor_end', convalidated: true },
    ]);
    // A value outside each list is refused (check_violation), and the row stays as it was.
    for (const set of [`last_op = 'bogus'`, `ended = 'expired'`, `predecessor_end = 'pruned'`]) {
      await expect(admin.query(`UPDATE ${s}.leases SET ${set} WHERE work_id = 'old'`)).rejects.toMatchObject({
        code: '23514',
      });
    }
    await expect(
      admin.query(
        `INSERT INTO ${s}.leases (work_id, holder_id, token, expires_at, ttl_ms, acquired_at, clean_handoff,
           predecessor_end, last_op, version, change_xid)
         VALUES ('new', 'h', 1, clock_timestamp(), 1000, clock_timestamp(), true, 'none', 'taken', 1, pg_current_xact_id())`,
      ),
    ).rejects.toMatchObject({ code: '23514' });
    expect(await b.admin.get('old')).toEqual(old);
    // The lease calls run on the upgraded table; a release still notifies a waiter that asked.
    const next = await b.acquire('old', 'h2', 60_000);
    expect(next.fencingToken).toBeGreaterThan(5n);
    expect(await b.admin.get('old')).toMatchObject({
      predecessorEnd: 'released',
      cleanHandoff: true,
      ended: null,
    });
    expect((await b.renew(next, 60_000)).fencingToken).toBe(next.fencingToken);
    expect(await b.admin.notifyEnd!('old', 60_000)).toBe(true);
    const listener = new pg.Client({ connectionString: PG_URL });
    await listener.connect();
    try {
      const heard = new Promise<string>((resolve) =>
        listener.on('notification', (n) => resolve(n.payload ?? '')),
      );
      await listener.query(`LISTEN "wl_ended_${schema}"`);
      await b.release(next);
      expect(await heard).toBe('old');
    } finally {
      await listener.end();
    }
  });

  it('migration 11 drops the end trigger and its function; the ending statements notify a waiter themselves', async () => {
    // The schema as migration 10 left it, with a live lease whose holder a waiter asked about.
    const { schema, s } = await schemaAt('pgn', 10);
    const objects = async (): Promise<string[]> =>
      (
        await admin.query(
          `SELECT 'trigger ' || tgname AS o FROM pg_trigger WHERE tgrelid = $1::regclass AND NOT tgisinternal
           UNION ALL SELECT 'function ' || proname FROM pg_proc WHERE pronamespace = $2::regnamespace ORDER BY 1`,
          [`${s}.leases`, s],
        )
      ).rows.map((r) => r.o);
    expect(await objects()).toContain('trigger leases_ended');
    expect(await objects()).toContain('function notify_ended');
    const b = await openPostgres(PG_URL, { schema });
    backends.push(b);
    expect(await objects()).toEqual([
      'function acquire_late',
      // Migration 13's (docs/history.md).
      'function lease_expired',
      'function lease_held',
      'function lease_on_hold',
      'function lease_refused',
    ]);
    const listener = new pg.Client({ connectionString: PG_URL });
    await listener.connect();
    try {
      const heard: string[] = [];
      listener.on('notification', (n) => heard.push(n.payload ?? ''));
      await listener.query(`LISTEN "wl_ended_${schema}"`);
      // Not asked for: quiet. Asked for: one NOTIFY per ending call, release, force-release and prune.
      await b.release(await b.acquire('quiet', 'h', 60_000));
      const rel = await b.acquire('rel', 'h', 60_000);
      const forced = await b.acquire('forced', 'h', 60_000);
      for (const id of ['rel', 'forced']) expect(await b.admin.notifyEnd!(id, 60_000)).toBe(true);
      await b.release(rel);
      await b.admin.forceRelease('forced', {
        expectedToken: forced.fencingToken,
        operator: 'op',
        reason: 'test',
      });
      await expect.poll(() => heard, { timeout: 5000 }).toEqual(['rel', 'forced']);
      expect(await b.admin.prune({ olderThanMs: 0, limit: 100 })).toBe(3);
      await expect
        .poll(() => [...heard].sort(), { timeout: 5000 })
        .toEqual(['forced', 'forced', 'rel', 'rel']);
    } finally {
      await listener.end();
    }
  });
});

describe.each([
  { kind: 'postgres', open: async () => (await openPg()).b },
  {
    kind: 'pglite',
    open: async () => {
      const b = await openPglite('pglite://memory', { schema: uniqueNamespace('plh') });
      backends.push(b);
      return b;
    },
  },
])('end notifications on $kind', ({ open }) => {
  /** Watches ends; resolves once the watch is connected (its first onEnded(null)). */
  async function watch(b: LeaseBackend): Promise<{ seen: string[]; stop: () => void }> {
    const seen: string[] = [];
    let ready: () => void = () => {};
    const connected = new Promise<void>((r) => {
      ready = r;
    });
    const stop = b.admin.watchEnded!((workId) => {
      if (workId === null) ready();
      else seen.push(workId);
    });
    await connected;
    return { seen, stop };
  }

  it('a release, force-release or prune notifies only while a waiter asked for it', async () => {
    const b = await open();
    const w = await watch(b);
    try {
      // Nobody asked: no notification. Then the same ends, asked for: one each, in commit order,
      // so the asked-for ones arriving shows that the unasked ones would have arrived before them.
      const quiet = await b.acquire('quiet', 'h', 60_000);
      await b.release(quiet);
      const quietForced = await b.acquire('quiet-forced', 'h', 60_000);
      await b.admin.forceRelease('quiet-forced', {
        expectedToken: quietForced.fencingToken,
        operator: 'op',
        reason: 'test',
      });
      const rel = await b.acquire('asked', 'h', 60_000);
      expect(await b.admin.notifyEnd!('asked', 10_000)).toBe(true);
      await b.release(rel);
      const forced = await b.acquire('asked-forced', 'h', 60_000);
      expect(await b.admin.notifyEnd!('asked-forced', 10_000)).toBe(true);
      await b.admin.forceRelease('asked-forced', {
        expectedToken: forced.fencingToken,
        operator: 'op',
        reason: 'test',
      });
      await expect.poll(() => w.seen, { timeout: 5000 }).toEqual(['asked', 'asked-forced']);

      // The next acquire clears the request: the new holder's release is quiet again.
      const again = await b.acquire('asked', 'h2', 60_000);
      await b.release(again);
      // A request that ran out (1 ms) is no request.
      const short = await b.acquire('short', 'h', 60_000);
      expect(await b.admin.notifyEnd!('short', 1)).toBe(true);
      await new Promise((r) => setTimeout(r, 20));
      await b.release(short);
      // A prune asked for.
      const pr = await b.acquire('pruned', 'h', 60_000);
      expect(await b.admin.notifyEnd!('pruned', 10_000)).toBe(true);
      await b.admin.forceRelease('pruned', {
        expectedToken: pr.fencingToken,
        operator: 'op',
        reason: 'test',
      });
      await expect.poll(() => w.seen, { timeout: 5000 }).toEqual(['asked', 'asked-forced', 'pruned']);
      // An end does not consume the request (it holds its 10 s), an acquire does: the prune of
      // every ended row announces the two still asked for, not the others.
      expect(await b.admin.prune({ olderThanMs: 0, limit: 100 })).toBe(6);
      await expect
        .poll(() => [...w.seen].sort(), { timeout: 5000 })
        .toEqual(['asked', 'asked-forced', 'asked-forced', 'pruned', 'pruned']);
    } finally {
      w.stop();
    }
  });

  it('notifyEnd: true for a live lease, false for an ended, expired or missing one; writes no version', async () => {
    const b = await open();
    const rec = await b.acquire('live', 'h', 60_000);
    const cursor = await quietCursor(b.admin);
    expect(await b.admin.notifyEnd!('live', 5_000)).toBe(true);
    expect(await b.admin.notifyEnd!('live', 5_000)).toBe(true);
    expect((await b.admin.get('live'))?.version).toBe(1n);
    expect((await b.admin.changes({ cursor })).changes).toEqual([]);
    expect(await b.admin.notifyEnd!('missing', 5_000)).toBe(false);
    await b.release(rec);
    expect(await b.admin.notifyEnd!('live', 5_000)).toBe(false);
    await b.acquire('expiring', 'h', 1);
    await new Promise((r) => setTimeout(r, 10));
    expect(await b.admin.notifyEnd!('expiring', 5_000)).toBe(false);
  });

  it('notifyEnd refuses bad input with INVALID_ARGUMENT', async () => {
    const b = await open();
    await b.acquire('x', 'h', 60_000);
    for (const [id, ms] of [
      ['', 1000],
      ['x\u0000', 1000],
      [42, 1000],
      ['x', 0],
      ['x', -5],
      ['x', Number.NaN],
      ['x', Number.POSITIVE_INFINITY],
      ['x', 2 ** 31],
      ['x', '1000'],
    ] as const) {
      expect(
        await codeOf(b.admin.notifyEnd!(id as string, ms as number)),
        `${String(id)} ${String(ms)}`,
      ).toBe('INVALID_ARGUMENT');
    }
  });
  it('a waiter whose lease ended before it asked tries again at once; one whose ask failed falls back on the poll', async () => {
    const b = await open();
    const held = await b.acquire('raced', 'a', 60_000);
    // The release lands between the waiter's refused acquire and its notifyEnd: no NOTIFY will
    // come (nobody had asked), notifyEnd answers false, and the waiter must not sleep an hour.
    const racing: LeaseBackend = {
      ...b,
      admin: {
        ...b.admin,
        notifyEnd: async (workId, forMs) => {
          await b.release(held).catch(() => {});
          return b.admin.notifyEnd!(workId, forMs);
        },
      },
    };
    const started = performance.now();
    const won = await claim(racing, 'raced', 'b', { ttlMs: 60_000, waitMs: 30_000, waitPollMs: HOUR });
    expect(performance.now() - started).toBeLessThan(5000);
    expect(won.token > held.fencingToken).toBe(true);
    await won.release();

    const held2 = await b.acquire('failing', 'a', 60_000);
    const failing: LeaseBackend = {
      ...b,
      admin: { ...b.admin, notifyEnd: () => Promise.reject(new Error('connection lost')) },
    };
    const waiting = claim(failing, 'failing', 'b', { ttlMs: 60_000, waitMs: 30_000, waitPollMs: 200 });
    await new Promise((r) => setTimeout(r, 100));
    await b.release(held2);
    const got = await waiting;
    expect(got.token > held2.fencingToken).toBe(true);
    await got.release();
  });
});

describe('notifyEnd racing a release on postgres', () => {
  it('a notifyEnd that waited on the row while a release committed answers false: that release sent no NOTIFY', async () => {
    // notifyEnd reads its clock, then reaches the row. A release that starts more than 1 ms later
    // and commits first sets an expiry (its statement time - 1 ms) after notifyEnd's clock: a test
    // of the expiry alone called that ended lease live, and the waiter slept until its safety poll
    // (an hour in test/holder/wait.test.ts, which timed out once in CI). Here another session holds
    // the row lock while notifyEnd waits, and releases with the release statement itself.
    const { b, schema } = await openPg();
    const rec = await b.acquire('raced', 'h', 60_000);
    const lock = await holdRow(schema, 'raced');
    try {
      const asking = b.admin.notifyEnd!('raced', 10_000);
      await lock.waiting();
      await new Promise((r) => setTimeout(r, 20));
      expect(
        (await lock.query(statementsOf(schema).release.text, ['raced', rec.fencingToken.toString()]))
          .rowCount,
      ).toBe(1);
      await lock.commit();
      expect(await asking).toBe(false);
      expect((await b.admin.get('raced'))?.ended).toBe('released');
    } finally {
      await lock.close();
    }
  });

  it('a waiting claim whose notifyEnd waited on the row while the lease was released takes it at once', async () => {
    // The same race through claim: with the answer true, nothing woke the waiter before the end of
    // its 30 s wait (the holder's expiry is a minute away, the poll an hour): before the fix this
    // test timed out at vitest's 30 s.
    const { b, schema } = await openPg();
    const held = await b.acquire('raced-claim', 'a', 60_000);
    const locks: RowLock[] = [];
    try {
      const racing: LeaseBackend = {
        ...b,
        admin: {
          ...b.admin,
          notifyEnd: async (workId, forMs) => {
            const lock = await holdRow(schema, workId);
            locks.push(lock);
            const asking = b.admin.notifyEnd!(workId, forMs);
            await lock.waiting();
            await new Promise((r) => setTimeout(r, 20));
            await lock.query(statementsOf(schema).release.text, [workId, held.fencingToken.toString()]);
            await lock.commit();
            return asking;
          },
        },
      };
      const started = performance.now();
      const won = await claim(racing, 'raced-claim', 'b', {
        ttlMs: 60_000,
        waitMs: 30_000,
        waitPollMs: HOUR,
      });
      expect(performance.now() - started).toBeLessThan(5000);
      expect(won.token > held.fencingToken).toBe(true);
      expect(won.expired).toBe(false);
      await won.release();
      expect(locks.length).toBe(1);
    } finally {
      for (const lock of locks) await lock.close();
    }
  });
});

describe('a heartbeat racing an end of its lease on postgres', () => {
  // A renew or checkpoint takes its time at its start, then waits for the row (here behind another
  // session's lock, as behind a checkpoint of the same holder). A release that starts more than
  // 1 ms later and gets the row first sets an expiry (its time - 1 ms) after the waiting call's
  // time: judged by token and expiry alone, that call renewed the released lease, which then
  // refused every acquire until its new expiry while it read as released.
  /** A new lease on `workId` whose `call` (ttl 60 s) is sent while another session holds the row; once it waits. */
  async function heartbeatBehindLock(call: 'renew' | 'checkpoint', workId: string, ttlMs: number) {
    const { b, schema } = await openPg();
    const rec = await b.acquire(workId, 'h', ttlMs);
    const lock = await holdRow(schema, workId);
    try {
      const outcome = codeOf(
        call === 'renew' ? b.renew(rec, 60_000) : b.checkpoint(rec, new Uint8Array([1, 2, 3]), 60_000),
      );
      await lock.waiting();
      return { b, schema, rec, lock, outcome };
    } catch (err) {
      await lock.close();
      throw err;
    }
  }

  for (const call of ['renew', 'checkpoint'] as const) {
    it(`a ${call} that waited on the row while the lease was released is refused, and the lease stays released`, async () => {
      const { b, schema, rec, lock, outcome } = await heartbeatBehindLock(call, `raced-${call}`, 60_000);
      try {
        await new Promise((r) => setTimeout(r, 20));
        expect(
          (await lock.query(statementsOf(schema).release.text, [rec.workId, rec.fencingToken.toString()]))
            .rowCount,
        ).toBe(1);
        await lock.commit();
        expect(await outcome).toBe('LEASE_EXPIRED');
        const info = await b.admin.get(rec.workId);
        expect(info?.ended).toBe('released');
        expect(info!.expiresAt.getTime()).toBeLessThanOrEqual((await b.admin.serverTime()).getTime());
        expect(info?.checkpointSize ?? null).toBeNull();
        const next = await b.acquire(rec.workId, 'next', 60_000);
        expect(next.fencingToken > rec.fencingToken).toBe(true);
      } finally {
        await lock.close();
      }
    });

    it(`a ${call} that started before the lease ran out and waited on the row while it was pruned is refused`, async () => {
      // The same with a prune (olderThanMs 0) of the lease once it ran out: the waiting call's time
      // is before the expiry, so by token, expiry and end alone it renewed the tombstone, which
      // stayed hidden (get and list skip tombstones) while it refused every acquire.
      const { b, schema, rec, lock, outcome } = await heartbeatBehindLock(call, `pruned-${call}`, 1000);
      try {
        await expect
          .poll(async () => (await b.admin.serverTime()).getTime() > rec.expiresAt.getTime() + 20, {
            timeout: 5000,
          })
          .toBe(true);
        expect((await lock.query(statementsOf(schema).prune.text, [0, 100])).rows[0].pruned).toBe(1);
        await lock.commit();
        expect(await outcome).toBe('FENCED');
        expect(await b.admin.get(rec.workId)).toBeNull();
        const next = await b.acquire(rec.workId, 'next', 60_000);
        expect(next.fencingToken > rec.fencingToken).toBe(true);
      } finally {
        await lock.close();
      }
    });
  }
});
