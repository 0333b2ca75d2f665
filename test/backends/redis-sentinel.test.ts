/**
 * Redis behind Sentinel (`redis+sentinel://`), on a private master, replica and three sentinels
 * (src/chaos/sentinel-servers.ts): the URL grammar; durability (WAIT) through the master the
 * sentinels name; a manual failover that leaves the old master running, followed by Sentinel's
 * `+switch-master` alone; a plain URL at a replica, refused at once and not retried; and the tier:
 * holders running through one backend object while the master is SIGKILLed, checked by the
 * history checker, with the recovery time printed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRedisUrl } from '../../src/backends/redis/connection.ts';
import { switchedTo } from '../../src/backends/redis/sentinel.ts';
import { runChaos } from '../../src/chaos/runner.ts';
import { type SentinelRedis, startSentinelRedis } from '../../src/chaos/sentinel-servers.ts';
import { redisCall } from '../../src/chaos/servers.ts';
import { claim, ErrorCode, openBackend, WorkleaseError } from '../../src/index.ts';
import { uniqueNamespace } from '../support/backends.ts';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function refusal(p: Promise<unknown>): Promise<WorkleaseError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof WorkleaseError)) throw new Error(`expected a WorkleaseError, got ${String(err)}`);
  return err;
}

/**
 * The backend's lease connections (CLIENT SETNAME worklease:<prefix>) on the server at `port`. A
 * sentinel reconfiguring a server kills its clients (CLIENT KILL TYPE normal), this one's included:
 * then it asks again.
 */
async function connectionsOn(port: number, prefix: string): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    try {
      const list = String(await redisCall(port, 'CLIENT', 'LIST'));
      return list.split('\n').filter((line) => line.includes(` name=worklease:${prefix} `)).length;
    } catch (err) {
      if (attempt >= 20) throw err;
      await sleep(100);
    }
  }
}

describe('redis+sentinel:// URLs', () => {
  it('names the sentinels, the master, its database and the sentinels’ password', () => {
    const t = parseRedisUrl(
      'redis+sentinel://app:pw@s1:26379,[::1]:26380/main?db=3&sentinelPassword=sp&tls=true',
    );
    expect(t).toMatchObject({
      kind: 'redis',
      nodes: [
        { host: 's1', port: 26379 },
        { host: '::1', port: 26380 },
      ],
      sentinel: { name: 'main', password: 'sp' },
      username: 'app',
      password: 'pw',
      db: 3,
      tls: true,
    });
    expect(parseRedisUrl('redis+sentinel://s1:26379/main').sentinel).toEqual({
      name: 'main',
      password: undefined,
    });
  });

  it.each([
    ['redis+sentinel://s1:26379', /names its master/],
    ['redis+sentinel://s1:26379/', /names its master/],
    ['redis+sentinel://s1:26379/a/b', /names its master/],
    ['redis+sentinel://s1:26379/m?db=x', /bad database number 'x'/],
    ['redis+sentinel://s1:26379/m?nope=1', /unknown option 'nope'/],
    ['redis://h:6379?db=2', /only redis\+sentinel:\/\/ takes it/],
    ['redis://h:6379?sentinelPassword=x', /only redis\+sentinel:\/\/ takes it/],
    ['redis://h1:6379,h2:6379', /redis\+cluster:\/\/ or redis\+sentinel:\/\//],
  ])('refuses %s before any I/O', async (url, why) => {
    const err = await refusal(openBackend(url));
    expect(err.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(err.message).toMatch(why);
    expect(err.message).not.toContain('sentinelPassword=x');
  });

  it('reads +switch-master messages of its own master only', () => {
    expect(switchedTo('main 10.0.0.1 6379 10.0.0.2 6380', 'main')).toEqual({ host: '10.0.0.2', port: 6380 });
    expect(switchedTo('other 10.0.0.1 6379 10.0.0.2 6380', 'main')).toBeUndefined();
    expect(switchedTo('main 10.0.0.1 6379 10.0.0.2', 'main')).toBeUndefined();
    expect(switchedTo('main 10.0.0.1 6379 10.0.0.2 0', 'main')).toBeUndefined();
  });
});

describe('Redis behind Sentinel (private master, replica, three sentinels)', () => {
  let topo: SentinelRedis;
  beforeAll(async () => {
    topo = await startSentinelRedis();
  }, 90_000);
  afterAll(async () => {
    await topo?.stop();
  }, 30_000);

  it('opens on the master the sentinels name, with durability (WAIT) confirmed by the replica', {
    timeout: 60_000,
  }, async () => {
    const prefix = uniqueNamespace('sen');
    const backend = await openBackend(topo.url, {
      keyPrefix: prefix,
      durability: { replicas: 1, timeoutMs: 5000 },
    });
    try {
      const lease = await backend.acquire('a', 'h', 30_000);
      await backend.checkpoint(lease, new TextEncoder().encode('x'), 30_000);
      expect(await connectionsOn(topo.masterPort, prefix)).toBeGreaterThan(0);
      expect(await connectionsOn(topo.replicaPort, prefix)).toBe(0);
      // What the master acknowledged (WAIT 1) is on the replica.
      const stored = await redisCall(topo.replicaPort, 'KEYS', `${prefix}:*`);
      expect((stored as string[]).length).toBeGreaterThan(0);
    } finally {
      await backend.close();
    }
  });

  it('a database the server does not have is INVALID_ARGUMENT, and nothing is written', {
    timeout: 60_000,
  }, async () => {
    const prefix = uniqueNamespace('sendb');
    const err = await refusal(openBackend(`${topo.url}?db=99`, { keyPrefix: prefix }));
    expect(err.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(err.message).toMatch(/database 99, which the server does not have/);
    expect(await redisCall(topo.masterPort, 'KEYS', `${prefix}:*`)).toEqual([]);
  });

  it('a plain URL at the replica fails at once, saying so, with a code the holders do not retry', {
    timeout: 60_000,
  }, async () => {
    const prefix = uniqueNamespace('senro');
    const writer = await openBackend(topo.url, { keyPrefix: prefix });
    await topo.sync();
    const replica = await openBackend(`redis://127.0.0.1:${topo.replicaPort}`, {
      keyPrefix: prefix,
      migrate: false,
    });
    try {
      // FORBIDDEN, not BACKEND_UNAVAILABLE: the holders retry only the latter (and NOT_DURABLE).
      const err = await refusal(claim(replica, 'a', 'h', { ttlMs: 30_000 }));
      expect(err.code).toBe(ErrorCode.FORBIDDEN);
      expect((await refusal(replica.acquire('b', 'h', 30_000))).code).toBe(ErrorCode.FORBIDDEN);
      expect(err.details).toMatchObject({ code: 'READONLY', reason: 'replica' });
      expect(err.message).toMatch(/reached a read-only replica/);
      expect(err.message).toMatch(/redis\+sentinel:\/\//);
      expect(await writer.admin.get('a')).toBeNull();
    } finally {
      await Promise.all([replica.close(), writer.close()]);
    }
  });

  it('wakes a change watch, and close leaves no connection behind (master nor sentinels)', {
    timeout: 60_000,
  }, async () => {
    const prefix = uniqueNamespace('senwt');
    const watcher = await openBackend(topo.url, { keyPrefix: prefix });
    const writer = await openBackend(topo.url, { keyPrefix: prefix });
    let wakes = 0;
    const stop = watcher.admin.watchChanges!(() => {
      wakes++;
    });
    try {
      const deadline = Date.now() + 30_000;
      // The watch wakes once when it connects; then a write must wake it.
      while (wakes === 0) {
        if (Date.now() > deadline) throw new Error('the change watch never connected');
        await sleep(50);
      }
      const connected = wakes;
      for (let i = 0; wakes === connected; i++) {
        if (Date.now() > deadline) throw new Error('the change watch never woke');
        await writer.acquire(`w${i}`, 'h', 30_000);
        await sleep(200);
      }
      const watches = async (): Promise<number> => {
        let n = 0;
        for (const port of topo.sentinelPorts) {
          const list = String(await redisCall(port, 'CLIENT', 'LIST'));
          n += list.split('\n').filter((l) => l.includes(' name=worklease:sentinel-watch ')).length;
        }
        return n;
      };
      // Two backends, one +switch-master subscription on each of the three sentinels apiece.
      expect(await watches()).toBe(6);
      stop();
      await Promise.all([watcher.close(), writer.close()]);
      const closed = Date.now() + 10_000;
      while ((await watches()) > 0 || (await connectionsOn(topo.masterPort, prefix)) > 0) {
        if (Date.now() > closed) throw new Error('connections left open after close');
        await sleep(100);
      }
    } finally {
      stop();
      await Promise.all([watcher.close(), writer.close()]);
    }
  });

  it('follows a manual failover by +switch-master alone, the old master still running', {
    timeout: 90_000,
  }, async () => {
    const prefix = uniqueNamespace('sensw');
    const backend = await openBackend(topo.url, { keyPrefix: prefix });
    try {
      const lease = await backend.acquire('a', 'h', 60_000);
      const before = topo.masterPort;
      const after = topo.replicaPort;
      expect(await connectionsOn(before, prefix)).toBeGreaterThan(0);
      await topo.sync();
      // A loaded machine can leave the sentinel's view of the replica stale for a moment
      // (NOGOODSLAVE): asking again is the operator's move too.
      const asked = Date.now() + 30_000;
      for (;;) {
        const reply = await redisCall(topo.sentinelPorts[0]!, 'SENTINEL', 'FAILOVER', topo.name).catch(
          (err: unknown) => (err as Error).message,
        );
        if (reply === 'OK') break;
        if (Date.now() > asked) throw new Error(`SENTINEL FAILOVER kept answering ${String(reply)}`);
        await sleep(500);
      }
      // No call is made meanwhile, so no READONLY reply can be what moves the connection.
      const deadline = Date.now() + 60_000;
      while ((await connectionsOn(after, prefix)) === 0 || (await connectionsOn(before, prefix)) > 0) {
        if (Date.now() > deadline) throw new Error('the lease connection never moved to the new master');
        await sleep(100);
      }
      expect(await topo.askedMaster()).toBe(after);
      const renewed = await backend.renew(lease, 60_000);
      expect(renewed.fencingToken).toBe(lease.fencingToken);
      // The lease calls' own connection (wire.ts) follows ioredis' to the new master, and carries them.
      while ((await connectionsOn(after, prefix)) < 2) {
        if (Date.now() > deadline) throw new Error('the lease calls connection never moved');
        await backend.renew(lease, 60_000);
        await sleep(50);
      }
      for (let i = 0; i < 5; i++) await backend.renew(lease, 60_000);
      const evalshas = (text: string): number =>
        text.split('\n').filter((l) => l.includes(` name=worklease:${prefix} `) && l.includes(' cmd=evalsha'))
          .length;
      expect(evalshas(String(await redisCall(after, 'CLIENT', 'LIST')))).toBeGreaterThan(0);
    } finally {
      await backend.close();
    }
  });
});

describe('Sentinel tier: the master SIGKILLed under holders sharing one backend object', () => {
  it('0 violations, and the holders work again on the promoted replica', { timeout: 120_000 }, async () => {
    const result = await runChaos({
      privateSentinel: true,
      inProcess: true,
      url: 'redis+sentinel://private/m',
      workers: 6,
      items: 4,
      seconds: 20,
      ttlMs: 1000,
      faults: ['failover'],
      faultEveryMs: 8000,
    });
    console.log(result.line);
    expect(result.report.violations, result.report.violations.map((v) => v.message).join('\n')).toEqual([]);
    expect(result.injectorErrors).toEqual([]);
    const kills = result.history.flatMap((e) => (e.type === 'fault' && e.kind === 'failover' ? [e] : []));
    const runEnd = Math.max(...result.history.flatMap((e) => (e.type === 'call' ? [e.end] : [])));
    // A kill near the end of the run may leave the holders no time to show it; the first comes
    // 4-12 s into the 20 s run, so at least one leaves them several seconds.
    const checked = kills.filter((k) => runEnd - k.at >= 6000);
    expect(checked.length).toBeGreaterThan(0);
    for (const kill of checked) {
      // Recovery: from the kill to the end of the first call started after it that succeeded.
      const ends = result.history.flatMap((e) =>
        e.type === 'call' && e.outcome === 'ok' && e.start >= kill.at ? [e.end - kill.at] : [],
      );
      expect(ends.length, `no call succeeded after the failover at ${kill.at}`).toBeGreaterThan(0);
      console.log(
        `sentinel failover: ${kill.detail}; holders recovered ${Math.round(Math.min(...ends))} ms after the kill`,
      );
    }
    // The old master came back empty: a call there would have been DATASET_LOST.
    expect(result.stats.reduce((n, s) => n + s.datasetLost, 0)).toBe(0);
    expect(result.stats.flatMap((s) => s.unexpected)).toEqual([]);
    expect(result.report.acknowledged).toBeGreaterThan(0);
  });
});
