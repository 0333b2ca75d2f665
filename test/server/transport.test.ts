/**
 * The web transport's own limits, in process with a scripted service (so the
 * events are exactly what the test pushes): a slow WebSocket client is
 * dropped with the resync close code, one event is serialized once for every
 * client, a proxy header from an untrusted address is refused, the public
 * URL's host is accepted, and token rules.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { Caller } from '../../src/console/access.ts';
import type { ConsoleEvent, LeaseRow } from '../../src/console/api.ts';
import { CLOSE_RESYNC } from '../../src/console/api.ts';
import { checkTokenStrength } from '../../src/server/auth.ts';
import { parseServeConfig } from '../../src/server/config.ts';
import { startWebServer, type WebServer, type WebServerOptions } from '../../src/server/index.ts';
import { leaseRow } from '../console/helpers.ts';
import { LIVE_CONNECTION } from '../support/connection-info.ts';

const conn = LIVE_CONNECTION;

const row = (i: number): LeaseRow =>
  leaseRow(0, {
    workId: `job-${i}-${'x'.repeat(200)}`,
    holderId: 'w',
    expiresAt: 0,
    ttlMs: 1000,
    acquiredAt: 0,
    version: String(i),
  });

function scriptedService(): WebServerOptions['service'] & { push(e: ConsoleEvent): void; seen: Caller[] } {
  const listeners = new Set<(e: ConsoleEvent) => void>();
  const seen: Caller[] = [];
  return {
    seen,
    push: (e) => {
      for (const l of listeners) l(e);
    },
    async handle(_m, _p, caller) {
      if (caller !== undefined) seen.push(caller);
      return {} as never;
    },
    subscribe(l) {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    connections: () => [conn],
    canView: () => true,
  };
}

let server: WebServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

describe('slow WebSocket clients', () => {
  it('are dropped with close code 4000 (resync) once their send buffer passes the cap', async () => {
    const service = scriptedService();
    const token = randomBytes(32).toString('hex');
    server = await startWebServer({
      service,
      port: 0,
      token,
      maxBufferedBytes: 256 * 1024,
      slowClientGraceMs: 30_000,
    });
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/api/events`, {
      headers: { authorization: `Bearer ${token}` },
    });
    await new Promise((r) => ws.once('open', r));
    // Stall the client: its socket stops reading, so the server's queue grows.
    const socket = (ws as unknown as { _socket: Socket })._socket;
    socket.pause();
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    const upserts = Array.from({ length: 100 }, (_, i) => row(i));
    // ~25 KB per event; 2 000 events = 50 MB, far past the kernel's socket buffers and the cap.
    for (let seq = 1; seq <= 2000; seq++) {
      service.push({ type: 'leases', connectionId: 'c1', seq, upserts, removed: [], serverTime: 0 });
      if (seq % 100 === 0) await new Promise((r) => setImmediate(r));
    }
    socket.resume();
    expect(await closed).toBe(CLOSE_RESYNC);
  });

  it('refuses a client over the cap with 503', async () => {
    const token = randomBytes(32).toString('hex');
    server = await startWebServer({ service: scriptedService(), port: 0, token, maxClients: 1 });
    const headers = { authorization: `Bearer ${token}` };
    const first = new WebSocket(`ws://127.0.0.1:${server.port}/api/events`, { headers });
    await new Promise((r) => first.once('open', r));
    const status = await new Promise<number>((resolve) => {
      const second = new WebSocket(`ws://127.0.0.1:${server!.port}/api/events`, { headers });
      second.on('unexpected-response', (_q, res) => resolve(res.statusCode ?? 0));
      second.on('error', () => {});
    });
    expect(status).toBe(503);
    first.close();
  });
});

describe('identity and names', () => {
  const PROXY_SECRET = randomBytes(32).toString('hex');

  it('the proxy header contract: one header, believed only from a trusted address with the secret', async () => {
    const service = scriptedService();
    const body = JSON.stringify({ method: 'console.info', params: {} });
    const post = (port: number, headers: Record<string, string>) =>
      fetch(`http://127.0.0.1:${port}/api/call`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      });
    const lines: string[] = [];
    const proxy = { trusted: ['10.9.9.9'], defaultRoles: { '*': 'viewer' as const }, secret: PROXY_SECRET };
    server = await startWebServer({
      service,
      port: 0,
      auth: { sharedToken: null, sharedRoles: {}, proxy },
      securityLog: (line) => lines.push(line),
    });
    const secret = { 'x-worklease-proxy-secret': PROXY_SECRET };
    // From an address that is no proxy's: refused, with the secret or without.
    const untrusted = await post(server.port, { 'x-forwarded-email': 'alice', ...secret });
    expect(untrusted.status).toBe(401);
    expect(((await untrusted.json()) as { error: { message: string } }).error.message).toMatch(
      /trusted proxy/,
    );
    await server.close();
    server = await startWebServer({
      service,
      port: 0,
      auth: {
        sharedToken: null,
        sharedRoles: {},
        users: [
          { name: 'deploy-bot', tokenSha256: createHash('sha256').update('x').digest('hex'), roles: {} },
        ],
        proxy: { ...proxy, trusted: ['127.0.0.1'] },
      },
      securityLog: (line) => lines.push(line),
    });
    const port = server.port;
    // An address alone proves nothing: every local process connects from 127.0.0.1.
    expect((await post(port, { 'x-forwarded-email': 'alice' })).status).toBe(401);
    expect(
      (await post(port, { 'x-forwarded-email': 'alice', 'x-worklease-proxy-secret': 'guess' })).status,
    ).toBe(401);
    expect((await post(port, { 'x-forwarded-email': 'alice', ...secret })).status).toBe(200);
    expect(service.seen.at(-1)).toEqual({ user: 'alice', via: 'proxy', roles: { '*': 'viewer' } });
    // One header: an empty X-Forwarded-Email is refused, never read as "ask X-Forwarded-User".
    const seen = service.seen.length;
    const empty = await post(port, { 'x-forwarded-email': '', 'x-forwarded-user': 'admin', ...secret });
    expect(empty.status).toBe(401);
    expect((await post(port, { 'x-forwarded-user': 'admin', ...secret })).status).toBe(401);
    expect(service.seen.length).toBe(seen);
    // Proxy users and token users are apart: the proxy cannot name a token user.
    const bot = await post(port, { 'x-forwarded-email': 'deploy-bot', ...secret });
    expect(bot.status).toBe(403);
    expect(((await bot.json()) as { error: { message: string } }).error.message).toMatch(/token user/);
    // Header bytes are UTF-8: a name outside ASCII is kept, one with a bidi override is refused.
    const utf8 = (t: string) => Buffer.from(t, 'utf8').toString('latin1');
    expect((await post(port, { 'x-forwarded-email': utf8('José'), ...secret })).status).toBe(200);
    expect(service.seen.at(-1)?.user).toBe('José');
    expect((await post(port, { 'x-forwarded-email': utf8('eve\u202Eadmin'), ...secret })).status).toBe(401);
    // The refusals are in the security log, and no line carries the secret.
    const events = lines.map((l) => JSON.parse(l) as { event: string; reason?: string });
    expect(events.filter((e) => e.event === 'proxy-refused').map((e) => e.reason)).toEqual(
      expect.arrayContaining(['untrusted-address', 'no-secret', 'wrong-secret', 'token-user-name']),
    );
    expect(lines.join('')).not.toContain(PROXY_SECRET);
  });

  it('refuses a proxy without a secret, or with a weak one, or with a secret in the identity header', async () => {
    const service = scriptedService();
    const start = (proxy: Record<string, unknown>) =>
      startWebServer({
        service,
        port: 0,
        auth: { sharedToken: null, sharedRoles: {}, proxy: { trusted: ['127.0.0.1'], ...proxy } as never },
      });
    await expect(start({})).rejects.toThrow(/shared secret/);
    await expect(start({ secret: '' })).rejects.toThrow(/shared secret/);
    await expect(start({ secret: 'hunter2hunter2hunter2hunter2' })).rejects.toThrow(
      /proxy secret is too weak/,
    );
    await expect(start({ secret: PROXY_SECRET, header: 'x-worklease-proxy-secret' })).rejects.toThrow(
      /different headers/,
    );
  });

  it('accepts the public URL as Host and Origin', async () => {
    const token = randomBytes(32).toString('hex');
    server = await startWebServer({
      service: scriptedService(),
      port: 0,
      token,
      publicUrl: 'https://console.example.com',
    });
    expect(server.origins).toContain('https://console.example.com');
    expect(server.url).toBe(`https://console.example.com/?token=${token}`);
    const { request } = await import('node:http');
    const status = (host: string, origin: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port: server!.port,
            path: '/api/call',
            method: 'POST',
            headers: {
              host,
              origin,
              authorization: `Bearer ${token}`,
              'content-type': 'application/json',
            },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify({ method: 'console.info', params: {} }));
      });
    expect(await status('console.example.com', 'https://console.example.com')).toBe(200);
    expect(await status('console.example.com', 'http://console.example.com')).toBe(403);
    expect(await status('other.example.com', 'https://console.example.com')).toBe(421);
  });

  it('token strength: 128 bits by alphabet, and by the pattern estimate (runs, repeats, words do not count)', () => {
    // 4 000 random 16-byte tokens in each shape the docs and error name
    // (`openssl rand -hex 16`, `-base64 16`, base64url): none refused. The
    // bytes come from a hash of a counter, so the test cannot flake; counting
    // character classes alone refused 1 base64url token in 96 of them.
    const refused: string[] = [];
    for (let i = 0; i < 4_000; i++) {
      const bytes = createHash('sha256').update(`token ${i}`).digest().subarray(0, 16);
      for (const token of [bytes.toString('hex'), bytes.toString('base64'), bytes.toString('base64url')]) {
        try {
          checkTokenStrength(token);
        } catch {
          refused.push(token);
        }
      }
    }
    expect(refused).toEqual([]);
    for (const weak of [
      // Long enough and of a wide enough alphabet, and made by hand: refused by the estimate.
      '0123456789abcdef'.repeat(2),
      'passwordpasswordpassword1234567890',
      'passwordpassword1234567890',
      'abcdefabcdefabcdefabcdef01234567',
      '12345678123456781234567812345678',
      'abcdefghijABCDEFGHIJklmnopqrstuvwxyz',
      'qwertyuiopasdfghjklzxcvbnm1234567890QWERTY',
      'correcthorsebatterystaple1234567890',
      // Too short for 128 bits, whatever they hold.
      '0000000000000000',
      'a'.repeat(100),
      'ab'.repeat(40),
      randomBytes(8).toString('hex'),
      'Kq7vN2xR8pLm4sT9wYb3H', // 21 base64 characters: 126 bits
      'Kq7vN2xR8pLm4sT9wYb3==', // the padding carries nothing
      'Short!Pass1word#2', // no standard alphabet: 17 characters of 94 carry 111 bits
    ]) {
      expect(() => checkTokenStrength(weak), weak).toThrow(/too weak/);
    }
    // Random data with a word or a run in it keeps the bits of the rest.
    expect(() => checkTokenStrength(`password${randomBytes(24).toString('hex')}`)).not.toThrow();
    for (const bad of [
      '',
      'has spaces in it 0123456789abcdefghij',
      `tab\t${'x'.repeat(40)}`,
      'ü'.repeat(40),
    ]) {
      expect(() => checkTokenStrength(bad), JSON.stringify(bad)).toThrow(/empty|malformed/);
    }
  });

  it('serve --config: a bad file is one INVALID_ARGUMENT naming the field', () => {
    const bad: Array<[unknown, RegExp]> = [
      [{ users: [{ name: 'a', roles: { '*': 'root' } }] }, /users\.0\.roles/],
      [{ users: [{ name: 'a', tokenSha256: 'abc', roles: {} }] }, /SHA-256/],
      [{ connections: [{ name: 'x', url: 'pglite://memory', secret: 1 }] }, /connections\.0/],
      [
        {
          connections: [
            { name: 'x', url: 'a' },
            { name: 'x', url: 'b' },
          ],
        },
        /listed twice/,
      ],
      [{ proxy: { trusted: [] } }, /proxy\.trusted/],
      // One identity header: a list (the old fall-through from one to the next) is refused.
      [
        { proxy: { trusted: ['127.0.0.1'], headers: ['x-forwarded-email', 'x-forwarded-user'] } },
        /not valid/,
      ],
      [{ connections: [{ name: 'pro\u200Bd', url: 'pglite://memory' }] }, /invisible/],
      [{ connections: [{ name: 'prod\u202E', url: 'pglite://memory' }] }, /invisible/],
      [
        {
          connections: [
            { name: 'prod', url: 'a' },
            { name: '\uFF50\uFF52\uFF4F\uFF44', url: 'b' },
          ],
        },
        /listed twice/,
      ],
      [
        {
          connections: [
            { name: 'prod', url: 'a' },
            { name: 'PROD', url: 'b' },
          ],
        },
        /look alike/,
      ],
      [{ users: [{ name: 'a', roles: { 'pro\u200Bd': 'admin' } }] }, /invisible/],
      [{ extra: true }, /not valid/],
    ];
    for (const [json, message] of bad) {
      expect(() => parseServeConfig(json), JSON.stringify(json)).toThrow(message);
    }
    expect(parseServeConfig({})).toEqual({ connections: [], users: [], proxy: null });
  });
});
