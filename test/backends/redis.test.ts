import net from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { openRedis } from '../../src/backends/redis/index.ts';
import { compareUtf8, fnv1a, INFO_FIELDS, LAYOUT_VERSION, Layout } from '../../src/backends/redis/layout.ts';
import { later, NOW_STR, STAGED_MIN_BYTES } from '../../src/backends/redis/scripts.ts';
import { startRedisServer } from '../../src/chaos/servers.ts';
import { ServerClock } from '../../src/console/clock.ts';
import { FleetModel } from '../../src/console/model.ts';
import type { LeaseAdmin, LeaseBackend, OpenOptions } from '../../src/index.ts';
import { codeOf, REDIS_URL, uniqueNamespace } from '../support/backends.ts';
import { type RedisCluster, startRedisCluster } from '../support/redis-cluster.ts';

const LIVE = 30_000;
/** Generous bound for "never hangs": callTimeoutMs in these tests is 2 s. */
const BOUND_MS = 8_000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Node {
  host: string;
  port: number;
}

/** Every master of the deployment behind `url` (the one node for standalone). */
async function masters(url: string): Promise<Node[]> {
  const hosts = url
    .replace(/^[a-z+]+:\/\//, '')
    .split('/')[0]!
    .split(',');
  const seeds = hosts.map((h) => {
    const i = h.lastIndexOf(':');
    return { host: h.slice(0, i), port: Number(h.slice(i + 1)) };
  });
  if (!url.startsWith('redis+cluster:')) return seeds;
  const text = String(await withNode(seeds[0]!, (r) => r.call('CLUSTER', 'NODES')));
  return text
    .split('\n')
    .filter((line) => line.includes('master') && !line.includes('fail'))
    .map((line) => {
      const addr = line.split(' ')[1]!.split('@')[0]!;
      const i = addr.lastIndexOf(':');
      return { host: addr.slice(0, i), port: Number(addr.slice(i + 1)) };
    });
}

async function withNode<T>(node: Node, fn: (r: Redis) => Promise<T>): Promise<T> {
  const r = new Redis({
    ...node,
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    connectionName: 'redis-test-admin',
  });
  r.on('error', () => {});
  await r.connect();
  try {
    return await fn(r);
  } finally {
    r.disconnect();
  }
}

/** Runs `fn` on every master; returns the results in master order. */
async function onMasters<T>(url: string, fn: (r: Redis) => Promise<T>): Promise<T[]> {
  return Promise.all((await masters(url)).map((m) => withNode(m, fn)));
}

async function keysOf(url: string, prefix: string): Promise<string[][]> {
  return onMasters(url, async (r) => {
    const out: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      out.push(...keys);
    } while (cursor !== '0');
    return out;
  });
}

async function dropPrefix(url: string, prefix: string): Promise<void> {
  await onMasters(url, async (r) => {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      // One key per UNLINK: on a cluster node the keys still span slots.
      await Promise.all(keys.map((k) => r.unlink(k)));
    } while (cursor !== '0');
  });
}

/** Kills this backend's connections (named worklease:<prefix>) on every master; returns how many. */
async function killConnections(url: string, prefix: string): Promise<number> {
  const counts = await onMasters(url, async (r) => {
    const list = String(await r.call('CLIENT', 'LIST', 'TYPE', 'normal'));
    let n = 0;
    for (const line of list.split('\n')) {
      const id = / id=(\d+) /.exec(` ${line}`)?.[1];
      if (id !== undefined && line.includes(` name=worklease:${prefix} `)) {
        n += Number(await r.call('CLIENT', 'KILL', 'ID', id));
      }
    }
    return n;
  });
  return counts.reduce((a, b) => a + b, 0);
}

/**
 * Waits until a standalone backend's lease calls connection (src/backends/redis/wire.ts), opened
 * in the background at its first lease call, is up: two connections named worklease:<prefix>.
 */
async function leaseConnectionUp(url: string, prefix: string): Promise<void> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const [list] = await onMasters(url, (r) => r.call('CLIENT', 'LIST', 'TYPE', 'normal'));
    if (String(list).split(` name=worklease:${prefix} `).length - 1 >= 2) return;
    if (Date.now() > deadline) throw new Error('the lease calls connection never came up');
    await sleep(20);
  }
}

/** Settles `p` or fails the test when it takes longer than `ms` (a hang). */
async function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`did not settle within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Opens backends under fresh prefixes and cleans everything up after each test. */
function harness(url: () => string) {
  let opened: Array<{ b: LeaseBackend; url: string; prefix: string }> = [];
  afterEach(async () => {
    const list = opened;
    opened = [];
    await Promise.all(list.map((o) => o.b.close().catch(() => {})));
    for (const o of list) await dropPrefix(o.url, o.prefix);
  });
  return {
    async open(prefix = uniqueNamespace('rt'), extra: OpenOptions = {}, at = url()) {
      const b = await openRedis(at, { keyPrefix: prefix, callTimeoutMs: 2000, ...extra });
      opened.push({ b, url: at, prefix });
      return { b, prefix };
    },
    track(b: LeaseBackend, prefix: string, at = url()) {
      opened.push({ b, url: at, prefix });
    },
  };
}

const targets = [
  { name: 'redis', url: () => REDIS_URL },
  { name: 'redis-cluster', url: () => inject('redisClusterUrl') },
];

describe.each(targets)('Redis backend on $name', ({ name, url }) => {
  const h = harness(url);
  const cluster = name === 'redis-cluster';

  it('opens with the right kind and hides the password in its url', async () => {
    const { b } = await h.open();
    expect(b.kind).toBe(name);
    const withPassword = url().replace('://', '://someone:s3cret@');
    const err = await openRedis(withPassword, { keyPrefix: uniqueNamespace('rt'), callTimeoutMs: 2000 }).then(
      (x) => x,
      (e: unknown) => e as Error,
    );
    // The servers here have no password: the AUTH is refused, and the secret never shows up.
    if (err instanceof Error) expect(err.message).not.toContain('s3cret');
    else {
      expect(err.url).not.toContain('s3cret');
      await err.close();
    }
  });

  it('keeps every key of one work item in one hash slot, and lays keys out as documented', async () => {
    const { b, prefix } = await h.open();
    const layout = new Layout(prefix, 32);
    const ids = ['a', 'job/42', 'z🙂', '{tag}x', 'päckchen', 'x'.repeat(512)];
    const forced = new Map<string, bigint>();
    for (const id of ids) {
      const rec = await b.acquire(id, 'h1', LIVE);
      await b.checkpoint(rec, Uint8Array.of(0, 255, 1), LIVE);
      const f = await b.admin.forceRelease(id, {
        expectedToken: rec.fencingToken,
        operator: 'op',
        reason: 'layout test',
      });
      forced.set(id, f.fencingToken);
    }
    if (cluster) {
      await withNode((await masters(url()))[0]!, async (r) => {
        for (const id of ids) {
          const slots = new Set<number>();
          for (const key of layout.keysOf(id)) slots.add(Number(await r.call('CLUSTER', 'KEYSLOT', key)));
          expect(slots.size, `keys of '${id}'`).toBe(1);
        }
      });
    }
    // The lease calls write no index entry: the first read brings the indexes up (layout.ts, Indexes).
    expect((await keysOf(url(), prefix)).flat().filter((k) => /:(ids|exp|ix)$/.test(k))).toEqual([]);
    expect(await b.admin.count()).toBe(ids.length);
    const all = (await keysOf(url(), prefix)).flat();
    expect(all).toContain(`${prefix}:meta`);
    for (const key of all) expect(key.startsWith(`${prefix}:`)).toBe(true);
    // Per key: its type, and that no lease data carries a Redis TTL (expired leases stay visible).
    const id = ids[0]!;
    const [leases, stateKey, idx, exp, ix, chg, aud, idKey, staging] = layout.keysOf(id);
    const expected: Record<string, string> = {
      [leases!]: 'hash',
      [stateKey!]: 'string',
      [idx!]: 'zset',
      [exp!]: 'zset',
      [ix!]: 'string',
      [chg!]: 'stream',
      [aud!]: 'stream',
      [idKey!]: 'string',
      [`${prefix}:meta`]: 'hash',
    };
    const admin = cluster
      ? new Redis.Cluster((await masters(url())).slice(0, 1), { lazyConnect: true })
      : new Redis(url(), { lazyConnect: true });
    admin.on('error', () => {});
    await admin.connect();
    try {
      for (const [key, type] of Object.entries(expected)) {
        expect(await admin.type(key), key).toBe(type);
        expect(await admin.pttl(key), key).toBe(-1);
      }
      const meta = await admin.hgetall(`${prefix}:meta`);
      expect(meta).toMatchObject({
        layout: String(LAYOUT_VERSION),
        buckets: '32',
        ready: '1',
        dataset: expect.stringMatching(/^[0-9a-f]{24}$/),
      });
      // Every bucket carries the dataset id, in its own slot.
      for (const key of layout.id) expect(await admin.get(key), key).toBe(meta.dataset);
      // One packed field per lease: the INFO_FIELDS values joined by LF.
      const packed = (await admin.hget(leases!, id))!.split('\n');
      expect(packed).toHaveLength(INFO_FIELDS.length);
      const lease = Object.fromEntries(INFO_FIELDS.map((f, i) => [f, packed[i]]));
      expect(lease).toMatchObject({
        holder: 'h1',
        token: String(forced.get(id)),
        ended: 'force-released',
        state_size: '3',
      });
      expect(await admin.getBuffer(stateKey!)).toEqual(Buffer.from([0, 255, 1]));
      // A large checkpoint's staging key lives only inside its transaction (scripts.ts, checkpointStaged).
      expect(await admin.exists(staging!)).toBe(0);
      expect(await admin.zscore(idx!, id)).toBe('0');
      expect(Number(await admin.zscore(exp!, id))).toBe(Number(lease.expires_at));
      const [[, fields]] = (await admin.xrevrange(chg!, '+', '-', 'COUNT', 1)) as [[string, string[]]];
      // The change feed carries the packed lease, never checkpoint bytes.
      expect(fields).toEqual(['c', `force-released\n${id}\n${packed.join('\n')}`]);
      // The indexes stand at the stream's last entry: `<stream id> <entries added>`.
      const [[lastId]] = (await admin.xrevrange(chg!, '+', '-', 'COUNT', 1)) as [[string, string[]]];
      expect(await admin.get(ix!)).toMatch(new RegExp(`^${lastId} \\d+$`));
      expect(await admin.xlen(aud!)).toBeGreaterThanOrEqual(1);
    } finally {
      admin.disconnect();
    }
  });

  // Cluster only (a standalone server is one master); defined only there rather than skipped.
  if (cluster) {
    it('spreads the buckets of one prefix over all masters', async () => {
      const { b, prefix } = await h.open();
      await Promise.all(Array.from({ length: 64 }, (_, i) => b.acquire(`spread-${i}`, 'h', LIVE)));
      const perMaster = await keysOf(url(), prefix);
      expect(perMaster).toHaveLength(3);
      for (const keys of perMaster) expect(keys.filter((k) => k.endsWith('}:m')).length).toBeGreaterThan(0);
    });
  }

  it('after CLIENT KILL of its connections a call succeeds or fails with BACKEND_UNAVAILABLE in bound, then recovers', async () => {
    const { b, prefix } = await h.open();
    const rec = await b.acquire('killed', 'h1', LIVE);
    for (let round = 0; round < 3; round++) {
      expect(await killConnections(url(), prefix)).toBeGreaterThan(0);
      const code = await within(BOUND_MS, codeOf(b.renew(rec, LIVE)));
      expect(['OK', 'BACKEND_UNAVAILABLE']).toContain(code);
      let recovered = 'none';
      const deadline = Date.now() + BOUND_MS;
      while (recovered !== 'OK' && Date.now() < deadline) {
        recovered = await within(BOUND_MS, codeOf(b.renew(rec, LIVE)));
        if (recovered !== 'OK') await sleep(50);
      }
      expect(recovered).toBe('OK');
    }
    expect((await b.admin.get('killed'))?.fencingToken).toBe(rec.fencingToken);
  });

  it('recovers from NOSCRIPT after SCRIPT FLUSH', async () => {
    const { b } = await h.open();
    const rec = await b.acquire('flushed', 'h1', LIVE);
    await onMasters(url(), (r) => r.script('FLUSH'));
    await b.renew(rec, LIVE);
    await b.checkpoint(rec, Uint8Array.of(1, 2, 3), LIVE);
    expect((await b.readCheckpoint(rec)).state).toEqual(Buffer.from([1, 2, 3]));
    await onMasters(url(), (r) => r.script('FLUSH'));
    const other = await b.acquire('flushed-2', 'h2', LIVE);
    expect((await b.admin.get('flushed-2'))?.fencingToken).toBe(other.fencingToken);
    await b.release(rec);
    expect((await b.admin.get('flushed'))?.ended).toBe('released');
    expect((await b.admin.changes({ cursor: await b.admin.changeCursor() })).gap).toBe(false);
  });

  it(`a checkpoint from ${STAGED_MIN_BYTES} bytes is stored as sent and leaves no staging key, on success, on every refusal and after NOSCRIPT${cluster ? '' : '; its bytes, and a read state, skip Lua (one transaction)'}`, async () => {
    const { b, prefix } = await h.open();
    const layout = new Layout(prefix, 32);
    const node = async (id: string): Promise<Node> => nodeOfKey(url(), layout.m[layout.bucketOf(id)]!);
    /**
     * The last command of each of this backend's connections to the server of `id`'s bucket, after
     * `fn` (per connection: commandstats would count other test files' commands on a shared server).
     */
    const lastCommands = async (id: string, fn: () => Promise<unknown>): Promise<string[]> => {
      await fn();
      const list = String(await withNode(await node(id), (r) => r.call('CLIENT', 'LIST', 'TYPE', 'normal')));
      return list
        .split('\n')
        .filter((line) => line.includes(` name=worklease:${prefix} `))
        .map((line) => / cmd=(\S+)/.exec(line)?.[1] ?? '');
    };
    const staged = async (id: string): Promise<number> =>
      withNode(await node(id), (r) => r.exists(layout.stagingKey(layout.bucketOf(id), id)));
    const bytes = (n: number, seed: number): Buffer =>
      Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + seed) % 256));

    const rec = await b.acquire('big', 'h1', LIVE);
    if (!cluster) {
      await leaseConnectionUp(url(), prefix);
      // Its login's replies were written before this call's: once it answers, the connection is ready.
      await b.renew(rec, LIVE);
    }
    const big = bytes(256 * 1024, 1);
    // Standalone: one transaction (its last command EXEC) on the lease calls connection. A Cluster
    // sends the plain script.
    const viaExec = !cluster;
    expect((await lastCommands('big', () => b.checkpoint(rec, big, LIVE))).includes('exec')).toBe(viaExec);
    expect((await b.readCheckpoint(rec)).state).toEqual(big);
    expect((await b.admin.get('big'))?.checkpointSize).toBe(big.length);
    expect(await staged('big')).toBe(0);
    // Just below the threshold: the plain script; at it: the transaction.
    const below = await lastCommands('big', () => b.checkpoint(rec, bytes(STAGED_MIN_BYTES - 1, 2), LIVE));
    expect(below).toContain('evalsha');
    expect(below).not.toContain('exec');
    const at = await lastCommands('big', () => b.checkpoint(rec, bytes(STAGED_MIN_BYTES, 3), LIVE));
    expect(at.includes('exec')).toBe(viaExec);
    expect((await b.readCheckpoint(rec)).state).toEqual(bytes(STAGED_MIN_BYTES, 3));
    expect((await b.admin.get('big'))?.checkpointSize).toBe(STAGED_MIN_BYTES);

    // readCheckpoint: on standalone one transaction too (reads of the lease, the state and the dataset id).
    const read = await lastCommands('big', () => b.readCheckpoint(rec));
    expect(read.includes('exec')).toBe(viaExec);
    const fresh = await b.acquire('big-fresh', 'h1', LIVE);
    expect(await b.readCheckpoint(fresh)).toEqual({ state: null, cleanHandoff: true });

    // Refusals store nothing and leave no staging key.
    const stale = { ...rec, fencingToken: rec.fencingToken - 1n };
    expect(await codeOf(b.readCheckpoint(stale))).toBe('FENCED');
    expect(await codeOf(b.checkpoint(stale, bytes(64 * 1024, 4), LIVE))).toBe('FENCED');
    expect(await codeOf(b.checkpoint({ ...rec, workId: 'never-acquired' }, big, LIVE))).toBe('FENCED');
    expect(await staged('never-acquired')).toBe(0);
    const short = await b.acquire('big-short', 'h1', 50);
    await sleep(120);
    expect(await codeOf(b.checkpoint(short, big, LIVE))).toBe('LEASE_EXPIRED');
    expect(await staged('big-short')).toBe(0);
    expect((await b.admin.get('big-short'))?.checkpointSize).toBeNull();
    expect((await b.readCheckpoint(rec)).state).toEqual(bytes(STAGED_MIN_BYTES, 3));
    expect(await staged('big')).toBe(0);

    // After SCRIPT FLUSH the transaction's script answers NOSCRIPT: loaded, sent once more, stored.
    await onMasters(url(), (r) => r.script('FLUSH'));
    const again = bytes(300 * 1024, 5);
    await b.checkpoint(rec, again, LIVE);
    expect((await b.readCheckpoint(rec)).state).toEqual(again);
    expect(await staged('big')).toBe(0);
  });

  it('prune deletes a staging key left behind with the lease and its checkpoint', async () => {
    const { b, prefix } = await h.open();
    const layout = new Layout(prefix, 32);
    const rec = await b.acquire('left', 'h1', LIVE);
    await b.checkpoint(rec, Uint8Array.of(1, 2, 3), LIVE);
    await b.release(rec);
    const bucket = layout.bucketOf('left');
    const n = await nodeOfKey(url(), layout.m[bucket]!);
    // What a transaction whose script failed would leave (scripts.ts, checkpointStaged).
    await withNode(n, (r) => r.set(layout.stagingKey(bucket, 'left'), 'orphan'));
    await sleep(5);
    expect(await b.admin.prune({ olderThanMs: 0 })).toBe(1);
    await withNode(n, async (r) => {
      expect(await r.exists(layout.stagingKey(bucket, 'left'), layout.stateKey(bucket, 'left'))).toBe(0);
    });
  });

  it('reports a gap when the change stream is not the one the cursor read (deleted, then as many entries or more)', async () => {
    // As after a failover to a replica that had not received the last entries and then took new
    // writes: the cursor's ordinal is reached again, or passed, by other entries.
    const { b, prefix } = await h.open();
    const layout = new Layout(prefix, 32);
    const id = 'restarted';
    const chg = layout.chg[layout.bucketOf(id)]!;
    const node = await nodeOfKey(url(), chg);
    let rec = await b.acquire(id, 'h1', LIVE);
    await b.release(rec);
    const read = await b.admin.changes({ cursor: await b.admin.changeCursor() });
    const at = (await b.admin.changes({ cursor: read.cursor })).cursor;
    expect(at).toMatch(/~2(\.|$)/);
    for (const writes of [2, 3]) {
      await withNode(node, (r) => r.del(chg));
      for (let i = 0; i < writes; i++) {
        if (i % 2 === 0) rec = await b.acquire(id, 'h1', LIVE);
        else await b.release(rec);
      }
      expect((await b.admin.changes({ cursor: at })).gap, `${writes} entries after the restart`).toBe(true);
      if (writes % 2 === 1) await b.release(rec);
    }
  });

  it('reports a gap when the change stream was trimmed past the cursor, and none otherwise', async () => {
    const { b, prefix } = await h.open();
    const layout = new Layout(prefix, 32);
    const id = 'trimmed';
    const chg = layout.chg[layout.bucketOf(id)]!;
    // XTRIM through a cluster-aware client so it lands on the bucket's master.
    const admin = cluster
      ? new Redis.Cluster((await masters(url())).slice(0, 1), { lazyConnect: true })
      : new Redis(url(), { lazyConnect: true });
    admin.on('error', () => {});
    await admin.connect();
    try {
      // A cursor taken on empty streams ('0-0' everywhere), then entries added and some trimmed away.
      const start = await b.admin.changeCursor();
      let rec = await b.acquire(id, 'h1', LIVE);
      expect((await b.admin.changes({ cursor: start })).gap).toBe(false);
      const afterFirst = await b.admin.changeCursor();
      await b.release(rec);
      rec = await b.acquire(id, 'h1', LIVE);
      await b.release(rec);
      expect(await admin.xtrim(chg, 'MAXLEN', 1)).toBe(3);
      const fromStart = await b.admin.changes({ cursor: start });
      expect(fromStart.gap).toBe(true);
      expect(fromStart.changes).toEqual([]);
      // The cursor's own entry and the one after it were trimmed: changes were lost.
      expect((await b.admin.changes({ cursor: afterFirst })).gap).toBe(true);
      // A fresh cursor is fine, also after everything was trimmed.
      const fresh = await b.admin.changeCursor();
      expect(await admin.xtrim(chg, 'MAXLEN', 0)).toBe(1);
      const batch = await b.admin.changes({ cursor: fresh });
      expect(batch).toMatchObject({ gap: false, changes: [] });
      rec = await b.acquire(id, 'h1', LIVE);
      const next = await b.admin.changes({ cursor: batch.cursor });
      expect(next.gap).toBe(false);
      expect(next.changes.map((c) => [c.workId, c.kind, c.version])).toEqual([[id, 'acquired', 5n]]);
    } finally {
      admin.disconnect();
    }
  });

  // Wake-ups are published on a Cluster only: a standalone watch blocks in XREAD on the streams.
  it(`renew and checkpoint append no change entry and publish no wake-up; acquire and release append one each${cluster ? ' and publish one each' : ' and publish none'}`, async () => {
    const { b, prefix } = await h.open();
    const layout = new Layout(prefix, 32);
    const id = 'quiet';
    const chg = layout.chg[layout.bucketOf(id)]!;
    const seeds = (await masters(url())).slice(0, 1);
    const admin = cluster
      ? new Redis.Cluster(seeds, { lazyConnect: true })
      : new Redis(url(), { lazyConnect: true });
    const sub = cluster
      ? new Redis.Cluster(seeds, { lazyConnect: true, shardedSubscribers: true })
      : new Redis(url(), { lazyConnect: true });
    admin.on('error', () => {});
    sub.on('error', () => {});
    const messages: string[] = [];
    sub.on('smessage', (channel: string) => messages.push(channel));
    await admin.connect();
    await sub.connect();
    const until = async (n: number): Promise<void> => {
      const deadline = Date.now() + BOUND_MS;
      while (messages.length < n) {
        if (Date.now() > deadline) throw new Error(`${messages.length} of ${n} wake-ups`);
        await sleep(10);
      }
    };
    try {
      await sub.ssubscribe(chg);
      const rec = await b.acquire(id, 'h', LIVE);
      if (cluster) await until(1);
      expect(await admin.xlen(chg)).toBe(1);
      await b.renew(rec, LIVE);
      await b.checkpoint(rec, Uint8Array.of(7), LIVE);
      await b.renew(rec, LIVE);
      expect(await admin.xlen(chg)).toBe(1);
      expect((await b.admin.get(id))?.version).toBe(4n);
      await b.release(rec);
      if (cluster) {
        // Messages arrive in order on the one subscription: a heartbeat's would come before the release's.
        await until(2);
        expect(messages).toEqual([chg, chg]);
      } else {
        // A PING on the subscriber comes back after any message published before it.
        await sub.call('PING');
        expect(messages).toEqual([]);
      }
      expect(await admin.xlen(chg)).toBe(2);
      const entries = await admin.xrange(chg, '-', '+');
      expect(entries.map(([, fields]) => fields[1]!.split('\n').slice(0, 2))).toEqual([
        ['acquired', id],
        ['released', id],
      ]);
      // The release's entry carries the lease as the heartbeats left it.
      const released = await b.admin.get(id);
      expect(released).toMatchObject({ version: 5n, checkpointSize: 1, ended: 'released' });
      expect(entries[1]![1][1]).toBe(
        `released\n${id}\n${await admin.hget(layout.m[layout.bucketOf(id)]!, id)}`,
      );
    } finally {
      sub.disconnect();
      admin.disconnect();
    }
  });

  // The cork is for standalone connections only (wire.ts, send.ts): a Cluster client sends through
  // ioredis' own per-node queues, so this behaviour exists only in the standalone run. Both paths:
  // the lease calls connection, and ioredis (which carries the lease calls with durability on).
  if (!cluster)
    it.each([
      ['the lease calls connection', {}],
      ['ioredis, with durability on', { durability: { replicas: 1, timeoutMs: 100 } }],
    ] as const)(
      'writes a lone call at once and the calls sent while others are in flight in batches of 8, on %s',
      async (_, extra) => {
        const { b: plain, prefix } = await h.open();
        const recs = await Promise.all(
          Array.from({ length: 32 }, (_, i) => plain.acquire(`cork-${i}`, 'h', LIVE)),
        );
        // Renews write no WAIT, so they work with durability on against a server without replicas.
        const b = 'durability' in extra ? (await h.open(prefix, extra)).b : plain;
        await b.renew(recs[0]!, LIVE);
        // The lease calls connection's login is a write of its own: let it happen before counting.
        if (b === plain) await leaseConnectionUp(url(), prefix);
        const proto = net.Socket.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
        const write = proto._write!;
        const writev = proto._writev!;
        let writes = 0;
        let chunks = 0;
        proto._write = function (this: unknown, ...a: unknown[]) {
          writes++;
          chunks++;
          return write.apply(this, a);
        };
        proto._writev = function (this: unknown, ...a: unknown[]) {
          writes++;
          chunks += (a[0] as unknown[]).length;
          return writev.apply(this, a);
        };
        try {
          await b.renew(recs[0]!, LIVE);
          expect([writes, chunks]).toEqual([1, 1]);
          writes = 0;
          chunks = 0;
          await Promise.all(recs.map((r) => b.renew(r, LIVE)));
          // The first at once; the other 31 in writevs of 8 (cork.ts, CORK_BATCH) while the rest are still
          // being prepared, and the last 7 at the end of the tick.
          expect([writes, chunks]).toEqual([5, 32]);
        } finally {
          proto._write = write;
          proto._writev = writev;
        }
      },
    );

  if (!cluster)
    it.each([
      ['the lease calls connection', {}, 32],
      ['ioredis, with durability on', { durability: { replicas: 1, timeoutMs: 1 } }, 31],
    ] as const)(
      'hands the socket the checkpoint bytes themselves, not a copy, on %s; they arrive byte-exact',
      async (_, extra, handed) => {
        const { b: plain, prefix } = await h.open();
        const recs = await Promise.all(
          Array.from({ length: 32 }, (_, i) => plain.acquire(`zc-${i}`, 'h', LIVE)),
        );
        await plain.renew(recs[0]!, LIVE);
        await leaseConnectionUp(url(), prefix);
        const b = 'durability' in extra ? (await h.open(prefix, extra)).b : plain;
        // Every byte value, in a different order per lease, so a mangled or swapped state shows.
        const states = recs.map((_, i) =>
          Buffer.from(Array.from({ length: 1024 }, (_, k) => (k * 7 + i) % 256)),
        );
        const proto = net.Socket.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
        const writev = proto._writev!;
        const sent = new Set<unknown>();
        proto._writev = function (this: unknown, ...a: unknown[]) {
          for (const c of a[0] as Array<{ chunk: unknown }>) sent.add(c.chunk);
          return writev.apply(this, a);
        };
        try {
          // With durability on and no replica, each checkpoint is stored and then fails NOT_DURABLE.
          await Promise.allSettled(recs.map((r, i) => b.checkpoint(r, states[i]!, LIVE)));
        } finally {
          proto._writev = writev;
        }
        // The lease calls connection writes even a lone call's parts in one writev, so every state
        // buffer reaches the socket as it is. Through ioredis the first call is written at once,
        // uncorked, as one frame (a copy), and only the 31 sent while it was in flight go into the cork.
        expect(states.filter((s) => sent.has(s))).toHaveLength(handed);
        expect(sent.has(states[0])).toBe(handed === 32);
        for (const [i, r] of recs.entries()) {
          const read = await plain.readCheckpoint(r);
          expect(Buffer.from(read.state!).equals(states[i]!)).toBe(true);
        }
      },
    );

  it('keeps two prefixes apart', async () => {
    const { b: one, prefix: p1 } = await h.open();
    const { b: two, prefix: p2 } = await h.open();
    const r1 = await one.acquire('shared-id', 'h1', LIVE);
    await one.release(r1);
    const again = await one.acquire('shared-id', 'h1', LIVE);
    expect(again.fencingToken > r1.fencingToken).toBe(true);
    const r2 = await two.acquire('shared-id', 'h2', LIVE);
    expect((await two.admin.get('shared-id'))?.fencingToken).toBe(r2.fencingToken);
    expect((await two.admin.get('shared-id'))?.version).toBe(1n);
    expect((await one.admin.list()).items.map((i) => [i.workId, i.holderId])).toEqual([['shared-id', 'h1']]);
    expect((await two.admin.list()).items.map((i) => [i.workId, i.holderId])).toEqual([['shared-id', 'h2']]);
    const cursor = await two.admin.changeCursor();
    await one.admin.forceRelease('shared-id', {
      expectedToken: again.fencingToken,
      operator: 'op',
      reason: 'isolation',
    });
    expect((await two.admin.changes({ cursor })).changes).toEqual([]);
    expect(await two.admin.audit()).toEqual([]);
    expect(await one.admin.prune({ olderThanMs: 0 })).toBe(1);
    expect((await two.admin.get('shared-id'))?.holderId).toBe('h2');
    for (const keys of await keysOf(url(), p1))
      for (const k of keys) expect(k.startsWith(`${p1}:`)).toBe(true);
    expect((await keysOf(url(), p2)).flat().every((k) => !k.startsWith(`${p1}:`))).toBe(true);
  });

  it('with migrate:false refuses a prefix without (or with another) layout: SCHEMA_MISMATCH', async () => {
    const prefix = uniqueNamespace('rt');
    const err = await openRedis(url(), { keyPrefix: prefix, migrate: false, callTimeoutMs: 2000 }).then(
      () => null,
      (e: unknown) => e as Error & { code?: string },
    );
    expect(err?.code).toBe('SCHEMA_MISMATCH');
    expect(err?.message).toContain('worklease migrate');
    expect((await keysOf(url(), prefix)).flat()).toEqual([]);
    const { b } = await h.open(prefix);
    const again = await openRedis(url(), { keyPrefix: prefix, migrate: false, callTimeoutMs: 2000 });
    h.track(again, prefix);
    const rec = await b.acquire('m', 'h', LIVE);
    expect((await again.admin.get('m'))?.fencingToken).toBe(rec.fencingToken);
    await withNode(
      await nodeOfKey(url(), `${prefix}:meta`),
      async (r) => void (await r.hset(`${prefix}:meta`, 'layout', '99')),
    );
    expect(await codeOf(openRedis(url(), { keyPrefix: prefix, migrate: false, callTimeoutMs: 2000 }))).toBe(
      'SCHEMA_MISMATCH',
    );
    expect(await codeOf(openRedis(url(), { keyPrefix: prefix, callTimeoutMs: 2000 }))).toBe(
      'SCHEMA_MISMATCH',
    );
  });

  it('watchChanges wakes a reader soon after a write, and stops when asked', async () => {
    const { b } = await h.open();
    let wakes = 0;
    const waitWake = async (after: number): Promise<void> => {
      const deadline = Date.now() + BOUND_MS;
      while (wakes <= after) {
        if (Date.now() > deadline) throw new Error('no wake-up');
        await sleep(10);
      }
    };
    const stop = b.admin.watchChanges?.(() => {
      wakes++;
    });
    expect(stop).toBeTypeOf('function');
    // The first wake-up says the subscription is up (writes before it may not wake anyone).
    await waitWake(0);
    for (const id of ['w-1', 'w-2', 'w-3']) {
      const seen = wakes;
      const rec = await b.acquire(id, 'h', LIVE);
      await waitWake(seen);
      await b.release(rec);
      await waitWake(seen + 1);
    }
    stop!();
    const seen = wakes;
    await b.acquire('w-after-stop', 'h', LIVE);
    await sleep(200);
    expect(wakes).toBe(seen);
  });

  // The standalone watch: one XREAD BLOCK over every bucket's stream (feed.ts, startBlockingWatch).
  if (!cluster)
    it('the standalone watch: a reader woken by it alone sees every write of a burst, with fewer wake-ups than writes, and again after its connection is killed', async () => {
      const { b, prefix } = await h.open();
      const admin = new Redis(url());
      admin.on('error', () => {});
      let cursor = await b.admin.changeCursor();
      const seen = new Set<string>();
      let wakes = 0;
      let reading: Promise<void> = Promise.resolve();
      // Reads the feed on every wake-up and never otherwise: a missed wake-up leaves a write unseen.
      const read = async (): Promise<void> => {
        for (;;) {
          const batch = await b.admin.changes({ cursor, limit: 1000 });
          cursor = batch.cursor;
          for (const c of batch.changes) seen.add(`${c.workId} ${c.kind}`);
          if (batch.changes.length === 0) return;
        }
      };
      const stop = b.admin.watchChanges!(() => {
        wakes++;
        reading = reading.then(read);
      });
      const until = async (what: () => boolean, why: string): Promise<void> => {
        const deadline = Date.now() + BOUND_MS;
        while (!what()) {
          if (Date.now() > deadline) throw new Error(why);
          await sleep(10);
        }
      };
      try {
        await until(() => wakes > 0, 'no first wake-up');
        const first = wakes;
        const ids = Array.from({ length: 400 }, (_, i) => `burst-${i}`);
        for (let i = 0; i < ids.length; i += 50)
          await Promise.all(ids.slice(i, i + 50).map((id) => b.acquire(id, 'h', LIVE)));
        await until(() => ids.every((id) => seen.has(`${id} acquired`)), `${seen.size} of 400 writes seen`);
        expect(wakes - first).toBeLessThan(ids.length);
        // Killed: the XREAD fails, the watch reconnects, reads the heads again and wakes the readers.
        const watchers = async (): Promise<string[]> =>
          String(await admin.call('CLIENT', 'LIST', 'TYPE', 'normal'))
            .split('\n')
            .filter((line) => line.includes(` name=worklease:${prefix}:watch `));
        expect(await watchers()).toHaveLength(1);
        // Idle now: the one watch connection is blocked (flags=b) in its XREAD.
        let blocked: string | undefined;
        const deadline = Date.now() + BOUND_MS;
        while (blocked === undefined) {
          if (Date.now() > deadline) throw new Error('the watch is not blocked in XREAD');
          blocked = (await watchers()).find(
            (line) => line.includes(' flags=b ') && line.includes(' cmd=xread '),
          );
          if (blocked === undefined) await sleep(10);
        }
        const id = /\bid=(\d+)/.exec(blocked!)![1]!;
        const before = wakes;
        expect(Number(await admin.call('CLIENT', 'KILL', 'ID', id))).toBe(1);
        await until(() => wakes > before, 'no wake-up after the watch reconnected');
        const rec = await b.acquire('after-kill', 'h', LIVE);
        await until(() => seen.has('after-kill acquired'), 'the write after the reconnect was not seen');
        await b.release(rec);
        await until(() => seen.has('after-kill released'), 'the release after the reconnect was not seen');
      } finally {
        stop();
        admin.disconnect();
      }
    });

  it('a fleet model on it waits for wake-ups instead of polling, and still sees a write', async () => {
    const { b } = await h.open();
    let polls = 0;
    const admin: LeaseAdmin = {
      ...b.admin,
      changes: (o) => {
        polls++;
        return b.admin.changes(o);
      },
      watchChanges: (f) => b.admin.watchChanges!(f),
    };
    const clock = new ServerClock(() => b.admin.serverTime());
    await clock.measure();
    // Without the watch this model would poll every second when idle (and every 20 ms at first).
    const model = new FleetModel(admin, clock, { pollMinMs: 20 });
    try {
      model.start();
      await model.caughtUp();
      await sleep(1500);
      const before = polls;
      await sleep(2500);
      // Idle waits double towards 60 s: at most two polls here (a 1 s poll interval would make 2-3).
      expect(polls - before).toBeLessThanOrEqual(2);
      await b.acquire('seen-by-the-model', 'h', LIVE);
      const deadline = Date.now() + BOUND_MS;
      while (model.get('seen-by-the-model') === undefined && Date.now() < deadline) await sleep(20);
      expect(model.get('seen-by-the-model')?.holderId).toBe('h');
    } finally {
      await model.close();
    }
  });

  it('lists a sparse holder filter completely, in order, across buckets and scan caps', async () => {
    const { b } = await h.open();
    // 32 buckets × ~40 ids: more than one list call examines per bucket for a 1-item page.
    const rare = new Set(['r-0007', 'r-0333', 'r-0600', 'r-0901', 'r-1277']);
    await Promise.all(
      Array.from({ length: 1300 }, (_, i) => {
        const id = `r-${String(i).padStart(4, '0')}`;
        return b.acquire(id, rare.has(id) ? 'rare' : 'bulk', LIVE);
      }),
    );
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await b.admin.list({ holderId: 'rare', limit: 2, cursor });
      seen.push(...page.items.map((i) => i.workId));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== null && pages < 100);
    expect(seen).toEqual([...rare]);
    expect(
      (await b.admin.list({ holderId: 'rare', workIdPrefix: 'r-06' })).items.map((i) => i.workId),
    ).toEqual(['r-0600']);
  });

  it('a walk lists every lease after its change entries were trimmed away or its stream deleted', async () => {
    // The lease calls write no index entry; a read catches the indexes up from the change stream,
    // and rebuilds them from the bucket hash when entries it needs are gone (layout.ts, Indexes).
    const { b, prefix } = await h.open();
    const layout = new Layout(prefix, 32);
    const names = (tag: string, n: number): string[] =>
      Array.from({ length: n }, (_, i) => `${tag}-${String(i).padStart(2, '0')}`);
    const early = await Promise.all(names('a', 20).map((id) => b.acquire(id, 'h', LIVE)));
    expect(await b.admin.count()).toBe(20);
    await b.release(early[0]!);
    expect(await b.admin.prune({ olderThanMs: 0 })).toBe(1);
    // Entries the indexes have not seen: first acquires, a release, a force-release.
    await Promise.all(names('b', 20).map((id) => b.acquire(id, 'h', LIVE)));
    await b.release(early[1]!);
    await b.admin.forceRelease('a-02', {
      expectedToken: early[2]!.fencingToken,
      operator: 'op',
      reason: 't',
    });
    const trim = async (keys: readonly string[], how: (r: Redis, key: string) => Promise<unknown>) => {
      for (const key of keys) await withNode(await nodeOfKey(url(), key), (r) => how(r, key));
    };
    await trim(layout.chg, (r, key) => r.xtrim(key, 'MAXLEN', 0));
    const expected = [...names('a', 20).slice(1), ...names('b', 20)];
    expect(await walk(b.admin, 7)).toEqual(expected);
    expect(await b.admin.count()).toBe(39);
    // The rebuilt expiry index finds the release and the force-release that only the trimmed entries told of.
    expect(await b.admin.prune({ olderThanMs: 0 })).toBe(2);
    expect(await b.admin.count()).toBe(37);
    // A stream that started over (deleted, then written to): the indexes' position is not in it.
    await b.acquire('c-00', 'h', LIVE);
    await trim(layout.chg, (r, key) => r.del(key));
    await b.acquire('c-01', 'h', LIVE);
    expect(await walk(b.admin, 7)).toEqual([
      ...expected.filter((id) => id !== 'a-01' && id !== 'a-02'),
      'c-00',
      'c-01',
    ]);
  });

  it('a read applies more change entries than one catch-up script takes', async () => {
    // 600 acquire+release cycles of one work item: 1 200 entries in its bucket's stream, over the
    // 500 one script applies, then a second item in the same bucket.
    const { b, prefix } = await h.open();
    const layout = new Layout(prefix, 32);
    const bucket = layout.bucketOf('busy');
    const other = Array.from({ length: 200 }, (_, i) => `other-${i}`).find(
      (id) => layout.bucketOf(id) === bucket,
    )!;
    expect(await b.admin.count()).toBe(0);
    for (let i = 0; i < 600; i++) await b.release(await b.acquire('busy', 'h', LIVE));
    await b.acquire(other, 'h', LIVE);
    const key = layout.ix[bucket]!;
    const node = await nodeOfKey(url(), key);
    const before = await withNode(node, (r) => r.get(key));
    expect((await b.admin.list({})).items.map((i) => i.workId).sort()).toEqual(['busy', other].sort());
    const after = await withNode(node, (r) => r.get(key));
    expect(before).toMatch(/ 0$/);
    expect(after).toMatch(/ 1201$/);
    expect(await b.admin.prune({ olderThanMs: 0 })).toBe(1);
    // A rebuild over more fields than one script scans (500): 700 more leases in that bucket.
    const more: string[] = [];
    for (let i = 0; more.length < 700; i++)
      if (layout.bucketOf(`more-${i}`) === bucket) more.push(`more-${i}`);
    await Promise.all(more.map((id) => b.acquire(id, 'h', LIVE)));
    await withNode(node, (r) => r.del(key));
    expect(await b.admin.count()).toBe(701);
    expect(await walk(b.admin, 250)).toEqual([other, ...more].sort(compareUtf8));
  });

  it('prune finds a lease whose renew shortened it, and skips one renewed past its old expiry', async () => {
    const { b, prefix } = await h.open();
    const layout = new Layout(prefix, 32);
    const shortened = await b.acquire('shortened', 'h', LIVE);
    await b.renew(shortened, 1);
    const extended = await b.acquire('extended', 'h', 50);
    await b.renew(extended, LIVE);
    await sleep(80);
    expect(await b.admin.prune({ olderThanMs: 0 })).toBe(1);
    expect(await b.admin.get('shortened')).toBeNull();
    const info = await b.admin.get('extended');
    expect(info?.ended).toBeNull();
    await withNode(await nodeOfKey(url(), layout.exp[layout.bucketOf('extended')]!), async (r) => {
      expect(Number(await r.zscore(layout.exp[layout.bucketOf('extended')]!, 'extended'))).toBe(
        info?.expiresAt.getTime(),
      );
    });
    // The token continues after the prune.
    expect((await b.acquire('shortened', 'h', LIVE)).fencingToken > shortened.fencingToken).toBe(true);
  });

  it('prune removes an expiry-index entry whose lease was never written (a first acquire cut short)', async () => {
    // Layout 4 added a first acquire's expiry-index entry before anything else it wrote, so a script
    // that failed after it (a Cluster slot moving) left the entry alone; such an entry, in a prefix
    // upgraded to layout 5, must not count or linger.
    const { b, prefix } = await h.open();
    const layout = new Layout(prefix, 32);
    const exp = layout.exp[layout.bucketOf('orphan')]!;
    const node = await nodeOfKey(url(), exp);
    await withNode(node, (r) => r.zadd(exp, Date.now() - 1000, 'orphan'));
    expect(await b.admin.count()).toBe(0);
    expect((await b.admin.list({})).items).toEqual([]);
    expect(await b.admin.prune({ olderThanMs: 0 })).toBe(0);
    expect(await withNode(node, (r) => r.zscore(exp, 'orphan'))).toBeNull();
    expect(await b.admin.get('orphan')).toBeNull();
  });
});

/** The work ids of a whole `list` walk in pages of `limit`. */
async function walk(admin: LeaseAdmin, limit: number): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await admin.list({ cursor, limit });
    seen.push(...page.items.map((i) => i.workId));
    cursor = page.nextCursor;
  } while (cursor !== null);
  return seen;
}

/** The master that holds `key` (the only node for standalone). */
async function nodeOfKey(url: string, key: string): Promise<Node> {
  const all = await masters(url);
  if (!url.startsWith('redis+cluster:')) return all[0]!;
  const slot = Number(await withNode(all[0]!, (r) => r.call('CLUSTER', 'KEYSLOT', key)));
  const slots = (await withNode(all[0]!, (r) => r.call('CLUSTER', 'SLOTS'))) as Array<
    [number, number, [string, number]]
  >;
  const owner = slots.find(([from, to]) => slot >= from && slot <= to);
  if (owner === undefined) throw new Error(`no owner for slot ${slot}`);
  return { host: owner[2][0], port: Number(owner[2][1]) };
}

// CLIENT PAUSE stalls every client of a server, so these run on private servers.
describe('a call in flight when its connection is killed', () => {
  let standalone: { url: string; stop(): Promise<void> };
  let privateCluster: RedisCluster;
  beforeAll(async () => {
    [standalone, privateCluster] = await Promise.all([startRedisServer(), startRedisCluster(3)]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([standalone?.stop(), privateCluster?.stop()]);
  });

  it.each(['redis', 'redis-cluster'])(
    'on %s fails with BACKEND_UNAVAILABLE and is never re-sent (no double apply)',
    async (kind) => {
      const url = kind === 'redis' ? standalone.url : privateCluster.url;
      const prefix = uniqueNamespace('rtk');
      const b = await openRedis(url, { keyPrefix: prefix, callTimeoutMs: 2000 });
      try {
        await b.acquire('warm-up', 'h', LIVE);
        // Writes (and scripts) are held by the server; the kill then drops the held call with its client.
        await onMasters(url, (r) => r.call('CLIENT', 'PAUSE', '1500', 'WRITE'));
        const pending = within(BOUND_MS, codeOf(b.acquire('in-flight', 'h1', LIVE)));
        await sleep(200);
        expect(await killConnections(url, prefix)).toBeGreaterThan(0);
        expect(await pending).toBe('BACKEND_UNAVAILABLE');
        await onMasters(url, (r) => r.call('CLIENT', 'UNPAUSE'));
        await sleep(300);
        // Had the client re-sent the acquire after reconnecting, the item would now be held.
        expect(await within(BOUND_MS, b.admin.get('in-flight'))).toBeNull();
        const rec = await within(BOUND_MS, b.acquire('in-flight', 'h1', LIVE));
        // A first acquisition (version 1): the lost call was never applied.
        expect(await b.admin.get('in-flight')).toMatchObject({ fencingToken: rec.fencingToken, version: 1n });
      } finally {
        await onMasters(url, (r) => r.call('CLIENT', 'UNPAUSE')).catch(() => {});
        await b.close();
        await dropPrefix(url, prefix);
      }
    },
    30_000,
  );

  it('an unreachable server fails open with BACKEND_UNAVAILABLE in bound', async () => {
    const port = await new Promise<number>((resolve) => {
      const srv = net.createServer();
      srv.listen(0, '127.0.0.1', () => {
        const p = (srv.address() as net.AddressInfo).port;
        srv.close(() => resolve(p));
      });
    });
    const started = Date.now();
    expect(await codeOf(openRedis(`redis://127.0.0.1:${port}`, { callTimeoutMs: 500 }))).toBe(
      'BACKEND_UNAVAILABLE',
    );
    expect(Date.now() - started).toBeLessThan(BOUND_MS);
    expect(await codeOf(openRedis('redis://127.0.0.1:6379/notadb'))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(openRedis('redis+cluster://127.0.0.1:1,127.0.0.1:x'))).toBe('INVALID_ARGUMENT');
  });
});

describe('layout and cursors', () => {
  it('buckets by FNV-1a of the UTF-8 bytes (no I/O)', () => {
    const ref = (s: string): number => {
      let h = 0x811c9dc5;
      for (const byte of Buffer.from(s, 'utf8')) h = Math.imul(h ^ byte, 0x01000193);
      return h >>> 0;
    };
    for (const s of [
      'a',
      'job/42',
      'z🙂',
      'päckchen',
      '日本語',
      '\u07ff\u0800\uffff',
      '🙂🙂x',
      'x'.repeat(600),
    ]) {
      expect(fnv1a(s), s).toBe(ref(s));
    }
    const layout = new Layout('p', 32);
    expect(layout.keysOf('a').slice(0, 2)).toEqual([
      `p:{p:b${ref('a') % 32}}:m`,
      `p:{p:b${ref('a') % 32}}:s:a`,
    ]);
  });

  it('orders strings by their UTF-8 bytes without encoding them (no I/O)', () => {
    const words = [
      '',
      'a',
      'ab',
      'b',
      'z🙂',
      'z\uffff',
      'z\ue000',
      'z\ud7ff',
      '🙂',
      '\uffff',
      'ä',
      'a\u0000',
    ];
    for (const x of words) {
      for (const y of words) {
        const bytes = Math.sign(Buffer.compare(Buffer.from(x, 'utf8'), Buffer.from(y, 'utf8')));
        expect(Math.sign(compareUtf8(x, y)), `${x} vs ${y}`).toBe(bytes);
      }
    }
  });

  it("turns TIME's reply into ms and µs strings, and compares them as numbers, in Redis' Lua", async () => {
    const r = new Redis(REDIS_URL);
    try {
      // The scripts' own snippets, with TIME's reply given as arguments (seconds, microseconds).
      const times = `${NOW_STR.replace("redis.call('TIME')", '{ARGV[1], ARGV[2]}')}\nreturn {nows, us}`;
      for (const [sec, micro] of [
        ['1764619000', '0'],
        ['1764619000', '7'],
        ['1764619000', '5123'],
        ['1764619000', '99999'],
        ['1764619000', '100000'],
        ['1764619000', '999999'],
        ['99999999999', '123456'],
      ] as const) {
        const us = BigInt(sec) * 1_000_000n + BigInt(micro);
        expect(await r.eval(times, 0, sec, micro), `${sec} s ${micro} µs`).toEqual([
          String(us / 1000n),
          String(us),
        ]);
      }
      const compare = `return ${later('ARGV[1]', 'ARGV[2]')} and 1 or 0`;
      const values = [
        '0',
        '9',
        '10',
        '99',
        '100',
        '1764619000123',
        '1764619000124',
        '1764619001000',
        '17646190001230',
      ];
      for (const a of values) {
        for (const b of values) {
          expect(await r.eval(compare, 0, a, b), `${a} later than ${b}`).toBe(BigInt(a) > BigInt(b) ? 1 : 0);
        }
      }
    } finally {
      r.disconnect();
    }
  });

  it('refuses cursors that are not its own', async () => {
    const prefix = uniqueNamespace('rt');
    const b = await openRedis(REDIS_URL, { keyPrefix: prefix, callTimeoutMs: 2000 });
    try {
      for (const cursor of ['x', 'rc2.32.1-0~0', 'rl2.', `rc2.2.0-0~0.0-0~0`]) {
        expect(await codeOf(b.admin.changes({ cursor })), cursor).toBe('INVALID_ARGUMENT');
      }
      expect(await codeOf(b.admin.list({ cursor: 'rc2.nope' }))).toBe('INVALID_ARGUMENT');
    } finally {
      await b.close();
      await dropPrefix(REDIS_URL, prefix);
    }
  });
});
