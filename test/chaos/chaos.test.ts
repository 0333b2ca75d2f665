/**
 * Short chaos runs inside the suite, one per backend, and the positive control:
 * the same run through a backend wrapper that skips fencing must report
 * violations. The long runs (60 s) are `npm run chaos`.
 *
 * Redis and the Redis Cluster are private servers started here, because
 * `CLIENT PAUSE` pauses a whole server and would stall the other test files.
 * Postgres is the shared server: connection kills target only this run's
 * connections (by application_name). PGlite runs in-process, so connection
 * kills and pauses do not apply to it and a freeze stops all its holders at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applicableFaults, type ChaosResult, runChaos } from '../../src/chaos/runner.ts';
import { PG_URL } from '../support/backends.ts';
import { type RedisCluster, startRedisCluster } from '../support/redis-cluster.ts';
import { type PrivateRedis, startPrivateRedis } from './private-redis.ts';

const SECONDS = 6;
const base = { workers: 6, items: 3, seconds: SECONDS, ttlMs: 800, faultEveryMs: 300 };

function expectClean(result: ChaosResult, privateRedis = false): void {
  console.log(result.line);
  expect(result.report.violations, result.report.violations.map((v) => v.message).join('\n')).toEqual([]);
  // Liveness and coverage, generously: the run did work and every applicable fault happened.
  expect(result.report.calls).toBeGreaterThan(20);
  // The final counters are the last dataset's: a wipe near the end of a data-loss run leaves them
  // at 0, so there the liveness check is on acknowledged calls.
  if (result.report.dataChecks) expect(result.report.increments).toBeGreaterThan(0);
  else expect(result.report.acknowledged).toBeGreaterThan(0);
  for (const fault of applicableFaults(result.kind, privateRedis))
    expect(result.report.faults[fault], fault).toBeGreaterThan(0);
  expect(result.stats.flatMap((s) => s.unexpected)).toEqual([]);
}

describe('chaos', () => {
  let redis: PrivateRedis;
  let cluster: RedisCluster;
  beforeAll(async () => {
    [redis, cluster] = await Promise.all([startPrivateRedis(), startRedisCluster(3)]);
  });
  afterAll(async () => {
    await Promise.all([redis?.stop(), cluster?.stop()]);
  });

  it('postgres: no fenced write lands', { timeout: 90_000 }, async () => {
    expectClean(await runChaos({ url: PG_URL, ...base }));
  });

  it('redis: no fenced write lands', { timeout: 90_000 }, async () => {
    expectClean(await runChaos({ url: redis.url, ...base }));
  });

  it('redis cluster: no fenced write lands', { timeout: 90_000 }, async () => {
    expectClean(await runChaos({ url: cluster.url, ...base }));
  });

  it('redis master + replica with restarts without persistence and failovers: no token handed out twice', {
    timeout: 120_000,
  }, async () => {
    const result = await runChaos({
      url: 'redis://private',
      privateRedis: true,
      ...base,
      seconds: 10,
      faultEveryMs: 500,
    });
    expectClean(result, true);
    expect(result.report.dataChecks).toBe(false);
    // The restarts really wiped the data: holders were told, and reopened on the new dataset.
    expect(result.stats.reduce((n, s) => n + s.datasetLost, 0)).toBeGreaterThan(0);
  });

  it('pglite: no fenced write lands (force-release and freeze only)', { timeout: 90_000 }, async () => {
    expectClean(await runChaos({ url: 'pglite://memory', ...base, workers: 4 }));
  });

  it('a backend that skips the token check is caught', { timeout: 90_000 }, async () => {
    const result = await runChaos({
      url: PG_URL,
      ...base,
      seconds: 6,
      faults: ['force-release'],
      broken: true,
    });
    console.log(result.line);
    const kinds = new Set(result.report.violations.map((v) => v.kind));
    expect(result.report.violations.length).toBeGreaterThan(0);
    expect(kinds.has('stale-write')).toBe(true);
  });
});
