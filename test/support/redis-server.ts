/**
 * A throw-away standalone redis-server on a free loopback port, in a private folder, stopped by
 * its own PID: for tests that stall or reconfigure a server (CLIENT PAUSE, requirepass), so other
 * test files sharing 127.0.0.1:6379 never wait.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface PrivateRedis {
  /** `redis://127.0.0.1:<port>` (no credentials). */
  url: string;
  port: number;
  stop(): Promise<void>;
}

/** Starts redis-server with `extraArgs` (e.g. `['--requirepass', 'x']`; then pass `password`). */
export async function startRedisServer(extraArgs: string[] = [], password?: string): Promise<PrivateRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'worklease-redis-'));
  const port = await new Promise<number>((resolve) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const p = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });
  const child: ChildProcess = spawn(
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
      ...extraArgs,
    ],
    { stdio: 'ignore' },
  );
  const deadline = Date.now() + 10_000;
  for (;;) {
    const r = new Redis({ host: '127.0.0.1', port, password, lazyConnect: true, maxRetriesPerRequest: 1 });
    r.on('error', () => {});
    const up = await r
      .connect()
      .then(() => r.ping())
      .catch(() => null)
      .finally(() => r.disconnect());
    if (up === 'PONG') break;
    if (Date.now() > deadline) throw new Error('private redis-server did not start');
    await sleep(50);
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async stop() {
      child.kill('SIGKILL');
      if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
