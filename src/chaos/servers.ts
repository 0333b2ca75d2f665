/**
 * Throw-away Redis servers on loopback ports, for the faults that need to own
 * the server process: a restart without persistence (the dataset is gone) and
 * a failover to a lagging replica (the latest acknowledged writes are gone).
 * Each server gets a private directory (mkdtemp) that `stop()` removes; only
 * processes started here are ever signalled, by their own handle.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** One command on its own short-lived connection (never through a backend under test). */
export async function redisCall(port: number, ...args: string[]): Promise<unknown> {
  const r = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    // No INFO ready check: on a --requirepass server it fails and closes the connection before the command.
    enableReadyCheck: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 2000,
  });
  r.on('error', () => {});
  try {
    await r.connect();
    return await r.call(args[0]!, ...args.slice(1));
  } finally {
    r.disconnect();
  }
}

async function waitPing(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // A server started with --requirepass answers NOAUTH: it is up all the same.
    const answer = await redisCall(port, 'PING').catch((err: unknown) =>
      err instanceof Error && err.message.startsWith('NOAUTH') ? 'PONG' : null,
    );
    if (answer === 'PONG') return;
    if (Date.now() > deadline) throw new Error(`redis-server on 127.0.0.1:${port} did not answer PING`);
    await sleep(30);
  }
}

export interface RedisServer {
  /** The port it listens on now (a promoted replica moves to its old master's port). */
  port: number;
  readonly url: string;
  /** SIGKILL: no shutdown, nothing saved. */
  kill(): Promise<void>;
  /** SIGKILL, then a new server on the same port and directory: without persistence, an empty dataset. */
  restart(): Promise<void>;
  /** SIGSTOP / SIGCONT: the process stops answering and replicating, sockets stay open. */
  pause(): void;
  resume(): void;
  /** Kills it (if running) and removes its directory. */
  stop(): Promise<void>;
}

export interface RedisServerOptions {
  /** Extra `redis-server` arguments, e.g. `['--appendonly', 'yes']`. Default: no persistence at all. */
  args?: readonly string[];
  port?: number;
}

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'worklease-redis-'));
  let port = options.port ?? (await freePort());
  let child: ChildProcess | null = null;
  const launch = async (): Promise<void> => {
    child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        ...(options.args ?? []),
      ],
      { stdio: 'ignore' },
    );
    const c = child;
    // A server that exits at start (port taken, bad argument) fails the launch at once, and one
    // that never answers is killed: a failed launch leaves no process behind.
    const exited = new Promise<never>((_, reject) =>
      c.once('exit', (code, signal) =>
        reject(new Error(`redis-server on 127.0.0.1:${port} exited at start (${signal ?? `code ${code}`})`)),
      ),
    );
    exited.catch(() => {});
    try {
      await Promise.race([waitPing(port), exited]);
    } catch (err) {
      await kill();
      throw err;
    }
  };
  const kill = async (): Promise<void> => {
    const c = child;
    child = null;
    if (c === null || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGCONT');
    c.kill('SIGKILL');
    await exited;
  };
  try {
    await launch();
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    get port() {
      return port;
    },
    set port(p: number) {
      port = p;
    },
    get url() {
      return `redis://127.0.0.1:${port}`;
    },
    kill,
    async restart() {
      await kill();
      await launch();
    },
    pause() {
      (child as ChildProcess | null)?.kill('SIGSTOP');
    },
    resume() {
      (child as ChildProcess | null)?.kill('SIGCONT');
    },
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A TCP relay on a loopback port. `hold()` keeps what arrives in memory instead of forwarding it;
 * `cut()` closes every connection and drops what it held, so those bytes never arrive.
 */
interface Relay {
  readonly port: number;
  hold(): void;
  cut(): void;
  close(): Promise<void>;
}

async function startRelay(targetPort: number): Promise<Relay> {
  let holding = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: '127.0.0.1', port: targetPort });
    // As Redis does on its replication link: no Nagle delay (it added ~20-40 ms to every WAIT).
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      sockets.add(from);
      from.on('data', (chunk) => {
        if (!holding) to.write(chunk);
      });
      from.on('error', () => {});
      from.on('close', () => {
        sockets.delete(from);
        to.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const cut = (): void => {
    for (const sock of sockets) sock.destroy();
    sockets.clear();
  };
  return {
    port,
    hold() {
      holding = true;
    },
    cut,
    async close() {
      cut();
      await new Promise((r) => server.close(r));
    },
  };
}

/**
 * A master and one replica (REPLICAOF), both without persistence; the replica replicates through a
 * relay, so the test can make it lag. `failover()` does what Sentinel would, with the clients'
 * address kept: the master is killed, the replica promoted (`REPLICAOF NO ONE`) and moved to the
 * master's port (`CONFIG SET port`, Redis 7), so every client reconnects to the promoted replica at
 * the address it knew; a new empty replica then follows it. Whatever the replica had not received
 * when the master died is gone.
 */
export interface ReplicatedRedis {
  /** The address clients use: the master's port, before and after a failover. */
  readonly url: string;
  readonly master: RedisServer;
  readonly replica: RedisServer;
  /** Waits until the replica has every write the master acknowledged so far. */
  sync(): Promise<void>;
  /**
   * From now on the replication stream (and the replica's acknowledgements, so WAIT sees none) is
   * held back: the replica lags. Writes the master acknowledges meanwhile are lost by a failover.
   */
  lag(): void;
  /**
   * Fails over: drop the held stream, kill the master, promote the replica and move it to the
   * master's port, start a new replica behind it.
   */
  failover(): Promise<void>;
  stop(): Promise<void>;
}

export async function startReplicatedRedis(): Promise<ReplicatedRedis> {
  let master = await startRedisServer();
  let replica = await startRedisServer();
  let relay = await startRelay(master.port);
  const url = master.url;
  const follow = async (): Promise<void> => {
    await redisCall(replica.port, 'REPLICAOF', '127.0.0.1', String(relay.port));
  };
  const sync = async (): Promise<void> => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const info = String(await redisCall(master.port, 'INFO', 'replication'));
      const offset = /master_repl_offset:(\d+)/.exec(info)?.[1];
      const ack = /slave0:.*offset=(\d+)/.exec(info)?.[1];
      if (offset !== undefined && ack === offset && /slave0:.*state=online/.test(info)) return;
      if (Date.now() > deadline) throw new Error(`replica did not catch up: ${info.replace(/\r?\n/g, ' ')}`);
      await sleep(20);
    }
  };
  await follow();
  await sync();
  return {
    url,
    get master() {
      return master;
    },
    get replica() {
      return replica;
    },
    sync,
    lag() {
      relay.hold();
    },
    async failover() {
      relay.cut();
      await relay.close();
      const port = master.port;
      await master.kill();
      await redisCall(replica.port, 'REPLICAOF', 'NO', 'ONE');
      await redisCall(replica.port, 'CONFIG', 'SET', 'port', String(port));
      replica.port = port;
      await waitPing(port);
      const old = master;
      master = replica;
      await old.stop();
      replica = await startRedisServer();
      relay = await startRelay(master.port);
      await follow();
    },
    async stop() {
      await relay.close();
      await Promise.all([master.stop(), replica.stop()]);
    },
  };
}
