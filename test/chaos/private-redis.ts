/**
 * A throw-away standalone Redis for the chaos tests: `CLIENT PAUSE` pauses a
 * whole server, which must not stall the other test files on the shared one.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

async function freePort(): Promise<number> {
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

export interface PrivateRedis {
  url: string;
  stop(): Promise<void>;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'worklease-chaos-redis-'));
  const port = await freePort();
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: 'ignore' },
  );
  const stop = async (): Promise<void> => {
    if (child.exitCode === null) {
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 10_000;
  for (;;) {
    const pong = await run('redis-cli', ['-p', String(port), 'ping']).then(
      (r) => r.stdout.trim() === 'PONG',
      () => false,
    );
    if (pong) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`private redis-server on ${port} did not start`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url: `redis://127.0.0.1:${port}`, stop };
}
