/**
 * What the Redis backend does when the server loses data (docs/durability.md), on private
 * `redis-server` processes on loopback ports that the tests start, kill and promote themselves:
 * - a restart without persistence mid-run: every call after the wipe fails with DATASET_LOST, and
 *   no token is handed out twice, also once a new process starts a new dataset;
 * - a failover to a lagging replica: acknowledged acquires are lost, yet the promoted replica hands
 *   out no token twice (tokens are floored by the server clock); with `durability: { replicas: 1 }`
 *   the writes the replica never confirmed are reported as NOT_DURABLE, never as successes;
 * - dataset identity at open (shared server, own prefixes): layout 2 is upgraded in place, a prefix
 *   whose bucket or meta key was lost is refused, not recreated.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_BUCKETS, LAYOUT_VERSION, Layout } from '../../src/backends/redis/layout.ts';
import { STAGED_MIN_BYTES } from '../../src/backends/redis/scripts.ts';
import {
  type RedisServer,
  redisCall,
  startRedisServer,
  startReplicatedRedis,
} from '../../src/chaos/servers.ts';
import type { LeaseBackend, LeaseRecord, OpenOptions } from '../../src/index.ts';
import { openBackend, WorkleaseError } from '../../src/index.ts';
import { REDIS_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';

const LIVE = 30_000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const codeOf = (err: unknown): string => (err instanceof WorkleaseError ? err.code : String(err));

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

async function open(url: string, extra: OpenOptions = {}): Promise<LeaseBackend> {
  const b = await openBackend(url, { keyPrefix: 'dur', callTimeoutMs: 3000, ...extra });
  cleanups.push(() => b.close());
  return b;
}

/** Every acquisition one churn loop made: item, token, and when it was acknowledged. */
interface Issued {
  item: string;
  token: bigint;
  at: number;
}

/**
 * Holders that take, checkpoint and release items in a loop until `stop()`: each iteration is one
 * acquisition. Outcomes are counted by error code; acknowledged acquisitions are kept.
 */
function churn(b: LeaseBackend, items: readonly string[], holders = 4, ttlMs = 2000) {
  let running = true;
  const issued: Issued[] = [];
  const codes = new Map<string, number>();
  const count = (code: string): void => void codes.set(code, (codes.get(code) ?? 0) + 1);
  const loops = Array.from({ length: holders }, async (_, h) => {
    let i = h;
    while (running) {
      const item = items[i++ % items.length]!;
      let rec: LeaseRecord;
      try {
        rec = await b.acquire(item, `h${h}`, ttlMs);
        issued.push({ item, token: rec.fencingToken, at: Date.now() });
        count('OK');
        await b.checkpoint(rec, Buffer.alloc(1024, h), ttlMs);
        await b.release(rec);
      } catch (err) {
        count(codeOf(err));
        await sleep(5);
      }
    }
  });
  return {
    issued,
    codes,
    async stop(): Promise<void> {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** Asserts no token was handed out twice for one item, and returns each item's highest token. */
function expectUnique(issued: readonly Issued[]): Map<string, bigint> {
  const seen = new Map<string, Set<bigint>>();
  const max = new Map<string, bigint>();
  for (const { item, token } of issued) {
    const s = seen.get(item) ?? new Set<bigint>();
    expect(s.has(token), `token ${token} of ${item} handed out twice`).toBe(false);
    s.add(token);
    seen.set(item, s);
    if (token > (max.get(item) ?? -1n)) max.set(item, token);
  }
  return max;
}

describe('Redis restarted without persistence mid-run', () => {
  let server: RedisServer;

  it('fails every call after the wipe with DATASET_LOST; a new dataset hands out no token twice', {
    timeout: 60_000,
  }, async () => {
    server = await startRedisServer();
    cleanups.push(() => server.stop());
    const items = ['wipe-a', 'wipe-b', 'wipe-c'];
    const b = await open(server.url);
    const before = churn(b, items);
    await sleep(600);
    await before.stop();
    const held = await b.acquire('wipe-held', 'h', LIVE);
    expect(before.codes.get('OK')).toBeGreaterThan(20);

    await server.restart();
    // The old process keeps calling: once reconnected, nothing is written, every call says why.
    const after = churn(b, items);
    await sleep(800);
    await after.stop();
    expect(after.issued).toEqual([]);
    expect(after.codes.get('DATASET_LOST')).toBeGreaterThan(0);
    for (const code of after.codes.keys()) expect(['DATASET_LOST', 'BACKEND_UNAVAILABLE']).toContain(code);
    for (const call of [
      () => b.renew(held, LIVE),
      () => b.checkpoint(held, Buffer.from('x'), LIVE),
      // A large state goes as a transaction on the lease calls connection (scripts.ts, checkpointStaged).
      () => b.checkpoint(held, Buffer.alloc(STAGED_MIN_BYTES), LIVE),
      () => b.release(held),
      () => b.readCheckpoint(held),
      () =>
        b.admin.forceRelease('wipe-held', { expectedToken: held.fencingToken, operator: 'o', reason: 'r' }),
      () => b.admin.readState('wipe-held'),
      () => b.admin.prune({ olderThanMs: 0 }),
      () => b.admin.changeCursor(),
      // Their index catch-up (layout.ts, Indexes) checks the dataset: no empty fleet after a wipe.
      () => b.admin.list({}),
      () => b.admin.count(),
    ]) {
      const err = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect(codeOf(err)).toBe('DATASET_LOST');
      expect((err as Error).message).toMatch(/dataset .* is gone/);
    }
    // Nothing was recreated by the old process: the server is still empty.
    expect(await redisCall(server.port, 'DBSIZE')).toBe(0);

    // A process that opens now (a fresh, empty Redis) starts a new dataset; its tokens stay above
    // every token of the lost one, because they are floored by the server clock.
    const fresh = await open(server.url);
    const next = churn(fresh, [...items, 'wipe-held']);
    await sleep(400);
    await next.stop();
    expect(next.issued.length).toBeGreaterThan(5);
    const oldMax = expectUnique([...before.issued, { item: 'wipe-held', token: held.fencingToken, at: 0 }]);
    for (const { item, token } of next.issued) {
      expect(token > (oldMax.get(item) ?? -1n), `${item}: ${token} after ${oldMax.get(item)}`).toBe(true);
    }
    expectUnique([...before.issued, ...next.issued]);
    // The old backend still refuses: the dataset it knew is not the one there now.
    const err = await b.acquire('wipe-a', 'late', LIVE).catch((e: unknown) => e);
    expect(codeOf(err)).toBe('DATASET_LOST');
    expect((err as Error).message).toContain('it now holds dataset');
    // Its old lease on an item the new dataset holds under a token of its own is refused as LOST
    // too, not FENCED: the check that such calls make only when they refuse (scripts.ts, REFUSE).
    const now = await fresh.admin.get('wipe-held');
    expect(now !== null && now.fencingToken !== held.fencingToken).toBe(true);
    for (const call of [
      () => b.renew(held, LIVE),
      () => b.checkpoint(held, Buffer.from('x'), LIVE),
      () => b.release(held),
      () => b.readCheckpoint(held),
    ]) {
      const lost = await call().catch((e: unknown) => e);
      expect(codeOf(lost)).toBe('DATASET_LOST');
      expect((lost as Error).message).toContain('it now holds dataset');
    }
  });
});

describe('failover to a lagging replica', () => {
  /**
   * Churns on the master in sync (phase A), then with the replica frozen (phase B: acknowledged by
   * the master only), kills the master and promotes the replica, and churns on it (phase C).
   */
  async function run(extra: OpenOptions) {
    // One pair per case, each stopped by its own cleanup.
    const pair = await startReplicatedRedis();
    cleanups.push(() => pair.stop());
    const items = ['fo-a', 'fo-b', 'fo-c', 'fo-d'];
    const b = await open(pair.url, extra);
    const a = churn(b, items);
    await sleep(500);
    // With durability, a confirmation that took longer than its timeout (a loaded machine) fails
    // NOT_DURABLE and leaves the item held for its ttl: phase A goes on until it has successes.
    const enough = Date.now() + 10_000;
    while ((a.codes.get('OK') ?? 0) <= 5 && Date.now() < enough) await sleep(50);
    await a.stop();
    await pair.sync();
    pair.lag();
    const lagging = churn(b, items);
    await sleep(500);
    await lagging.stop();
    await pair.failover();
    // What the promoted replica holds of each item, before anyone writes to it.
    const survived = new Map<string, bigint>();
    for (const item of items) {
      const info = await b.admin.get(item).catch(() => null);
      if (info !== null) survived.set(item, info.fencingToken);
    }
    const c = churn(b, items);
    const deadline = Date.now() + 10_000;
    while ((c.codes.get('OK') ?? 0) < 20 && Date.now() < deadline) await sleep(50);
    await c.stop();
    return { a, lagging, c, survived };
  }

  it('loses acknowledged acquires, yet hands out no token twice', { timeout: 60_000 }, async () => {
    const { a, lagging, c, survived } = await run({});
    expect(lagging.issued.length, 'acquires acknowledged while the replica lagged').toBeGreaterThan(4);
    const before = expectUnique([...a.issued, ...lagging.issued]);
    // The failover lost writes: some item's latest acknowledged token is not on the promoted replica.
    const lost = [...before].filter(([item, token]) => (survived.get(item) ?? -1n) < token);
    expect(lost.length, 'items whose acknowledged acquires were lost').toBeGreaterThan(0);
    expect(c.codes.get('OK')).toBeGreaterThanOrEqual(20);
    // The new rule: every token after the failover is above every token before it, lost ones included.
    for (const { item, token } of c.issued) {
      expect(token > before.get(item)!, `${item}: ${token} after ${before.get(item)}`).toBe(true);
    }
    expectUnique([...a.issued, ...lagging.issued, ...c.issued]);
  });

  it('with durability { replicas: 1 }, what the replica did not confirm fails with NOT_DURABLE, never succeeds', {
    timeout: 60_000,
  }, async () => {
    const { a, lagging, c, survived } = await run({ durability: { replicas: 1, timeoutMs: 100 } });
    expect(a.codes.get('OK'), JSON.stringify([...a.codes])).toBeGreaterThan(5);
    // With the replica frozen no acquire (or checkpoint) can be confirmed: none is reported a success.
    expect(lagging.issued).toEqual([]);
    expect(lagging.codes.get('NOT_DURABLE')).toBeGreaterThan(0);
    // LEASE_HELD: an acquire that was not confirmed still holds the item on the master until its ttl.
    for (const code of lagging.codes.keys()) expect(['NOT_DURABLE', 'LEASE_HELD']).toContain(code);
    // Everything that was reported a success survived the failover.
    const before = expectUnique(a.issued);
    for (const [item, token] of before) expect(survived.get(item)! >= token).toBe(true);
    for (const { item, token } of c.issued) expect(token > before.get(item)!).toBe(true);
    expectUnique([...a.issued, ...c.issued]);
  });
});

describe('dataset identity at open (shared server, own prefixes)', () => {
  const prefixes: string[] = [];
  afterAll(async () => {
    for (const p of prefixes) await dropNamespace({ kind: 'redis', url: REDIS_URL }, p);
  });
  const fresh = (): string => {
    const p = uniqueNamespace('dsid');
    prefixes.push(p);
    return p;
  };
  const admin = (): Redis => {
    const r = new Redis(REDIS_URL);
    cleanups.push(async () => r.disconnect());
    return r;
  };

  it('upgrades layout 2 in place: leases kept, every bucket gets the dataset id', async () => {
    const prefix = fresh();
    const b = await open(REDIS_URL, { keyPrefix: prefix });
    const rec = await b.acquire('kept', 'h', LIVE);
    await b.checkpoint(rec, Buffer.from('state'), LIVE);
    await b.close();
    // Make it what layout 2 wrote: no dataset id anywhere.
    const r = admin();
    const L = new Layout(prefix, DEFAULT_BUCKETS);
    await r.hdel(L.meta, 'dataset', 'ready');
    await r.hset(L.meta, 'layout', '2');
    for (const key of L.id) await r.del(key);

    const refused = await openBackend(REDIS_URL, { keyPrefix: prefix, migrate: false }).catch(
      (e: unknown) => e,
    );
    expect(codeOf(refused)).toBe('SCHEMA_MISMATCH');
    expect((refused as Error).message).toContain('to upgrade it in place');
    // Two processes upgrading at once agree on one dataset.
    const [u1, u2] = await Promise.all([
      open(REDIS_URL, { keyPrefix: prefix }),
      open(REDIS_URL, { keyPrefix: prefix }),
    ]);
    const meta = await r.hgetall(L.meta);
    expect(meta).toMatchObject({
      layout: String(LAYOUT_VERSION),
      ready: '1',
      buckets: String(DEFAULT_BUCKETS),
    });
    for (const key of L.id) expect(await r.get(key)).toBe(meta.dataset);
    expect(Array.from((await u1.readCheckpoint(rec)).state ?? [])).toEqual(Array.from(Buffer.from('state')));
    await u2.renew(rec, LIVE);
    expect(
      await (await open(REDIS_URL, { keyPrefix: prefix, migrate: false })).admin.get('kept'),
    ).toMatchObject({
      holderId: 'h',
      fencingToken: rec.fencingToken,
    });
  });

  it('upgrades layout 3 in place by its number: leases kept, then release requests work', async () => {
    const prefix = fresh();
    const b = await open(REDIS_URL, { keyPrefix: prefix });
    const rec = await b.acquire('kept3', 'h', LIVE);
    await b.checkpoint(rec, Buffer.from('s3'), LIVE);
    await b.close();
    const r = admin();
    const L = new Layout(prefix, DEFAULT_BUCKETS);
    await r.hset(L.meta, 'layout', '3');
    const refused = await openBackend(REDIS_URL, { keyPrefix: prefix, migrate: false }).catch(
      (e: unknown) => e,
    );
    expect(codeOf(refused)).toBe('SCHEMA_MISMATCH');
    expect((refused as Error).message).toContain('to upgrade it in place');
    const dataset = await r.hget(L.meta, 'dataset');
    const u = await open(REDIS_URL, { keyPrefix: prefix });
    expect(await r.hgetall(L.meta)).toMatchObject({ layout: String(LAYOUT_VERSION), ready: '1', dataset });
    expect(Array.from((await u.readCheckpoint(rec)).state ?? [])).toEqual(Array.from(Buffer.from('s3')));
    await u.admin.requestRelease('kept3', { expectedToken: rec.fencingToken, operator: 'op', reason: 'r' });
    expect((await u.renew(rec, LIVE)).releaseRequested).toMatchObject({ operator: 'op', reason: 'r' });
  });

  it('upgrades layout 4 in place by its number: the indexes are rebuilt from the bucket hashes when first read', async () => {
    // Layout 4 wrote the listing and expiry indexes in the lease calls and kept no `ix` position;
    // here they are gone too (the worst case): the first read rebuilds them.
    const prefix = fresh();
    const b = await open(REDIS_URL, { keyPrefix: prefix });
    const recs = await Promise.all(
      Array.from({ length: 50 }, (_, i) => b.acquire(`kept4-${String(i).padStart(2, '0')}`, 'h', LIVE)),
    );
    await b.release(recs[0]!);
    await b.close();
    const r = admin();
    const L = new Layout(prefix, DEFAULT_BUCKETS);
    await r.hset(L.meta, 'layout', '4');
    for (const key of [...L.ids, ...L.exp, ...L.ix]) await r.del(key);
    const refused = await openBackend(REDIS_URL, { keyPrefix: prefix, migrate: false }).catch(
      (e: unknown) => e,
    );
    expect(codeOf(refused)).toBe('SCHEMA_MISMATCH');
    expect((refused as Error).message).toContain('to upgrade it in place');
    const u = await open(REDIS_URL, { keyPrefix: prefix });
    expect(await r.hget(L.meta, 'layout')).toBe(String(LAYOUT_VERSION));
    const page = await u.admin.list({ limit: 100 });
    expect(page.items.map((i) => i.workId)).toEqual(recs.map((x) => x.workId));
    expect(await u.admin.count()).toBe(50);
    expect(await u.admin.prune({ olderThanMs: 0 })).toBe(1);
    expect(await u.admin.count()).toBe(49);
    for (const key of L.ix) expect(await r.get(key), key).toMatch(/^\d+-\d+ \d+$/);
  });

  it('upgrades layout 5 in place by its number: leases kept, then holds and history work', async () => {
    // Layout 5 had no history streams, handoff keys or hold hashes: a layout 5 lease has none.
    const prefix = fresh();
    const b = await open(REDIS_URL, { keyPrefix: prefix });
    const rec = await b.acquire('kept5', 'h', LIVE);
    await b.checkpoint(rec, Buffer.from('s5'), LIVE);
    await b.close();
    const r = admin();
    const L = new Layout(prefix, DEFAULT_BUCKETS);
    const bucket = L.bucketOf('kept5');
    await r.del(L.historyKey(bucket, 'kept5'), L.handoffKey(bucket, 'kept5'), L.hold[bucket]!);
    await r.hset(L.meta, 'layout', '5');
    const refused = await openBackend(REDIS_URL, { keyPrefix: prefix, migrate: false }).catch(
      (e: unknown) => e,
    );
    expect(codeOf(refused)).toBe('SCHEMA_MISMATCH');
    expect((refused as Error).message).toContain('to upgrade it in place');
    const u = await open(REDIS_URL, { keyPrefix: prefix });
    expect(await r.hget(L.meta, 'layout')).toBe(String(LAYOUT_VERSION));
    expect(await u.admin.history('kept5')).toEqual([]);
    expect(await u.admin.get('kept5')).toMatchObject({ fencingToken: rec.fencingToken, hold: null });
    await u.admin.hold('kept5', { operator: 'op', reason: 'r' });
    await u.release(rec);
    expect(codeOf(await u.acquire('kept5', 'h2', LIVE).catch((e: unknown) => e))).toBe('ON_HOLD');
    await u.admin.unhold('kept5', { operator: 'op', reason: 'r' });
    const next = await u.acquire('kept5', 'h2', LIVE);
    expect((await u.admin.history('kept5')).map((e) => e.kind)).toEqual([
      'acquired',
      'unheld',
      'released',
      'held',
    ]);
    expect((await u.admin.handoffCheckpoint('kept5'))?.fencingToken).toBe(next.fencingToken);
  });

  it('cuts a history list to its newest 1 000 entries at write', { timeout: 120_000 }, async () => {
    const prefix = fresh();
    const b = await open(REDIS_URL, { keyPrefix: prefix });
    const L = new Layout(prefix, DEFAULT_BUCKETS);
    let last = await b.acquire('busy', 'w0', LIVE);
    await b.release(last);
    for (let i = 1; i <= 500; i++) {
      last = await b.acquire('busy', `w${i}`, LIVE);
      await b.release(last);
    }
    // 1 002 entries written: the two oldest (w0's) are gone, the newest kept.
    expect(await admin().llen(L.historyKey(L.bucketOf('busy'), 'busy'))).toBe(1000);
    const newest = await b.admin.history('busy', { limit: 1 });
    expect(newest.map((e) => `${e.kind} ${e.holderId}#${e.token}`)).toEqual([
      `released w500#${last.fencingToken}`,
    ]);
    let before = newest[0]!.id;
    const all = [...newest];
    for (;;) {
      const page = await b.admin.history('busy', { limit: 1000, before });
      if (page.length === 0) break;
      all.push(...page);
      before = page.at(-1)!.id;
    }
    expect(all).toHaveLength(1000);
    expect(all.at(-1)).toMatchObject({ kind: 'acquired', holderId: 'w1' });
  });

  it('opens a prefix that lost one bucket without recreating it; refuses one that lost its meta key', async () => {
    const prefix = fresh();
    const b = await open(REDIS_URL, { keyPrefix: prefix });
    const L = new Layout(prefix, DEFAULT_BUCKETS);
    const rec = await b.acquire('victim', 'h', LIVE);
    const bucket = L.bucketOf('victim');
    const r = admin();
    // One bucket's keys gone, as when one Cluster master comes back empty.
    for (const key of L.keysOf('victim')) await r.del(key);
    expect(codeOf(await b.renew(rec, LIVE).catch((e: unknown) => e))).toBe('DATASET_LOST');
    expect(codeOf(await b.acquire('victim', 'h2', LIVE).catch((e: unknown) => e))).toBe('DATASET_LOST');
    expect(await r.exists(L.id[bucket]!, L.m[bucket]!)).toBe(0);
    // Other buckets are fine.
    const other = ['o1', 'o2', 'o3', 'o4'].find((w) => L.bucketOf(w) !== bucket)!;
    await b.acquire(other, 'h', LIVE);
    // A process that opens now serves the other buckets; the lost one stays lost (recover.ts).
    for (const migrate of [true, false]) {
      const c = await open(REDIS_URL, { keyPrefix: prefix, migrate });
      expect(codeOf(await c.acquire('victim', 'h3', LIVE).catch((e: unknown) => e))).toBe('DATASET_LOST');
      expect((await c.admin.get(other))?.holderId).toBe('h');
      // A listing would miss the lost bucket's items: it fails and says so (recover.ts).
      expect(codeOf(await c.admin.list({}).catch((e: unknown) => e))).toBe('DATASET_LOST');
      expect(await c.admin.datasetLoss!(['victim', other])).toMatchObject({
        lost: [bucket],
        affected: ['victim'],
      });
    }
    expect(await r.exists(L.id[bucket]!)).toBe(0);

    // The meta key gone while the buckets remain: refused too.
    const prefix2 = fresh();
    await open(REDIS_URL, { keyPrefix: prefix2 });
    const L2 = new Layout(prefix2, DEFAULT_BUCKETS);
    await r.del(L2.meta);
    const err = await openBackend(REDIS_URL, { keyPrefix: prefix2 }).catch((e: unknown) => e);
    expect(codeOf(err)).toBe('DATASET_LOST');
    expect((err as Error).message).toContain('worklease recover');
    expect(await r.exists(L2.meta)).toBe(0);
  });

  it('refuses durability settings the backend cannot honour, before any I/O', async () => {
    const refused = async (url: string, durability: unknown): Promise<string> =>
      codeOf(await openBackend(url, { durability } as OpenOptions).catch((e: unknown) => e));
    // Port 1: a refused option never gets as far as connecting.
    expect(await refused('redis://127.0.0.1:1', { synchronousCommit: 'on' })).toBe('INVALID_ARGUMENT');
    expect(await refused('redis://127.0.0.1:1', { replicas: -1 })).toBe('INVALID_ARGUMENT');
    expect(await refused('redis://127.0.0.1:1', { replicas: 1, timeoutMs: 20_000 })).toBe('INVALID_ARGUMENT');
    expect(await refused('redis://127.0.0.1:1', { wait: 1 })).toBe('INVALID_ARGUMENT');
    expect(await refused('postgres://127.0.0.1:1/x', { replicas: 1 })).toBe('INVALID_ARGUMENT');
    expect(await refused('postgres://127.0.0.1:1/x', { synchronousCommit: 'sometimes' })).toBe(
      'INVALID_ARGUMENT',
    );
    expect(await refused('pglite://memory', { synchronousCommit: 'on' })).toBe('INVALID_ARGUMENT');
  });

  it('with durability on a server without replicas, every token write fails NOT_DURABLE; reads and renews work', async () => {
    const prefix = fresh();
    const plain = await open(REDIS_URL, { keyPrefix: prefix });
    const rec = await plain.acquire('nd', 'h', LIVE);
    const b = await open(REDIS_URL, { keyPrefix: prefix, durability: { replicas: 1, timeoutMs: 50 } });
    const err = await b.acquire('nd-2', 'h', LIVE).catch((e: unknown) => e);
    expect(codeOf(err)).toBe('NOT_DURABLE');
    expect((err as WorkleaseError).details).toMatchObject({ replicas: 1, acknowledged: 0, timeoutMs: 50 });
    expect(codeOf(await b.checkpoint(rec, Buffer.from('x'), LIVE).catch((e: unknown) => e))).toBe(
      'NOT_DURABLE',
    );
    // The write did happen on the master (the error says it may survive): the checkpoint is there.
    expect(Array.from((await b.readCheckpoint(rec)).state ?? [])).toEqual([0x78]);
    await b.renew(rec, LIVE);
    expect(
      codeOf(
        await b.admin
          .forceRelease('nd', { expectedToken: rec.fencingToken, operator: 'o', reason: 'r' })
          .catch((e: unknown) => e),
      ),
    ).toBe('NOT_DURABLE');
  });
});
