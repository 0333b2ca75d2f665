/**
 * A throw-away Sentinel topology on loopback ports, for the tests and chaos runs that fail a master
 * over the way production does: a master, one replica and three sentinels (Debian's
 * `redis-sentinel`), quorum 2, a master declared down after 1 s. Everything
 * lives in a private directory (mkdtemp) that `stop()` removes; only processes started here are
 * ever signalled, by their own handle.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, type RedisServer, redisCall, startRedisServer } from './servers.ts';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface SentinelRedis {
  /** `redis+sentinel://127.0.0.1:s1,127.0.0.1:s2,127.0.0.1:s3/<name>` */
  readonly url: string;
  readonly name: string;
  /** The sentinels' ports. */
  readonly sentinelPorts: readonly number[];
  /** The port of the server that is master now (as the topology started or last failed over). */
  readonly masterPort: number;
  readonly replicaPort: number;
  /** The master's port as the first sentinel that answers names it. */
  askedMaster(): Promise<number>;
  /**
   * Waits until the replica is online and (with `exact`, the default) has every write the master
   * acknowledged so far; under writes its acknowledged offset trails the master's, so there
   * `exact` false waits for online only.
   */
  sync(timeoutMs?: number, exact?: boolean): Promise<void>;
  /**
   * SIGKILL the master (call {@link sync} first: without an online replica nothing is promoted)
   * and wait until the sentinels name the replica as master; the old master then
   * restarts (empty, no persistence) and the sentinels make it the new master's replica. Returns how
   * long the sentinels took to name the new master, ms.
   */
  killMaster(): Promise<{ promotedAfterMs: number; from: number; to: number }>;
  stop(): Promise<void>;
}

interface Sentinel {
  port: number;
  child: ChildProcess;
}

function startSentinel(dir: string, port: number, name: string, masterPort: number): Sentinel {
  const conf = join(dir, `sentinel-${port}.conf`);
  // Sentinel rewrites its configuration file (known replicas, epochs): it must be its own, writable.
  writeFileSync(
    conf,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor ${name} 127.0.0.1 ${masterPort} 2`,
      `sentinel down-after-milliseconds ${name} 1000`,
      `sentinel failover-timeout ${name} 5000`,
      `sentinel parallel-syncs ${name} 1`,
      '',
    ].join('\n'),
  );
  const child = spawn('redis-sentinel', [conf], { stdio: 'ignore' });
  // Not installed, or not startable: the wait for the sentinels below then fails with a timeout.
  child.on('error', () => {});
  return { port, child };
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(25);
  }
}

export async function startSentinelRedis(name = 'wlmaster'): Promise<SentinelRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'worklease-sentinel-'));
  const sentinels: Sentinel[] = [];
  const servers: RedisServer[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all([...sentinels.map((s) => kill(s.child)), ...servers.map((s) => s.stop())]);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    let master = await startRedisServer();
    servers.push(master);
    let replica = await startRedisServer();
    servers.push(replica);
    await redisCall(replica.port, 'REPLICAOF', '127.0.0.1', String(master.port));
    for (let i = 0; i < 3; i++) {
      sentinels.push(startSentinel(dir, await freePort(), name, master.port));
    }
    const ports = sentinels.map((s) => s.port);
    const askedMaster = async (): Promise<number> => {
      for (const port of ports) {
        const reply = await redisCall(port, 'SENTINEL', 'get-master-addr-by-name', name).catch(() => null);
        if (Array.isArray(reply)) return Number(reply[1]);
      }
      throw new Error('no sentinel answers');
    };
    const sync = async (timeoutMs = 15_000, exact = true): Promise<void> => {
      await waitFor('the replica to catch up', timeoutMs, async () => {
        const info = String(await redisCall(master.port, 'INFO', 'replication'));
        const offset = /master_repl_offset:(\d+)/.exec(info)?.[1];
        const line = /slave0:(.*)/.exec(info)?.[1] ?? '';
        const ack = /offset=(\d+)/.exec(line)?.[1];
        const caught = !exact || ack === offset;
        return /state=online/.test(line) && line.includes(`port=${replica.port}`) && caught
          ? true
          : undefined;
      });
    };
    // Every sentinel knows the master, the replica and the two other sentinels.
    await waitFor('the sentinels to find each other and the replica', 30_000, async () => {
      for (const port of ports) {
        const reply = await redisCall(port, 'SENTINEL', 'master', name);
        const fields = Array.isArray(reply) ? (reply as string[]) : [];
        const field = (key: string): string | undefined => fields[fields.indexOf(key) + 1];
        if (field('num-slaves') !== '1' || field('num-other-sentinels') !== '2') return undefined;
      }
      return true;
    });
    await sync();
    return {
      url: `redis+sentinel://${ports.map((p) => `127.0.0.1:${p}`).join(',')}/${name}`,
      name,
      sentinelPorts: ports,
      get masterPort() {
        return master.port;
      },
      get replicaPort() {
        return replica.port;
      },
      askedMaster,
      sync,
      async killMaster() {
        const from = master.port;
        const to = replica.port;
        const started = Date.now();
        await master.kill();
        await waitFor('the sentinels to promote the replica', 60_000, async () =>
          (await askedMaster()) === to ? true : undefined,
        );
        const promotedAfterMs = Date.now() - started;
        const old = master;
        master = replica;
        replica = old;
        // Back without its data; the sentinels turn it into the new master's replica.
        await old.restart();
        return { promotedAfterMs, from, to };
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
