/**
 * `worklease recover` end to end on real Redis: a prefix that lost one bucket (its keys deleted, as
 * a Cluster master that came back empty loses its buckets' keys; the Cluster itself:
 * test/backends/redis-cluster-lost-shard.test.ts). Refusals write nothing; --dry-run names the
 * bucket; --force re-initialises exactly it, audited; a PostgreSQL URL is refused.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Layout } from '../../src/backends/redis/index.ts';
import { type LeaseBackend, openBackend } from '../../src/index.ts';
import { REDIS_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';
import { run } from './support.ts';

vi.setConfig({ testTimeout: 90_000 });
const target = { kind: 'redis' as const, url: REDIS_URL };
const ns = uniqueNamespace('recover');
let backend: LeaseBackend;
let redis: Redis;
const L = new Layout(ns, 32);
const victim = 'job/lost';
const bucket = L.bucketOf(victim);

beforeAll(async () => {
  backend = await openBackend(REDIS_URL, { keyPrefix: ns });
  redis = new Redis(REDIS_URL);
  await backend.acquire(victim, 'w-1', 60_000);
  for (const key of L.keysOf(victim)) await redis.del(key);
});

afterAll(async () => {
  await backend?.close();
  redis?.disconnect();
  await dropNamespace(target, ns);
});

describe('worklease recover', () => {
  it('is in --help', async () => {
    const r = await run(['--help']);
    expect(r.stdout).toMatch(/recover \[options\] \[url\]/);
    const own = await run(['recover', '--help']);
    expect(own.stdout).toContain('--dry-run');
  });

  it('refuses without --force or without a reason, and writes nothing', async () => {
    const noForce = await run(['recover', REDIS_URL, '--key-prefix', ns, '--reason', 'x']);
    expect(noForce.code).toBe(2);
    expect(noForce.stderr).toContain('--force');
    const noReason = await run(['recover', REDIS_URL, '--key-prefix', ns, '--force']);
    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toContain('--reason');
    const pg = await run(['recover', 'postgres://127.0.0.1:1/x', '--force', '--reason', 'x']);
    expect(pg.code).toBe(2);
    expect(pg.stderr).toContain('recover is for Redis');
    expect(await redis.exists(L.id[bucket]!)).toBe(0);
  });

  it('--dry-run names the lost bucket; --force brings exactly it back, audited', async () => {
    const dry = await run(['recover', REDIS_URL, '--key-prefix', ns, '--dry-run']);
    expect(dry).toMatchObject({ code: 0, stderr: '' });
    expect(dry.stdout).toContain(`lost: 1 bucket(s) (b${bucket})`);
    expect(await redis.exists(L.id[bucket]!)).toBe(0);
    await expect(backend.acquire(victim, 'w-2', 60_000)).rejects.toMatchObject({ code: 'DATASET_LOST' });

    const done = await run([
      'recover',
      REDIS_URL,
      '--key-prefix',
      ns,
      '--force',
      '--reason',
      'node came back empty',
      '--operator',
      'ops',
      '--json',
    ]);
    expect(done).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(done.stdout)).toMatchObject({
      keyPrefix: ns,
      lost: [bucket],
      recovered: [bucket],
      metaRecreated: false,
      dryRun: false,
      operator: 'ops',
    });
    // The backend that was open works on that bucket again, without reopening.
    expect((await backend.acquire(victim, 'w-2', 60_000)).holderId).toBe('w-2');
    const audit = (await backend.admin.audit()).filter((e) => e.action === 'recover');
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ operator: 'ops', workId: '' });
    expect(audit[0]!.reason).toBe(`node came back empty [recovered bucket b${bucket}]`);

    const again = await run(['recover', REDIS_URL, '--key-prefix', ns, '--force', '--reason', 'again']);
    expect(again).toMatchObject({ code: 0, stderr: '' });
    expect(again.stdout).toContain('nothing was lost; nothing written');
  });
});
