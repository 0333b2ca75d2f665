/**
 * Clear errors from the Redis backend (issue: a database the server lacks, TLS that does not fit,
 * warnings on stderr): a database index out of range is INVALID_ARGUMENT before anything is
 * written; `rediss://` at a plain server, a plain URL at a TLS server and an untrusted or
 * mismatched certificate are BACKEND_UNAVAILABLE with `details.reason: 'tls'` and a hint naming
 * the fix; READONLY is final on a plain URL and transient behind Sentinel; and nothing reaches
 * stderr (a child process, whose stderr the test reads whole).
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyRedisError } from '../../src/backends/redis/errors.ts';
import { freePort, type RedisServer, redisCall, startRedisServer } from '../../src/chaos/servers.ts';
import { ErrorCode, openBackend, WorkleaseError } from '../../src/index.ts';
import { REDIS_URL, uniqueNamespace } from '../support/backends.ts';

async function refusal(p: Promise<unknown>): Promise<WorkleaseError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof WorkleaseError)) throw new Error(`expected a WorkleaseError, got ${String(err)}`);
  return err;
}

function replyError(message: string): Error {
  const err = new Error(message);
  err.name = 'ReplyError';
  return err;
}

describe('READONLY', () => {
  it('is FORBIDDEN (a replica, final) on a plain URL and BACKEND_UNAVAILABLE (a failover) behind Sentinel', () => {
    const readonly = replyError("READONLY You can't write against a read only replica.");
    const plain = classifyRedisError(readonly, 'renew', 'redis://h');
    expect(plain.code).toBe(ErrorCode.FORBIDDEN);
    expect(plain.details).toEqual({ code: 'READONLY', reason: 'replica' });
    expect(plain.message).toMatch(/reached a read-only replica/);
    expect(classifyRedisError(readonly, 'renew', 'redis+sentinel://s/m', undefined, true).code).toBe(
      ErrorCode.BACKEND_UNAVAILABLE,
    );
  });
});

describe('a database index the server does not have', () => {
  it('is INVALID_ARGUMENT when opening, before any key is written (also without migrate)', async () => {
    const prefix = uniqueNamespace('db99');
    for (const migrate of [true, false]) {
      const err = await refusal(openBackend(`${REDIS_URL}/99`, { keyPrefix: prefix, migrate }));
      expect(err.code).toBe(ErrorCode.INVALID_ARGUMENT);
      expect(err.message).toMatch(/names database 99, which the server does not have/);
      expect(err.details).toEqual({ db: 99 });
    }
    const port = Number(/:(\d+)/.exec(REDIS_URL.replace('redis://', ''))?.[1] ?? 6379);
    expect(await redisCall(port, 'KEYS', `${prefix}:*`)).toEqual([]);
  });

  it('a database the server has opens there, and nothing lands in database 0', async () => {
    const prefix = uniqueNamespace('db15');
    const backend = await openBackend(`${REDIS_URL}/15`, { keyPrefix: prefix });
    try {
      await backend.acquire('a', 'h', 30_000);
      const port = Number(/:(\d+)/.exec(REDIS_URL.replace('redis://', ''))?.[1] ?? 6379);
      expect(await redisCall(port, 'KEYS', `${prefix}:*`)).toEqual([]);
      expect((await backend.admin.get('a'))?.holderId).toBe('h');
    } finally {
      await backend.close();
    }
  });
});

describe('TLS that does not fit (private redis-server with a plain and a TLS port)', () => {
  let server: RedisServer;
  let certs: string;
  let tlsPort: number;
  beforeAll(async () => {
    // A certificate for localhost only, made for this test in a folder of its own.
    certs = mkdtempSync(join(tmpdir(), 'worklease-errors-tls-'));
    const [cert, key] = [join(certs, 'cert.pem'), join(certs, 'key.pem')];
    const subject = ['-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost'];
    const req = ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', ...subject];
    execFileSync('openssl', [...req, '-keyout', key, '-out', cert], { stdio: 'ignore' });
    tlsPort = await freePort();
    const tls = ['--tls-port', String(tlsPort), '--tls-cert-file', cert, '--tls-key-file', key];
    server = await startRedisServer({
      args: [...tls, '--tls-ca-cert-file', cert, '--tls-auth-clients', 'no'],
    });
  }, 30_000);
  afterAll(async () => {
    await server?.stop();
    if (certs !== undefined) rmSync(certs, { recursive: true, force: true });
  });

  it('rediss:// at the plain port says the server does not speak TLS', { timeout: 30_000 }, async () => {
    const err = await refusal(openBackend(`rediss://127.0.0.1:${server.port}`, { callTimeoutMs: 2000 }));
    expect(err.code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
    expect(err.details?.reason).toBe('tls');
    expect(err.message).toMatch(/does not speak TLS here .*use redis:\/\//);
  });

  it('redis:// at the TLS port says the server expects TLS', { timeout: 30_000 }, async () => {
    const err = await refusal(openBackend(`redis://127.0.0.1:${tlsPort}`, { callTimeoutMs: 2000 }));
    expect(err.code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
    expect(err.details?.reason).toBe('tls');
    expect(err.message).toMatch(/expects TLS here .*use rediss:\/\//);
  });

  it('an untrusted certificate names the check that failed and how to trust it', {
    timeout: 30_000,
  }, async () => {
    const err = await refusal(openBackend(`rediss://localhost:${tlsPort}`, { callTimeoutMs: 2000 }));
    expect(err.code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
    expect(err.details).toMatchObject({ code: 'DEPTH_ZERO_SELF_SIGNED_CERT', reason: 'tls' });
    expect(err.message).toMatch(/self-signed certificate — .*NODE_EXTRA_CA_CERTS/);
  });

  it('in a child process: a trusted certificate for another name, rediss:// by IP address and at a plain port, a db out of range — classified, and stderr stays empty (no DEP0123)', {
    timeout: 60_000,
  }, async () => {
    const urls = [
      `rediss://127.0.0.1:${tlsPort}`,
      `rediss://127.0.0.1:${server.port}`,
      `redis://127.0.0.1:${tlsPort}`,
      `redis://127.0.0.1:${server.port}/99`,
    ];
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'test/backends/redis-errors-child.ts', ...urls],
      { env: { ...process.env, NODE_EXTRA_CA_CERTS: join(certs, 'cert.pem') }, timeout: 50_000 },
    );
    expect(stderr).toBe('');
    const lines = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { code: string; reason?: string; message: string });
    expect(lines.map((l) => [l.code, l.reason ?? null])).toEqual([
      ['BACKEND_UNAVAILABLE', 'tls'],
      ['BACKEND_UNAVAILABLE', 'tls'],
      ['BACKEND_UNAVAILABLE', 'tls'],
      ['INVALID_ARGUMENT', null],
    ]);
    expect(lines[0]!.message).toMatch(/127\.0\.0\.1.*not in the cert's list|altnames/i);
  });
});
