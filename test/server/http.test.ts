import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import {
  type ConsoleEvent,
  ConsoleEventSchema,
  type ConsoleService,
  createConsoleService,
} from '../../src/console/index.ts';
import { type LeaseBackend, openBackend } from '../../src/index.ts';
import { startWebServer, type WebServer } from '../../src/server/index.ts';
import { sharedOpener, until } from '../console/helpers.ts';

const TOKEN = randomBytes(32).toString('base64url');

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Raw HTTP (fetch would normalise `..` out of the path before sending it). */
function raw(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string | Buffer,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString(),
        }),
      );
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

describe('web server', () => {
  let backend: LeaseBackend;
  let service: ConsoleService;
  let server: WebServer;
  let readOnlyServer: WebServer;
  let rw: string;
  let ro: string;
  let staticDir: string;
  let outside: string;

  const api = (body: unknown, headers: Record<string, string> = {}): Promise<Reply> =>
    raw(
      server.port,
      'POST',
      '/api/call',
      { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, ...headers },
      typeof body === 'string' ? body : JSON.stringify(body),
    );

  beforeAll(async () => {
    backend = await openBackend('pglite://memory');
    service = createConsoleService({
      openBackend: sharedOpener(backend),
      connections: [
        { name: 'demo', url: 'pglite://memory' },
        { name: 'demo-ro', url: 'pglite://memory', readOnly: true },
      ],
      feed: { pollMaxMs: 200 },
    });
    rw = service.connections()[0]!.id;
    ro = service.connections()[1]!.id;
    await service.waitLive(rw);
    await service.waitLive(ro);
    const base = mkdtempSync(join(tmpdir(), 'wl-static-'));
    staticDir = join(base, 'renderer');
    outside = join(base, 'secret.txt');
    mkdirSync(join(staticDir, 'assets'), { recursive: true });
    writeFileSync(
      join(staticDir, 'index.html'),
      '<!doctype html><title>console</title><script type="module" src="./assets/app.js"></script>',
    );
    writeFileSync(join(staticDir, 'assets', 'app.js'), 'console.log(1)');
    writeFileSync(
      join(staticDir, 'assets', 'app.js.map'),
      '{"version":3,"sources":["../../src/secret-plan.ts"]}',
    );
    writeFileSync(outside, 'TOP SECRET');
    symlinkSync(outside, join(staticDir, 'assets', 'link.txt'));
    server = await startWebServer({ service, port: 0, token: TOKEN, staticDir });
    readOnlyServer = await startWebServer({ service, port: 0, token: TOKEN, staticDir, readOnly: true });
  });

  afterAll(async () => {
    await server?.close();
    await readOnlyServer?.close();
    await service?.close();
    await backend?.close();
    if (staticDir) rmSync(join(staticDir, '..'), { recursive: true, force: true });
  });

  it('prints a URL with the real port and the token', () => {
    expect(server.url).toBe(`http://127.0.0.1:${server.port}/?token=${TOKEN}`);
  });

  it('answers a call with a valid token', async () => {
    const res = await api({ method: 'connections.list', params: {} });
    expect(res.status).toBe(200);
    const body = JSON.parse(res.body);
    expect(body.ok).toBe(true);
    expect(body.result).toHaveLength(2);
  });

  it('refuses a missing or wrong token with 401 and a foreign origin with 403', async () => {
    const none = await raw(server.port, 'POST', '/api/call', { 'content-type': 'application/json' }, '{}');
    expect(none.status).toBe(401);
    expect(JSON.parse(none.body).ok).toBe(false);
    const wrong = await api(
      { method: 'connections.list', params: {} },
      { authorization: 'Bearer nope-nope-nope' },
    );
    expect(wrong.status).toBe(401);
    const cross = await api({ method: 'connections.list', params: {} }, { origin: 'http://evil.example' });
    expect(cross.status).toBe(403);
    const same = await api({ method: 'connections.list', params: {} }, { origin: server.origin });
    expect(same.status).toBe(200);
  });

  it('answers malformed JSON, unknown methods and bad params with 400 and keeps running', async () => {
    const bad = await api('{"method": ');
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body).error).toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/JSON/),
    });
    const unknown = await api({ method: 'fleet.drop', params: {} });
    expect(unknown.status).toBe(400);
    expect(JSON.parse(unknown.body).error.message).toMatch(/unknown method/);
    const params = await api({ method: 'fleet.snapshot', params: { connectionId: 5 } });
    expect(params.status).toBe(400);
    expect(JSON.parse(params.body).error.message).toMatch(/connectionId/);
    const envelope = await api({ params: {} });
    expect(envelope.status).toBe(400);
    const big = await api({ method: 'connections.list', params: { pad: 'x'.repeat(2 * 1024 * 1024) } });
    expect(big.status).toBe(413);
    const missing = await api({ method: 'lease.get', params: { connectionId: 'nope', workId: 'x' } });
    expect(missing.status).toBe(404);
    const ok = await api({ method: 'console.info', params: {} });
    expect(ok.status).toBe(200);
  });

  it('refuses force-release on a read-only connection and on a read-only server with 403', async () => {
    const rec = await backend.acquire('http-ro', 'w1', 60_000);
    const params = { workId: 'http-ro', expectedToken: rec.fencingToken.toString(), reason: 'test' };
    const roConn = await api({ method: 'lease.forceRelease', params: { ...params, connectionId: ro } });
    expect(roConn.status).toBe(403);
    expect(JSON.parse(roConn.body).error.code).toBe('FORBIDDEN');
    const roServer = await raw(
      readOnlyServer.port,
      'POST',
      '/api/call',
      { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      JSON.stringify({ method: 'lease.forceRelease', params: { ...params, connectionId: rw } }),
    );
    expect(roServer.status).toBe(403);
    expect((await backend.admin.get('http-ro'))?.ended).toBeNull();
    const done = await api({ method: 'lease.forceRelease', params: { ...params, connectionId: rw } });
    expect(done.status).toBe(200);
    const conflict = await api({ method: 'lease.forceRelease', params: { ...params, connectionId: rw } });
    expect(conflict.status).toBe(409);
  });

  it('refuses request-release with 403 on a read-only connection and a read-only server; 200 then the same request', async () => {
    const rec = await backend.acquire('http-rr', 'w1', 60_000);
    const params = { workId: 'http-rr', expectedToken: rec.fencingToken.toString(), reason: 'drain' };
    const roConn = await api({ method: 'lease.requestRelease', params: { ...params, connectionId: ro } });
    expect(roConn.status).toBe(403);
    expect(JSON.parse(roConn.body).error.code).toBe('FORBIDDEN');
    const roServer = await raw(
      readOnlyServer.port,
      'POST',
      '/api/call',
      { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      JSON.stringify({ method: 'lease.requestRelease', params: { ...params, connectionId: rw } }),
    );
    expect(roServer.status).toBe(403);
    expect((await backend.admin.get('http-rr'))?.releaseRequest).toBeNull();
    const done = await api({ method: 'lease.requestRelease', params: { ...params, connectionId: rw } });
    expect(done.status).toBe(200);
    const row = JSON.parse(done.body).result;
    expect(row).toMatchObject({
      fencingToken: rec.fencingToken.toString(),
      releaseRequest: { reason: 'drain' },
    });
    const again = await api({
      method: 'lease.requestRelease',
      params: { ...params, connectionId: rw, reason: 'again' },
    });
    expect(JSON.parse(again.body).result.releaseRequest).toEqual(row.releaseRequest);
    const stale = await api({
      method: 'lease.requestRelease',
      params: { ...params, connectionId: rw, expectedToken: (rec.fencingToken + 9n).toString() },
    });
    expect(stale.status).toBe(409);
  });

  it('streams events over WebSocket: connections first, then leases after a write', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/api/events`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const events: ConsoleEvent[] = [];
    ws.on('message', (data) => events.push(ConsoleEventSchema.parse(JSON.parse(String(data)))));
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    try {
      await until('connections event', () => events.length > 0);
      expect(events[0]?.type).toBe('connections');
      await backend.acquire('ws-job', 'w-ws', 60_000);
      const ev = await until('leases event for ws-job', () =>
        events.find((e) => e.type === 'leases' && e.upserts.some((r) => r.workId === 'ws-job')),
      );
      expect(ev.type === 'leases' && ev.connectionId).toBeTruthy();
    } finally {
      ws.close();
    }
  });

  it('refuses a WebSocket with a wrong token (401) or a foreign origin (403)', async () => {
    const status = (url: string, headers: Record<string, string> = {}): Promise<number> =>
      new Promise((resolve, reject) => {
        const ws = new WebSocket(url, { headers });
        ws.on('unexpected-response', (_req, res) => {
          resolve(res.statusCode ?? 0);
          ws.terminate();
        });
        ws.on('open', () => {
          ws.close();
          reject(new Error('upgrade should have been refused'));
        });
        ws.on('error', () => {});
      });
    const events = `ws://127.0.0.1:${server.port}/api/events`;
    expect(await status(events, { authorization: 'Bearer wrong-wrong-wrong' })).toBe(401);
    expect(await status(events)).toBe(401);
    // The token in the URL is only the page's one-time exchange, never a credential of the stream.
    expect(await status(`${events}?token=${TOKEN}`)).toBe(401);
    expect(await status(events, { authorization: `Bearer ${TOKEN}`, origin: 'http://evil.example' })).toBe(
      403,
    );
  });

  it('serves the renderer with a strict CSP and refuses path traversal', async () => {
    const index = await raw(server.port, 'GET', '/');
    expect(index.status).toBe(200);
    expect(index.body).toContain('<title>console</title>');
    expect(index.headers['content-security-policy']).toContain("default-src 'self'");
    expect(index.headers['content-security-policy']).toContain(
      `connect-src 'self' ws://127.0.0.1:${server.port}`,
    );
    expect(index.headers['x-content-type-options']).toBe('nosniff');
    expect(index.headers['referrer-policy']).toBe('no-referrer');
    const js = await raw(server.port, 'GET', '/assets/app.js');
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toMatch(/javascript/);
    for (const path of [
      '/../secret.txt',
      '/assets/../../secret.txt',
      '/%2e%2e/secret.txt',
      '/..%2fsecret.txt',
      '/assets/link.txt',
      '/assets/%5c..%5c..%5csecret.txt',
    ]) {
      const res = await raw(server.port, 'GET', path);
      expect(res.status, path).toBeGreaterThanOrEqual(400);
      expect(res.body, path).not.toContain('TOP SECRET');
    }
    const route = await raw(server.port, 'GET', '/leases/some-id');
    expect(route.status).toBe(200);
  });

  it('serves no source map, and sends Permissions-Policy, COOP and CORP on every response (no HSTS over HTTP)', async () => {
    const map = await raw(server.port, 'GET', '/assets/app.js.map');
    expect(map.status).toBe(404);
    expect(map.body).not.toContain('sources');
    for (const [method, path, headers] of [
      ['GET', '/', {}],
      ['GET', '/assets/app.js', {}],
      ['POST', '/api/call', { 'content-type': 'application/json' }],
      ['GET', '/nope.txt', {}],
    ] as Array<[string, string, Record<string, string>]>) {
      const res = await raw(server.port, method, path, headers, method === 'POST' ? '{}' : undefined);
      expect(res.headers['permissions-policy'], path).toMatch(
        /camera=\(\), .*geolocation=\(\), .*microphone=\(\)/,
      );
      expect(res.headers['cross-origin-opener-policy'], path).toBe('same-origin');
      expect(res.headers['cross-origin-resource-policy'], path).toBe('same-origin');
      expect(res.headers['strict-transport-security'], path).toBeUndefined();
    }
  });

  it('behind an https public URL: HSTS, and the session cookie is __Host- and Secure', async () => {
    const token = randomBytes(32).toString('base64url');
    const tlsFront = await startWebServer({
      service,
      port: 0,
      token,
      staticDir,
      publicUrl: 'https://console.example.com',
    });
    try {
      const headers = { host: 'console.example.com', origin: 'https://console.example.com' };
      const page = await raw(tlsFront.port, 'GET', '/', { host: 'console.example.com' });
      expect(page.headers['strict-transport-security']).toBe('max-age=31536000');
      const signIn = await raw(tlsFront.port, 'POST', '/api/session', {
        ...headers,
        authorization: `Bearer ${token}`,
      });
      expect(signIn.status).toBe(200);
      const cookie = String(signIn.headers['set-cookie']);
      expect(cookie).toMatch(
        /^__Host-wl_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+; Secure$/,
      );
      const secret = (JSON.parse(signIn.body) as { result: { secret: string } }).result.secret;
      const call = await raw(
        tlsFront.port,
        'POST',
        '/api/call',
        {
          ...headers,
          'content-type': 'application/json',
          cookie: cookie.split(';')[0]!,
          'x-worklease-session': secret,
        },
        JSON.stringify({ method: 'console.info', params: {} }),
      );
      expect(call.status).toBe(200);
      // The unprefixed name is not read: a cookie set over plain HTTP by another origin cannot pose as it.
      const plain = cookie.split(';')[0]!.replace('__Host-wl_session', 'wl_session');
      const tossed = await raw(
        tlsFront.port,
        'POST',
        '/api/call',
        { ...headers, 'content-type': 'application/json', cookie: plain, 'x-worklease-session': secret },
        JSON.stringify({ method: 'console.info', params: {} }),
      );
      expect(tossed.status).toBe(401);
    } finally {
      await tlsFront.close();
    }
  });

  it('answers the page routes with the page (absolute asset URLs, same CSP), and only those', async () => {
    const routes = [
      '/audit',
      '/connections?q=x',
      '/c/conn-1',
      '/c/conn-1/audit',
      `/c/conn-1/lease/${encodeURIComponent('orders/job-17')}?status=stuck&sort=expiresAt`,
      // Work ids are untrusted text: a dot, an encoded `..`, a backslash, markup, a bad escape.
      '/c/conn-1/lease/job.17',
      '/c/conn-1/lease/%2E%2E',
      `/c/conn-1/lease/${encodeURIComponent('a\\..\\b')}`,
      `/c/conn-1/lease/${encodeURIComponent('<script>alert(1)</script>')}`,
      '/c/conn-1/lease/%E0%A4%A',
      '/c/conn-1/lease?workId=..',
    ];
    for (const path of routes) {
      const res = await raw(server.port, 'GET', path);
      expect(res.status, path).toBe(200);
      expect(res.headers['content-type'], path).toBe('text/html; charset=utf-8');
      expect(res.headers['content-security-policy'], path).toContain("script-src 'self'");
      expect(res.headers['x-frame-options'], path).toBe('DENY');
      // The asset URL resolves from any route depth; nothing of the path is echoed into the page.
      expect(res.body, path).toContain('src="/assets/app.js"');
      expect(res.body, path).not.toContain('alert');
    }
    const head = await raw(server.port, 'HEAD', '/c/conn-1/lease/job-1');
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    // Assets, the API and foreign hosts are not routes.
    expect((await raw(server.port, 'GET', '/assets/missing.js')).status).toBe(404);
    expect((await raw(server.port, 'GET', '/c/conn-1/lease/assets/app.js')).body).not.toContain(
      'console.log',
    );
    expect((await raw(server.port, 'GET', '/favicon.ico')).status).toBe(404);
    expect(
      (await raw(server.port, 'GET', '/api/c/conn-1', { authorization: `Bearer ${TOKEN}` })).status,
    ).toBe(404);
    expect((await raw(server.port, 'GET', '/api/call')).status).toBe(401);
    expect((await raw(server.port, 'POST', '/c/conn-1/lease/job-1')).status).toBe(405);
    const rebound = await raw(server.port, 'GET', '/c/conn-1/lease/job-1', {
      host: `evil.example:${server.port}`,
    });
    expect(rebound.status).toBe(421);
    expect(rebound.body).not.toContain('<title>');
    expect((await raw(server.port, 'GET', '/assets/missing.js')).status).toBe(404);
    expect((await raw(server.port, 'GET', '/api/other', { authorization: `Bearer ${TOKEN}` })).status).toBe(
      404,
    );
  });
});
