/**
 * The console's lost-shard view and recover action on real Redis (a prefix that lost one bucket's
 * keys, as when a Cluster master comes back empty; the Cluster itself:
 * test/backends/redis-cluster-lost-shard.test.ts). The connection turns `error` with DATASET_LOST
 * and keeps its rows; `connection.datasetLoss` names the lost bucket and exactly the shown items in
 * it; `connection.recover` is refused to viewers and operators, on read-only connections and
 * consoles, and with a mistyped key prefix, all before any write; an admin's recover writes the
 * audit entry under the caller's name and the connection comes back live.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Layout } from '../../src/backends/redis/index.ts';
import type { Caller } from '../../src/console/access.ts';
import { type ConsoleService, createConsoleService } from '../../src/console/index.ts';
import { type LeaseBackend, openBackend } from '../../src/index.ts';
import { REDIS_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';
import { until } from './helpers.ts';

const ns = uniqueNamespace('crecover');
const url = `${REDIS_URL}?keyPrefix=${ns}`;
const L = new Layout(ns, 32);
const items = Array.from({ length: 40 }, (_, i) => `item-${i}`);
const victim = items[0]!;
const bucket = L.bucketOf(victim);
const inBucket = items.filter((w) => L.bucketOf(w) === bucket).sort();
let backend: LeaseBackend;
let redis: Redis;
let shared: ConsoleService;
let readOnly: ConsoleService;

const admin: Caller = { user: 'adam', via: 'token', roles: { '*': 'admin' } };
const operator: Caller = { user: 'olivia', via: 'token', roles: { '*': 'operator' } };
const viewer: Caller = { user: 'vera', via: 'token', roles: { '*': 'viewer' } };

beforeAll(async () => {
  backend = await openBackend(REDIS_URL, { keyPrefix: ns });
  redis = new Redis(REDIS_URL);
  for (const w of items) await backend.acquire(w, 'worker', 300_000);
  const connections = [
    { name: 'main', url },
    { name: 'locked', url, readOnly: true },
  ];
  shared = createConsoleService({
    connections,
    shared: { allowConnectionEdits: false },
    feed: { pollMaxMs: 200 },
  });
  readOnly = createConsoleService({ connections: [{ name: 'main', url }], readOnly: true });
}, 60_000);

afterAll(async () => {
  await shared?.close();
  await readOnly?.close();
  await backend?.close();
  redis?.disconnect();
  await dropNamespace({ kind: 'redis', url: REDIS_URL }, ns);
});

const idOf = (s: ConsoleService, name: string): string => s.connections().find((c) => c.name === name)!.id;

describe('a lost bucket in the console', () => {
  it('names the affected items, refuses recover to everyone but an admin on a writable connection, then recovers', {
    timeout: 90_000,
  }, async () => {
    const main = idOf(shared, 'main');
    await shared.waitLive(main);
    await until('every row', async () => {
      const snap = await shared.handle('fleet.snapshot', { connectionId: main }, viewer);
      return snap.rows.length === items.length;
    });
    // Nothing lost yet.
    expect(await shared.handle('connection.datasetLoss', { connectionId: main }, viewer)).toMatchObject({
      lost: [],
      affected: [],
      affectedTotal: 0,
    });
    for (const key of L.keysOf(victim)) await redis.del(key);
    for (const w of inBucket) await redis.hdel(L.m[bucket]!, w);
    await redis.del(L.id[bucket]!);
    // The next heartbeat check finds the lost bucket: the connection says so, and keeps its rows
    // (only the lost bucket's items are gone; the panel names them).
    const failed = await until(
      'error state',
      () => {
        const c = shared.connections().find((x) => x.id === main)!;
        return c.state === 'error' ? c : null;
      },
      30_000,
    );
    expect(failed.error?.code).toBe('DATASET_LOST');
    expect((await shared.handle('fleet.snapshot', { connectionId: main }, viewer)).rows).toHaveLength(
      items.length,
    );
    const loss = await shared.handle('connection.datasetLoss', { connectionId: main }, viewer);
    expect(loss).toMatchObject({
      keyPrefix: ns,
      lost: [bucket],
      metaLost: false,
      affectedTotal: inBucket.length,
    });
    expect(loss.affected).toEqual(inBucket);

    const params = { connectionId: main, reason: 'node came back empty', confirmKeyPrefix: ns };
    for (const caller of [viewer, operator]) {
      await expect(shared.handle('connection.recover', params, caller)).rejects.toMatchObject({
        code: 'FORBIDDEN',
      });
    }
    await expect(
      shared.handle('connection.recover', { ...params, connectionId: idOf(shared, 'locked') }, admin),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' });
    const roMain = idOf(readOnly, 'main');
    await expect(
      readOnly.call('connection.recover', { ...params, connectionId: roMain }),
    ).rejects.toMatchObject({
      code: 'FORBIDDEN',
    });
    await expect(
      shared.handle('connection.recover', { ...params, confirmKeyPrefix: 'other' }, admin),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(
      shared.handle('connection.recover', { ...params, operator: 'someone-else' }, admin),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(await redis.exists(L.id[bucket]!)).toBe(0);
    const session = await shared.handle('console.session', {}, operator);
    expect(session.connections.find((c) => c.connectionId === main)?.recover).toMatchObject({
      allowed: false,
    });

    const done = await shared.handle('connection.recover', params, admin);
    expect(done).toMatchObject({ lost: [bucket], recovered: [bucket], metaRecreated: false, dryRun: false });
    const audit = await shared.handle('audit.list', { connectionId: main, limit: 100 }, viewer);
    expect(audit.filter((e) => e.action === 'recover')).toMatchObject([
      { operator: 'adam', workId: '', oldToken: '0', newToken: '0' },
    ]);
    expect((await shared.handle('connection.datasetLoss', { connectionId: main }, viewer)).lost).toEqual([]);
    await until(
      'live again',
      () => shared.connections().find((c) => c.id === main)?.state === 'live',
      30_000,
    );
    await expect(backend.acquire(victim, 'next', 60_000)).resolves.toMatchObject({ holderId: 'next' });
  });

  it('is refused on a PostgreSQL or PGlite connection', async () => {
    const pg = createConsoleService({ connections: [{ name: 'lite', url: 'pglite://memory' }] });
    try {
      const id = pg.connections()[0]!.id;
      await expect(pg.call('connection.datasetLoss', { connectionId: id })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
      await expect(
        pg.call('connection.recover', { connectionId: id, reason: 'x', confirmKeyPrefix: 'x' }),
      ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    } finally {
      await pg.close();
    }
  });
});
