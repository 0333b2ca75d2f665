/**
 * Starts a throw-away Redis Cluster (3 masters, no replicas) on loopback ports
 * from the installed `redis-server`, for the tests and the chaos harness.
 * Nothing is written outside a temporary directory; `stop()` kills the nodes
 * and removes it. {@link shardRestartFault}: one master restarted empty, then
 * `recoverBackend`, as a scheduled chaos fault.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { recoverBackend } from '../backends/open.ts';
import { Layout } from '../backends/redis/layout.ts';
import type { ScheduledFault } from './runner.ts';

const run = promisify(execFile);

export interface RedisCluster {
  /** `redis+cluster://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3` */
  url: string;
  ports: number[];
  /** The port of the master that owns `key`'s hash slot. */
  ownerOf(key: string): Promise<number>;
  /**
   * SIGKILL of the master on `port`, then a new one on the same port and cluster config file: it
   * keeps its node id and slots and comes back without any data (no persistence), as a master
   * without a replica does after a crash. Resolves when the cluster says ok again.
   */
  restartEmpty(port: number): Promise<void>;
  stop(): Promise<void>;
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** Three ports p such that p and p+10000 (the cluster bus) are free. */
async function pickPorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  for (let attempt = 0; ports.length < count && attempt < 500; attempt++) {
    const p = 20000 + Math.floor(Math.random() * 20000);
    if (ports.includes(p)) continue;
    if ((await portFree(p)) && (await portFree(p + 10000))) ports.push(p);
  }
  if (ports.length < count) throw new Error('could not find free loopback ports for the Redis Cluster');
  return ports;
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

export async function startRedisCluster(masters = 3): Promise<RedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'worklease-cluster-'));
  const ports = await pickPorts(masters);
  const children = new Map<number, ChildProcess>();
  const exited = (c: ChildProcess): Promise<unknown> =>
    c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise((r) => c.once('exit', r));
  const stop = async (): Promise<void> => {
    for (const child of children.values()) child.kill('SIGKILL');
    await Promise.all([...children.values()].map(exited));
    rmSync(dir, { recursive: true, force: true });
  };
  const clusterOk = (port: number): Promise<void> =>
    waitFor(
      async () =>
        (await run('redis-cli', ['-p', String(port), 'cluster', 'info'])).stdout.includes('cluster_state:ok'),
      `cluster state ok on ${port}`,
    );
  const launch = (port: number): void => {
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--cluster-node-timeout',
        '5000',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        '--logfile',
        join(dir, `redis-${port}.log`),
      ],
      { stdio: 'ignore' },
    );
    children.set(port, child);
  };
  const ownerOf = async (key: string): Promise<number> => {
    const slot = Number((await run('redis-cli', ['-p', String(ports[0]), 'cluster', 'keyslot', key])).stdout);
    const nodes = (await run('redis-cli', ['-p', String(ports[0]), 'cluster', 'nodes'])).stdout;
    for (const line of nodes.trim().split('\n')) {
      const f = line.split(' ');
      if (!f[2]?.includes('master')) continue;
      const port = Number(f[1]!.split('@')[0]!.split(':')[1]);
      for (const range of f.slice(8)) {
        const [lo, hi = lo] = range.split('-').map(Number);
        if (lo !== undefined && hi !== undefined && slot >= lo && slot <= hi) return port;
      }
    }
    throw new Error(`no master owns slot ${slot} of '${key}'`);
  };
  const restartEmpty = async (port: number): Promise<void> => {
    const child = children.get(port);
    if (child !== undefined) {
      child.kill('SIGKILL');
      await exited(child);
    }
    launch(port);
    await waitFor(
      async () => (await run('redis-cli', ['-p', String(port), 'ping'])).stdout.trim() === 'PONG',
      `redis node ${port}`,
    );
    for (const p of ports) await clusterOk(p);
  };
  try {
    for (const port of ports) launch(port);
    for (const port of ports) {
      await waitFor(
        async () => (await run('redis-cli', ['-p', String(port), 'ping'])).stdout.trim() === 'PONG',
        `redis node ${port}`,
      );
    }
    await run('redis-cli', [
      '--cluster',
      'create',
      ...ports.map((p) => `127.0.0.1:${p}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    for (const port of ports) await clusterOk(port);
    return {
      url: `redis+cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`,
      ports,
      ownerOf,
      restartEmpty,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * A scheduled chaos fault (runner.ts, `scheduled`): `afterMs` into the run, a random master of
 * `cluster` is restarted empty (its buckets of `keyPrefix` are lost: their work items fail
 * DATASET_LOST, the others work on); `lostMs` later `recoverBackend` re-initialises exactly the
 * lost buckets. Recorded as `shard-restart` with the lost buckets and how long recovery took.
 */
export function shardRestartFault(
  cluster: RedisCluster,
  keyPrefix: string,
  afterMs: number,
  lostMs = 2000,
): ScheduledFault {
  return {
    afterMs,
    kind: 'shard-restart',
    inject: async () => {
      const port = cluster.ports[Math.floor(Math.random() * cluster.ports.length)]!;
      const L = new Layout(keyPrefix, 32);
      const owned: number[] = [];
      for (let b = 0; b < L.buckets; b++) if ((await cluster.ownerOf(L.tags[b]!)) === port) owned.push(b);
      await cluster.restartEmpty(port);
      await new Promise((r) => setTimeout(r, lostMs));
      const started = performance.now();
      const r = await recoverBackend(
        cluster.url,
        { operator: 'chaos', reason: `master ${port} restarted empty` },
        { keyPrefix },
      );
      const ms = Math.round(performance.now() - started);
      return `master ${port} (buckets ${owned.join(',')}) back empty; recovered ${r.recovered.length} bucket(s)${r.metaRecreated ? ' and the meta key' : ''} in ${ms} ms`;
    },
  };
}
