/**
 * Failover without reconfiguration: a private primary and a streaming standby (pg_basebackup -R),
 * one multi-host URL naming both, holders running (the chaos harness, one thread each), then the
 * primary killed and the standby promoted. The backend objects find the new primary by themselves;
 * calls in flight fail BACKEND_UNAVAILABLE, later ones go to the new primary. With synchronous
 * replication: 0 violations, every acknowledged checkpoint kept. With asynchronous replication:
 * no token handed out twice (acknowledged writes may be lost: docs/durability.md). The recovery
 * time (kill to the first acknowledged call after it) is printed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { now } from '../../src/chaos/history.ts';
import { type PrivatePostgres, startPostgres } from '../../src/chaos/postgres-servers.ts';
import { type ChaosResult, runChaos } from '../../src/chaos/runner.ts';
import type { LeaseBackend } from '../../src/index.ts';
import { openBackend } from '../../src/index.ts';

const servers: PrivatePostgres[] = [];
const opened: LeaseBackend[] = [];
afterEach(async () => {
  for (const b of opened.splice(0)) await b.close().catch(() => {});
  for (const s of servers.splice(0)) s.stop();
});

async function pair(
  synchronous: boolean,
): Promise<{ primary: PrivatePostgres; standby: PrivatePostgres; url: string }> {
  const primary = await startPostgres({ settings: synchronous ? ["synchronous_standby_names = '*'"] : [] });
  servers.push(primary);
  // The promoted standby has no standby of its own: it must not wait for one.
  const standby = await startPostgres({ standbyOf: primary, settings: ["synchronous_standby_names = ''"] });
  servers.push(standby);
  // The standby first: the backend must skip it while it is read-only.
  return {
    primary,
    standby,
    url: `postgres://postgres@127.0.0.1:${standby.port},127.0.0.1:${primary.port}/postgres`,
  };
}

/** When the failover began (the kill) and ended (the standby promoted), on the history's clock. */
interface Failover {
  killedAt: number;
  promotedAt: number;
  inject: () => Promise<string>;
}

function failover(primary: PrivatePostgres, standby: PrivatePostgres): Failover {
  const f: Failover = {
    killedAt: 0,
    promotedAt: 0,
    inject: async () => {
      f.killedAt = now();
      primary.kill();
      await standby.promote();
      f.promotedAt = now();
      return `primary 127.0.0.1:${primary.port} killed, standby 127.0.0.1:${standby.port} promoted`;
    },
  };
  return f;
}

/**
 * Recovery: from the kill to the end of the first call acknowledged that started after the
 * promotion (so on the new primary), ms; and the promotion's own share of it.
 */
function recovery(result: ChaosResult, f: Failover): string {
  const ends = result.history.flatMap((e) =>
    e.type === 'call' && e.outcome === 'ok' && e.start > f.promotedAt ? [e.end] : [],
  );
  const ms = Math.min(...ends) - f.killedAt;
  return `recovered ${ms.toFixed(0)} ms after the kill (the kill and promotion took ${(f.promotedAt - f.killedAt).toFixed(0)} ms)`;
}

describe('PostgreSQL primary + streaming standby behind one multi-host URL', () => {
  it('opens on the primary although the standby is listed first', { timeout: 120_000 }, async () => {
    const { primary, url } = await pair(false);
    const b = await openBackend(url, { schema: 'ha' });
    opened.push(b);
    await b.acquire('first', 'h', 60_000);
    const direct = await openBackend(primary.url, { schema: 'ha', migrate: false });
    opened.push(direct);
    expect(await direct.admin.get('first')).toMatchObject({ holderId: 'h' });
  });

  /**
   * Holders of the chaos harness on the pair, the primary killed and the standby promoted 4 s in
   * (recorded as `kill` with a synchronous standby, which loses nothing acknowledged, and as
   * `failover`, a data-loss fault that turns the data checks off, with an asynchronous one).
   */
  async function promotedUnderLoad(synchronous: boolean): Promise<ChaosResult> {
    const { primary, standby, url } = await pair(synchronous);
    const f = failover(primary, standby);
    const result = await runChaos({
      url,
      workers: 4,
      items: 3,
      seconds: 12,
      ttlMs: 1000,
      faultEveryMs: 800,
      faults: ['freeze', 'force-release'],
      scheduled: [{ afterMs: 4000, kind: synchronous ? 'kill' : 'failover', inject: f.inject }],
    });
    console.log(
      `${result.line}; ${synchronous ? 'a synchronous' : 'an asynchronous'} standby: ${recovery(result, f)}`,
    );
    // The failover itself went through (an operator call during it may fail: the runner notes that).
    expect(result.injectorErrors.filter((e) => /^(kill|failover):/.test(e))).toEqual([]);
    expect(result.report.faults[synchronous ? 'kill' : 'failover']).toBe(1);
    expect(result.report.violations, result.report.violations.map((v) => v.message).join('\n')).toEqual([]);
    // Work went on after the failover, on the promoted standby.
    expect(
      result.history.some((e) => e.type === 'call' && e.outcome === 'ok' && e.start > f.promotedAt),
    ).toBe(true);
    return result;
  }

  it('synchronous standby promoted while holders run: 0 violations, nothing acknowledged lost', {
    timeout: 180_000,
  }, async () => {
    expect((await promotedUnderLoad(true)).report.dataChecks).toBe(true);
  });

  it('asynchronous standby promoted while holders run: no token handed out twice', {
    timeout: 180_000,
  }, async () => {
    expect((await promotedUnderLoad(false)).report.dataChecks).toBe(false);
  });
});
