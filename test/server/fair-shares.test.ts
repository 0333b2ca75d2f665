/**
 * Fair shares and the security log of a served console, over HTTP and WebSocket against the real
 * web server and console service: one low-privilege user floods sign-ins, event streams and wrong
 * tokens while an admin keeps working; sign-out everywhere, an admin's sign-out of a user and a
 * configuration reload end sessions without a restart; every event is one JSON line without a
 * secret, and counted in /metrics. The admin connects from 127.0.0.2, the flood from 127.0.0.1
 * (every 127/8 address is this machine's).
 */
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { type ConsoleService, createConsoleService } from '../../src/console/index.ts';
import { type LeaseBackend, openBackend } from '../../src/index.ts';
import type { AuthOptions } from '../../src/server/auth.ts';
import { startWebServer, type WebServer } from '../../src/server/index.ts';
import { sharedOpener } from '../console/helpers.ts';

const sha = (t: string): string => createHash('sha256').update(t).digest('hex');
const tokens = { vera: randomBytes(32).toString('hex'), adam: randomBytes(32).toString('hex') };
const users: NonNullable<AuthOptions['users']> = [
  { name: 'vera', tokenSha256: sha(tokens.vera), roles: { '*': 'viewer' } },
  { name: 'adam', tokenSha256: sha(tokens.adam), roles: { '*': 'admin' } },
];
const ADMIN_ADDRESS = '127.0.0.2';

let backend: LeaseBackend;
let service: ConsoleService;
let server: WebServer;
const lines: string[] = [];

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: { ok?: boolean; result?: Record<string, unknown>; error?: { message: string } };
  text: string;
}

function http(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
  localAddress = '127.0.0.1',
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: server.port, method, path, headers, localAddress },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          let parsed: Reply['body'] = {};
          try {
            parsed = JSON.parse(text) as Reply['body'];
          } catch {
            // Not JSON (the metrics text): `text` has it.
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed, text });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const origin = () => `http://127.0.0.1:${server.port}`;

interface Browser {
  cookie: string;
  secret: string;
  from: string;
}

async function signIn(token: string, from = '127.0.0.1'): Promise<Browser | Reply> {
  const r = await http(
    'POST',
    '/api/session',
    { origin: origin(), authorization: `Bearer ${token}` },
    '',
    from,
  );
  if (r.status !== 200) return r;
  return {
    cookie: String(r.headers['set-cookie']).split(';')[0]!,
    secret: String(r.body.result?.secret),
    from,
  };
}

function asBrowser(b: Browser): Record<string, string> {
  return { origin: origin(), cookie: b.cookie, 'x-worklease-session': b.secret };
}

function call(method: string, headers: Record<string, string>, from = '127.0.0.1'): Promise<Reply> {
  return http(
    'POST',
    '/api/call',
    { 'content-type': 'application/json', ...headers },
    JSON.stringify({ method, params: {} }),
    from,
  );
}

function stream(
  headers: Record<string, string>,
  protocols: string[] = [],
  from = '127.0.0.1',
): Promise<{ status: number; ws: WebSocket | null; closed: Promise<number> }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/api/events`, protocols, {
      headers,
      localAddress: from,
    });
    const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    ws.on('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode ?? 0, ws: null, closed });
      ws.terminate();
    });
    ws.on('open', () => resolve({ status: 101, ws, closed }));
    ws.on('error', () => {});
  });
}

const browserStream = (b: Browser) =>
  stream({ origin: origin(), cookie: b.cookie }, ['worklease', `worklease.session.${b.secret}`], b.from);

const events = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);

/** A fresh server (fresh limits and log) for each group of tests. */
async function freshServer(): Promise<void> {
  await server?.close();
  lines.length = 0;
  server = await startWebServer({
    service,
    port: 0,
    metrics: true,
    staticDir: '/nonexistent',
    auth: { sharedToken: null, sharedRoles: {}, users },
    securityLog: (line) => lines.push(line),
  });
}

beforeAll(async () => {
  backend = await openBackend('pglite://memory');
  service = createConsoleService({
    openBackend: sharedOpener(backend),
    connections: [{ name: 'main', url: 'pglite://memory' }],
    feed: { pollMaxMs: 200 },
    shared: {},
  });
  await service.waitLive(service.connections()[0]!.id);
});

afterAll(async () => {
  await server?.close();
  await service?.close();
  await backend?.close();
});

describe('one user cannot lock out another', () => {
  beforeAll(freshServer);

  it("a viewer's flood of sign-ins and event streams leaves the admin's session, streams and sign-in alone", async () => {
    const adam = (await signIn(tokens.adam, ADMIN_ADDRESS)) as Browser;
    expect(adam.secret).toMatch(/^[\w-]{43}$/);
    const adamStream = await browserStream(adam);
    expect(adamStream.status).toBe(101);
    // 400 sign-ins: the first 300 in five minutes are served, the rest refused (429) — and none
    // of them can end another person's session.
    const outcomes = new Map<number, number>();
    for (let i = 0; i < 400; i++) {
      const r = await signIn(tokens.vera);
      const status = 'cookie' in r ? 200 : r.status;
      outcomes.set(status, (outcomes.get(status) ?? 0) + 1);
    }
    expect(outcomes.get(200)).toBe(300);
    expect(outcomes.get(429)).toBe(100);
    expect((await call('console.session', asBrowser(adam), ADMIN_ADDRESS)).status).toBe(200);
    // 250 event streams with a token: past 32 of hers, refused; the admin's stays open and a new one opens.
    const vera = { authorization: `Bearer ${tokens.vera}` };
    const opened: WebSocket[] = [];
    let refused = 0;
    for (let i = 0; i < 250; i++) {
      const s = await stream(vera);
      if (s.ws !== null) opened.push(s.ws);
      else if (s.status === 429) refused++;
    }
    expect(opened).toHaveLength(32);
    expect(refused).toBe(218);
    expect(adamStream.ws?.readyState).toBe(WebSocket.OPEN);
    const second = await browserStream(adam);
    expect(second.status).toBe(101);
    expect((await call('connections.list', asBrowser(adam), ADMIN_ADDRESS)).status).toBe(200);
    const again = await signIn(tokens.adam, ADMIN_ADDRESS);
    expect('cookie' in again).toBe(true);
    for (const ws of [...opened, adamStream.ws!, second.ws!]) ws.close();
  });

  it('locks out an address after 20 wrong tokens, without touching the sessions signed in from it', async () => {
    const local = (await signIn(tokens.adam)) as Browser;
    expect('cookie' in local).toBe(true);
    const before = server.securityCounts();
    const statuses: number[] = [];
    for (let i = 0; i < 100; i++) {
      statuses.push(
        (await call('console.session', { authorization: `Bearer ${randomBytes(32).toString('hex')}` }))
          .status,
      );
    }
    expect(statuses.slice(0, 20).every((s) => s === 401)).toBe(true);
    expect(statuses.slice(20).every((s) => s === 429)).toBe(true);
    // Locked: even the right token is not looked at from there (so guesses learn nothing)…
    const locked = await call('console.session', { authorization: `Bearer ${tokens.vera}` });
    expect(locked.status).toBe(429);
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
    // …but the session signed in from there works, and another address signs in.
    expect((await call('console.session', asBrowser(local))).status).toBe(200);
    expect(
      (await call('console.session', { authorization: `Bearer ${tokens.adam}` }, ADMIN_ADDRESS)).status,
    ).toBe(200);
    // The log folds the flood into a line per address and minute; /metrics counts every attempt.
    const failedLines = events().filter((e) => e.event === 'sign-in-failed' && e.reason === 'wrong-token');
    expect(failedLines.length).toBe(1);
    const metrics = await http(
      'GET',
      '/metrics',
      { authorization: `Bearer ${tokens.adam}` },
      undefined,
      ADMIN_ADDRESS,
    );
    expect(metrics.status).toBe(200);
    const text = metrics.text;
    const counted = (event: string) =>
      Number(
        new RegExp(`^worklease_console_security_events_total\\{event="${event}"\\} (\\d+)$`, 'm').exec(
          text,
        )?.[1],
      );
    expect(counted('sign-in-failed') - before['sign-in-failed']).toBe(20);
    expect(counted('sign-in-throttled') - before['sign-in-throttled']).toBe(81);
  });
});

describe('sessions an operator can manage', () => {
  beforeAll(freshServer);

  it('sign-out everywhere ends every session of the person and closes their streams', async () => {
    const a = (await signIn(tokens.adam, ADMIN_ADDRESS)) as Browser;
    const b = (await signIn(tokens.adam, ADMIN_ADDRESS)) as Browser;
    const s = await browserStream(b);
    expect(s.status).toBe(101);
    const out = await http('DELETE', '/api/session?everywhere=1', asBrowser(a), undefined, ADMIN_ADDRESS);
    expect(out.status).toBe(200);
    expect(await s.closed).toBe(4001);
    expect((await call('console.session', asBrowser(a), ADMIN_ADDRESS)).status).toBe(401);
    expect((await call('console.session', asBrowser(b), ADMIN_ADDRESS)).status).toBe(401);
    expect(
      events().filter((e) => e.event === 'sign-out-everywhere' && e.user === 'adam').length,
    ).toBeGreaterThanOrEqual(2);
  });

  it('an admin of every connection signs another person out; nobody else can', async () => {
    const adam = (await signIn(tokens.adam, ADMIN_ADDRESS)) as Browser;
    const vera = (await signIn(tokens.vera, '127.0.0.3')) as Browser;
    expect('cookie' in vera).toBe(true);
    const veraStream = await stream({ authorization: `Bearer ${tokens.vera}` }, [], '127.0.0.3');
    const byVera = await http('DELETE', '/api/session?user=adam', asBrowser(vera), undefined, '127.0.0.3');
    expect(byVera.status).toBe(403);
    expect((await call('console.session', asBrowser(adam), ADMIN_ADDRESS)).status).toBe(200);
    const byAdam = await http('DELETE', '/api/session?user=vera', asBrowser(adam), undefined, ADMIN_ADDRESS);
    expect(byAdam.status).toBe(200);
    expect(await veraStream.closed).toBe(4001);
    expect((await call('console.session', asBrowser(vera), '127.0.0.3')).status).toBe(401);
    expect(
      events().some((e) => e.event === 'session-revoked' && e.user === 'vera' && e.reason === 'by adam'),
    ).toBe(true);
  });

  it('a reload that drops a token ends its sessions and streams at once; others keep theirs with new roles', async () => {
    const adam = (await signIn(tokens.adam, ADMIN_ADDRESS)) as Browser;
    const vera = (await signIn(tokens.vera, '127.0.0.4')) as Browser;
    const veraStream = await browserStream(vera);
    const veraBearer = await stream({ authorization: `Bearer ${tokens.vera}` }, [], '127.0.0.4');
    expect(veraStream.status).toBe(101);
    server.reload({
      sharedToken: null,
      sharedRoles: {},
      users: [{ name: 'adam', tokenSha256: sha(tokens.adam), roles: { '*': 'viewer' } }],
    });
    expect(await veraStream.closed).toBe(4001);
    expect(await veraBearer.closed).toBe(4001);
    expect((await call('console.session', asBrowser(vera), '127.0.0.4')).status).toBe(401);
    expect(
      (await call('console.session', { authorization: `Bearer ${tokens.vera}` }, '127.0.0.4')).status,
    ).toBe(401);
    const still = await call('console.session', asBrowser(adam), ADMIN_ADDRESS);
    expect(still.status).toBe(200);
    expect((still.body.result as { connections: Array<{ role: string }> }).connections[0]?.role).toBe(
      'viewer',
    );
    // A configuration that would be refused at start is refused here, and the running one stays.
    expect(() => server.reload({ sharedToken: '0123456789abcdef'.repeat(2), sharedRoles: {} })).toThrow(
      /too weak/,
    );
    expect((await call('console.session', asBrowser(adam), ADMIN_ADDRESS)).status).toBe(200);
    server.reload({ sharedToken: null, sharedRoles: {}, users });
    expect(events().filter((e) => e.event === 'config-reloaded')).toHaveLength(2);
    expect(
      events().some(
        (e) => e.event === 'session-revoked' && e.user === 'vera' && e.reason === 'token removed',
      ),
    ).toBe(true);
  });

  it('logs sign-ins, sign-outs, forbidden calls as one JSON line each, with no token, cookie or secret in any', async () => {
    const adam = (await signIn(tokens.adam, ADMIN_ADDRESS)) as Browser;
    const forbidden = await http(
      'POST',
      '/api/call',
      { 'content-type': 'application/json', authorization: `Bearer ${tokens.vera}` },
      JSON.stringify({ method: 'connections.add', params: { name: 'x', url: 'pglite://memory' } }),
      '127.0.0.5',
    );
    expect(forbidden.status).toBe(403);
    await http('DELETE', '/api/session', asBrowser(adam), undefined, ADMIN_ADDRESS);
    const all = events();
    expect(all.some((e) => e.event === 'sign-in' && e.user === 'adam' && e.address === ADMIN_ADDRESS)).toBe(
      true,
    );
    expect(
      all.some((e) => e.event === 'forbidden' && e.user === 'vera' && e.method === 'connections.add'),
    ).toBe(true);
    expect(all.some((e) => e.event === 'sign-out' && e.user === 'adam')).toBe(true);
    for (const line of lines) {
      expect(line.endsWith('\n')).toBe(true);
      expect(typeof JSON.parse(line).time).toBe('string');
      for (const secret of [tokens.adam, tokens.vera, adam.secret, adam.cookie.split('=')[1]!]) {
        expect(line).not.toContain(secret);
      }
    }
  });
});

describe('session lifetimes', () => {
  it('a session unused for idleMs ends; an open event stream keeps it; lifetimeMs ends it regardless', async () => {
    await server?.close();
    lines.length = 0;
    server = await startWebServer({
      service,
      port: 0,
      staticDir: '/nonexistent',
      auth: { sharedToken: null, sharedRoles: {}, users },
      sessions: { idleMs: 400, lifetimeMs: 2_500 },
      pingIntervalMs: 100,
      securityLog: (line) => lines.push(line),
    });
    const idle = (await signIn(tokens.adam)) as Browser;
    const watched = (await signIn(tokens.adam)) as Browser;
    const s = await browserStream(watched);
    expect(s.status).toBe(101);
    await new Promise((r) => setTimeout(r, 700));
    expect((await call('console.session', asBrowser(idle))).status).toBe(401);
    expect((await call('console.session', asBrowser(watched))).status).toBe(200);
    // Past its lifetime the stream is closed (4001) and the session refused.
    expect(await s.closed).toBe(4001);
    expect((await call('console.session', asBrowser(watched))).status).toBe(401);
    expect(events().some((e) => e.event === 'session-expired' && e.user === 'adam')).toBe(true);
  });
});
