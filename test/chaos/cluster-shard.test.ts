/**
 * The chaos harness on a private 3-master Redis Cluster with a master restarted empty mid-run and
 * recovered with `recoverBackend` (src/chaos/cluster.ts, shardRestartFault), beside the faults the
 * runner draws for a Cluster: no token handed out twice, no fenced write landed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisCluster, shardRestartFault, startRedisCluster } from '../../src/chaos/cluster.ts';
import { runChaos } from '../../src/chaos/runner.ts';

let cluster: RedisCluster;

beforeAll(async () => {
  cluster = await startRedisCluster(3);
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
});

describe('chaos on a Redis Cluster with a shard restarted empty', () => {
  it('recovers the lost buckets mid-run with 0 violations', { timeout: 180_000 }, async () => {
    const namespace = `chaos_shard_${process.pid}`;
    const result = await runChaos({
      url: cluster.url,
      namespace,
      workers: 8,
      items: 24,
      seconds: 20,
      ttlMs: 1000,
      faultEveryMs: 800,
      scheduled: [shardRestartFault(cluster, namespace, 5000, 6000)],
    });
    const detail = result.history.find((e) => e.type === 'fault' && e.kind === 'shard-restart');
    console.log(`${result.line}; ${detail?.type === 'fault' ? detail.detail : 'no shard restart'}`);
    expect(result.injectorErrors.filter((e) => e.startsWith('shard-restart:'))).toEqual([]);
    expect(result.report.faults['shard-restart']).toBe(1);
    expect(result.report.dataChecks).toBe(false);
    expect(result.report.violations, result.report.violations.map((v) => v.message).join('\n')).toEqual([]);
    expect(result.stats.flatMap((s) => s.unexpected)).toEqual([]);
    // The holders met the lost shard (their calls on it failed DATASET_LOST), and work went on
    // after the recovery.
    const lostCalls = result.history.filter(
      (e) => e.type === 'call' && e.error?.startsWith('DATASET_LOST') === true,
    ).length;
    console.log(
      `calls refused DATASET_LOST: ${lostCalls}; holders that reopened: ${result.stats.reduce((n, s) => n + s.datasetLost, 0)}`,
    );
    expect(lostCalls).toBeGreaterThan(0);
    const at = detail?.type === 'fault' ? detail.at : Number.POSITIVE_INFINITY;
    expect(
      result.history.some(
        (e) => e.type === 'call' && e.call === 'acquire' && e.outcome === 'ok' && e.start > at + 7000,
      ),
    ).toBe(true);
  });
});
