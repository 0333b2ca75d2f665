/**
 * A lost shard costs its own items, not the fleet (recover.ts). A private 3-master Redis Cluster
 * (no replicas, no persistence) runs two holders per work item through a recording backend; one
 * master is restarted empty. The items on the other masters keep working, the lost ones fail
 * DATASET_LOST, a process that opens meanwhile serves the healthy ones and names the affected ones,
 * and `recoverBackend` brings the rest back. The history checker then finds no token issued twice
 * and no token out of order, and every token after the recovery exceeds every token before it.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Layout } from '../../src/backends/redis/index.ts';
import { check } from '../../src/chaos/checker.ts';
import { encodeCounter, type HistoryEvent, now } from '../../src/chaos/history.ts';
import { recordingBackend } from '../../src/chaos/recording.ts';
import { type LeaseBackend, type LeaseRecord, openBackend, recoverBackend } from '../../src/index.ts';
import { type RedisCluster, startRedisCluster } from '../support/redis-cluster.ts';

const run = promisify(execFile);
let cluster: RedisCluster;
const opened: LeaseBackend[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster(3);
}, 120_000);

afterAll(async () => {
  for (const b of opened) await b.close().catch(() => {});
  await cluster?.stop();
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const BUCKETS = 32;

async function open(keyPrefix: string): Promise<LeaseBackend> {
  const b = await openBackend(cluster.url, { keyPrefix, callTimeoutMs: 5000 });
  opened.push(b);
  return b;
}

/** The master port of every bucket of `prefix`. */
async function bucketOwners(prefix: string): Promise<number[]> {
  const L = new Layout(prefix, BUCKETS);
  const owners: number[] = [];
  for (const tag of L.tags) owners.push(await cluster.ownerOf(tag));
  return owners;
}

const codeOf = (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => 'OK',
    (e: { code?: string }) => e.code ?? String(e),
  );

interface ItemLog {
  ok: number[];
  errors: Array<{ at: number; code: string }>;
  tokens: Array<{ at: number; token: bigint }>;
}

describe('a Cluster master restarted empty (3 masters)', () => {
  it('healthy items never stop, lost ones fail DATASET_LOST, recover brings them back with larger tokens', {
    timeout: 240_000,
  }, async () => {
    const prefix = 'shard';
    const a = await open(prefix);
    const owners = await bucketOwners(prefix);
    const metaOwner = await cluster.ownerOf(`${prefix}:meta`);
    // The victim is a master that holds buckets but not the meta key (the meta key's loss: below).
    const victim = cluster.ports.find((p) => p !== metaOwner && owners.includes(p))!;
    const lostBuckets = owners.flatMap((p, b) => (p === victim ? [b] : []));
    const L = new Layout(prefix, BUCKETS);
    const items = Array.from({ length: 48 }, (_, i) => `job-${i}`);
    const onVictim = (w: string): boolean => lostBuckets.includes(L.bucketOf(w));
    const lostItems = items.filter(onVictim);
    const healthyItems = items.filter((w) => !onVictim(w));
    expect(lostItems.length).toBeGreaterThan(0);
    expect(healthyItems.length).toBeGreaterThan(0);

    const history: HistoryEvent[] = [];
    const rb = recordingBackend(a, (e) => history.push(e));
    const logs = new Map<string, ItemLog>(items.map((w) => [w, { ok: [], errors: [], tokens: [] }]));
    let stopped = false;
    const holder = async (workId: string, holderId: string): Promise<void> => {
      const log = logs.get(workId)!;
      while (!stopped) {
        try {
          const lease = await rb.acquire(workId, holderId, 5000);
          log.ok.push(now());
          log.tokens.push({ at: now(), token: lease.fencingToken });
          for (let n = 1; n <= 3 && !stopped; n++) {
            await sleep(40);
            await rb.checkpoint(
              lease,
              encodeCounter({ n, w: lease.fencingToken.toString(), h: holderId }),
              5000,
            );
            log.ok.push(now());
          }
          await rb.release(lease);
          log.ok.push(now());
        } catch (err) {
          log.errors.push({ at: now(), code: (err as { code?: string }).code ?? String(err) });
          await sleep(50);
        }
      }
    };
    // A lease on a lost item held across the loss, as by a holder that keeps running.
    const staleItem = lostItems[0]!;
    const loops = items.flatMap((w) => [holder(w, `${w}-h1`), holder(w, `${w}-h2`)]);
    await sleep(2000);
    let stale: LeaseRecord | undefined;
    for (let i = 0; i < 50 && stale === undefined; i++) {
      stale = await a.acquire(`${staleItem}-kept`, 'keeper', 120_000).catch(() => undefined);
    }
    const beforeRestart = now();
    await cluster.restartEmpty(victim);
    history.push({
      type: 'fault',
      kind: 'restart',
      at: beforeRestart,
      detail: `master ${victim} back empty`,
    });
    const lostFrom = now();

    // Meanwhile: a process that opens now serves the healthy items and names the affected ones.
    const b = await open(prefix);
    const loss = await b.admin.datasetLoss!(items);
    expect(loss.lost).toEqual(lostBuckets);
    expect(loss.metaLost).toBe(false);
    expect(loss.foreign).toEqual([]);
    expect(new Set(loss.affected)).toEqual(new Set(lostItems));
    // A listing or count would miss the lost items: they fail and say so.
    expect(await codeOf(b.admin.count())).toBe('DATASET_LOST');
    expect(await codeOf(b.admin.list({ limit: 100 }))).toBe('DATASET_LOST');
    expect(await codeOf(b.acquire(lostItems[1] ?? staleItem, 'new-process', 5000))).toBe('DATASET_LOST');
    expect(await codeOf(b.admin.get(healthyItems[0]!))).toBe('OK');
    if (stale !== undefined) expect(await codeOf(a.renew(stale, 120_000))).toBe('DATASET_LOST');
    await sleep(3000);
    const lostUntil = now();

    // A dry run writes nothing; the recovery re-initialises exactly the lost buckets.
    const dry = await recoverBackend(
      cluster.url,
      { operator: 'ops', reason: 'shard restarted empty', dryRun: true },
      { keyPrefix: prefix },
    );
    expect(dry).toMatchObject({ dryRun: true, lost: lostBuckets, recovered: [], metaRecreated: false });
    expect((await b.admin.datasetLoss!()).lost).toEqual(lostBuckets);
    const recoverAt = now();
    const done = await recoverBackend(
      cluster.url,
      { operator: 'ops', reason: 'shard restarted empty' },
      { keyPrefix: prefix },
    );
    expect(done).toMatchObject({
      dryRun: false,
      lost: lostBuckets,
      recovered: lostBuckets,
      metaRecreated: false,
    });
    // Every lost item works again, without reopening the backend the holders run on.
    let back = 0;
    while (now() - recoverAt < 60_000) {
      back = lostItems.filter((w) => logs.get(w)!.tokens.some((t) => t.at > recoverAt)).length;
      if (back === lostItems.length) break;
      await sleep(100);
    }
    const recoveryMs = now() - recoverAt;
    console.log(
      `lost shard: ${lostBuckets.length}/${BUCKETS} buckets, ${lostItems.length}/${items.length} items; all back ${Math.round(recoveryMs)} ms after recover`,
    );
    expect(back).toBe(lostItems.length);
    expect(recoveryMs).toBeLessThan(60_000);
    await sleep(1500);
    stopped = true;
    await Promise.all(loops);
    await rb.settled();

    // Healthy items: never DATASET_LOST, and working while the shard was lost.
    for (const w of healthyItems) {
      const log = logs.get(w)!;
      expect(log.errors.filter((e) => e.code === 'DATASET_LOST')).toEqual([]);
      expect(log.ok.some((t) => t > lostFrom && t < lostUntil)).toBe(true);
    }
    // Lost items: DATASET_LOST while lost; every token after the recovery above every one before.
    for (const w of lostItems) {
      const log = logs.get(w)!;
      expect(log.errors.some((e) => e.code === 'DATASET_LOST' && e.at > beforeRestart)).toBe(true);
      const before = log.tokens.filter((t) => t.at < beforeRestart).map((t) => t.token);
      const after = log.tokens.filter((t) => t.at > recoverAt).map((t) => t.token);
      expect(after.length).toBeGreaterThan(0);
      let maxBefore = 0n;
      for (const t of before) if (t > maxBefore) maxBefore = t;
      for (const t of after) expect(t > maxBefore).toBe(true);
    }
    // The lease held across the loss is fenced, not revived.
    if (stale !== undefined) expect(await codeOf(a.renew(stale, 120_000))).toBe('FENCED');
    const report = check(history, []);
    expect(report.violations).toEqual([]);
    expect(report.acknowledged).toBeGreaterThan(100);
    // One audit entry per recovered bucket, by the operator.
    const audit = (await b.admin.audit({ limit: 1000 })).filter((e) => e.action === 'recover');
    expect(audit.map((e) => e.id.split(':')[0]).sort()).toEqual(lostBuckets.map((x) => `b${x}`).sort());
    for (const e of audit) expect(e).toMatchObject({ operator: 'ops', workId: '' });
    expect((await b.admin.datasetLoss!()).lost).toEqual([]);
  });

  it('the meta key lost with its master: opening is refused until recover writes it again', {
    timeout: 120_000,
  }, async () => {
    const prefix = 'metaless';
    const a = await open(prefix);
    const owners = await bucketOwners(prefix);
    const metaOwner = await cluster.ownerOf(`${prefix}:meta`);
    const lostBuckets = owners.flatMap((p, b) => (p === metaOwner ? [b] : []));
    const L = new Layout(prefix, BUCKETS);
    const items = Array.from({ length: 40 }, (_, i) => `m-${i}`);
    const before = new Map<string, bigint>();
    for (const w of items) before.set(w, (await a.acquire(w, 'first', 1000)).fencingToken);
    await cluster.restartEmpty(metaOwner);
    expect(await codeOf(openBackend(cluster.url, { keyPrefix: prefix }))).toBe('DATASET_LOST');
    const loss = await a.admin.datasetLoss!(items);
    expect(loss).toMatchObject({ metaLost: true, lost: lostBuckets });
    // The backend that was open serves the healthy buckets on.
    for (const w of items) {
      const lost = lostBuckets.includes(L.bucketOf(w));
      await sleep(0);
      expect(
        await codeOf(a.admin.get(w).then((i) => (i === null ? Promise.reject({ code: 'GONE' }) : i))),
      ).toBe(lost ? 'GONE' : 'OK');
    }
    const done = await recoverBackend(
      cluster.url,
      { operator: 'ops', reason: 'meta lost' },
      { keyPrefix: prefix },
    );
    expect(done).toMatchObject({ metaRecreated: true, recovered: lostBuckets, dataset: loss.dataset });
    const c = await open(prefix);
    await sleep(1100); // the first leases ran out
    for (const w of items) {
      const next = await c.acquire(w, 'second', 5000);
      expect(next.fencingToken > before.get(w)!).toBe(true);
    }
    expect((await c.admin.datasetLoss!()).lost).toEqual([]);
  });

  it('refuses before any write: bad options, a PostgreSQL URL, nothing left, a bucket of another dataset', {
    timeout: 60_000,
  }, async () => {
    const why = { operator: 'ops', reason: 'test' };
    await expect(recoverBackend(cluster.url, { operator: '', reason: 'x' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(
      recoverBackend(cluster.url, { ...why, dryRun: 'yes' as unknown as boolean }),
    ).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(recoverBackend('postgres://127.0.0.1:1/x', why)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    // Nothing of the prefix: refused, and no meta key written.
    await expect(recoverBackend(cluster.url, why, { keyPrefix: 'never-made' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    const probe = await open('probe');
    expect(await codeOf(openBackend(cluster.url, { keyPrefix: 'never-made', migrate: false }))).toBe(
      'SCHEMA_MISMATCH',
    );
    // Nothing lost: a no-op.
    expect(await recoverBackend(cluster.url, why, { keyPrefix: 'probe' })).toMatchObject({
      lost: [],
      recovered: [],
      metaRecreated: false,
    });
    expect((await probe.admin.audit()).filter((e) => e.action === 'recover')).toEqual([]);
    // One bucket of another dataset, one lost: refused as a whole, the lost one stays lost.
    const P = new Layout('probe', BUCKETS);
    const cli = async (...args: string[]): Promise<string> =>
      (await run('redis-cli', ['-c', '-p', String(cluster.ports[0]), ...args])).stdout.trim();
    await cli('set', P.id[3]!, 'another-dataset');
    await cli('del', P.id[5]!);
    await expect(recoverBackend(cluster.url, why, { keyPrefix: 'probe' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect(await cli('exists', P.id[5]!)).toBe('0');
    expect((await probe.admin.datasetLoss!()).foreign).toEqual([3]);
  });
});
