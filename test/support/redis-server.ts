/**
 * A throw-away standalone redis-server on a free loopback port, in a private folder, stopped by
 * its own PID: for tests that stall or reconfigure a server (CLIENT PAUSE, requirepass), so other
 * test files sharing 127.0.0.1:6379 never wait.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface PrivateRedis {
  /** `redis://127.0.0.1:<port>`, or `rediss://localhost:<port>` with TLS (no credentials). */
  url: string;
  port: number;
  /** With TLS: the certificate file clients must trust. */
  ca: string;
  stop(): Promise<void>;
}

/**
 * Starts redis-server with `extraArgs` (e.g. `['--requirepass', 'x']`; then pass `password`).
 * With `tls`, the port speaks TLS only, with a certificate for `localhost` made in the server's
 * folder (`ca`, for the clients to trust).
 */
export async function startRedisServer(
  extraArgs: string[] = [],
  password?: string,
  withTls = false,
): Promise<PrivateRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'worklease-redis-'));
  const port = await new Promise<number>((resolve) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const p = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });
  const ca = join(dir, 'cert.pem');
  let ports = ['--port', String(port)];
  if (withTls) {
    const key = join(dir, 'key.pem');
    const subject = ['-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost'];
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', ...subject, '-keyout', key, '-out', ca],
      {
        stdio: 'ignore',
      },
    );
    ports = [
      '--port',
      '0',
      '--tls-port',
      String(port),
      '--tls-cert-file',
      ca,
      '--tls-key-file',
      key,
      '--tls-ca-cert-file',
      ca,
      '--tls-auth-clients',
      'no',
    ];
  }
  const args = [
    ...ports,
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    ...extraArgs,
  ];
  const child: ChildProcess = spawn('redis-server', args, { stdio: 'ignore' });
  const stop = async (): Promise<void> => {
    child.kill('SIGKILL');
    if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const r = new Redis({
        host: withTls ? 'localhost' : '127.0.0.1',
        port,
        password,
        lazyConnect: true,
        maxRetriesPerRequest: 1,
        ...(withTls ? { tls: { ca: readFileSync(ca), servername: 'localhost' } } : {}),
      });
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
  } catch (err) {
    // The server must not outlive a start that failed.
    await stop();
    throw err;
  }
  return {
    url: withTls ? `rediss://localhost:${port}` : `redis://127.0.0.1:${port}`,
    port,
    ca,
    stop,
  };
}
