/**
 * Regression tests of the shared console against a real `worklease serve`
 * process (HTTP and WebSocket), one per finding of the security review:
 * read-only that was not, connection calls as a capability, readOnly never
 * loosened, Host/Origin checks, token strength, roles and the audited
 * identity, the trusted proxy header, the cookie session, the client cap, TLS.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { type LeaseBackend, openBackend } from '../../src/index.ts';
import { type Running, run, start } from '../cli/support.ts';
import { PG_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';

const target = { kind: 'postgres' as const, url: PG_URL };
const ns = uniqueNamespace('serve');
const CONSOLE_URL = `${PG_URL}?schema=${ns}`;

let backend: LeaseBackend;
let dir: string;

const newToken = (): string => randomBytes(32).toString('hex');
const sha = (t: string): string => createHash('sha256').update(t).digest('hex');

interface Reply {
  status: number;
  body: { ok: boolean; result?: unknown; error?: { code: string; name: string; message: string } };
  headers: Headers;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** One API call; `headers` may carry a token, a cookie, an Origin or a Host. */
async function call(
  port: number,
  method: string,
  params: unknown,
  headers: Record<string, string>,
): Promise<Reply> {
  const res = await rawFetch(port, '/api/call', 'POST', JSON.stringify({ method, params }), {
    'content-type': 'application/json',
    ...headers,
  });
  return res;
}

/** fetch() cannot set Host; node:http can. */
async function rawFetch(
  port: number,
  path: string,
  method: string,
  body: string | undefined,
  headers: Record<string, string>,
): Promise<Reply> {
  const { request } = await import('node:http');
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        let parsed: Reply['body'];
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = { ok: false, error: { code: 'NONE', name: 'text', message: text } };
        }
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) {
          if (typeof v === 'string') h.set(k, v);
          else if (Array.isArray(v)) for (const x of v) h.append(k, x);
        }
        resolve({ status: res.statusCode ?? 0, body: parsed, headers: h });
      });
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** The HTTP status of a WebSocket upgrade (101 when it opened), and the socket when it did. */
function upgrade(
  port: number,
  headers: Record<string, string>,
  protocols: string[] = [],
): Promise<{ status: number; ws: WebSocket | null; messages: unknown[] }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/events`, protocols, { headers });
    // Collected from the start: the first event can arrive with the 101 response.
    const messages: unknown[] = [];
    ws.on('message', (d) => messages.push(JSON.parse(String(d))));
    ws.on('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode ?? 0, ws: null, messages });
      ws.terminate();
    });
    ws.on('open', () => resolve({ status: 101, ws, messages }));
    ws.on('error', () => {});
  });
}

/** Until every connection the caller sees is live (a force-release before that is BACKEND_UNAVAILABLE). */
async function allLive(port: number, headers: Record<string, string>): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const list = (await call(port, 'connections.list', {}, headers)).body.result as Array<{ state: string }>;
    if (list.length > 0 && list.every((c) => c.state === 'live')) return;
    if (Date.now() > deadline) throw new Error(`connections not live: ${JSON.stringify(list)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function serve(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ proc: Running; port: number }> {
  const proc = start(['serve', '--port', String(await freePort()), ...args], env);
  const [, port] = await proc.waitFor(/open: https?:\/\/[^\s/]+:(\d+)\//);
  return { proc, port: Number(port) };
}

beforeAll(async () => {
  backend = await openBackend(PG_URL, { schema: ns, migrate: true });
  dir = mkdtempSync(join(tmpdir(), 'wl-serve-'));
});

afterAll(async () => {
  await backend?.close();
  await dropNamespace(target, ns);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('serve --read-only', () => {
  let proc: Running;
  let port: number;
  const token = newToken();
  const auth = { authorization: `Bearer ${token}` };
  let connId: string;

  beforeAll(async () => {
    const file = join(dir, 'ro-token');
    writeFileSync(file, `${token}\n`);
    ({ proc, port } = await serve(['--read-only', '--connect', CONSOLE_URL, '--token-file', file]));
    const list = await call(port, 'connections.list', {}, auth);
    connId = (list.body.result as Array<{ id: string }>)[0]!.id;
  });
  afterAll(async () => {
    await proc?.stop();
  });

  it('never prints a token it was given (stdout may be a log)', () => {
    expect(proc.stdout()).not.toContain(token);
    expect(proc.stdout()).toMatch(/sign-in: the given token/);
  });

  it('answers FORBIDDEN to every connection call and creates no directory', async () => {
    const deep = join(dir, 'ro-deep', 'a', 'b');
    const calls: Array<[string, unknown]> = [
      ['connections.add', { name: 'x', url: `pglite://${deep}` }],
      ['connections.update', { id: connId, changes: { readOnly: false } }],
      ['connections.update', { id: connId, changes: { url: 'redis://127.0.0.1:6379' } }],
      ['connections.remove', { id: connId }],
      ['connections.test', { url: `pglite://${deep}` }],
      ['connections.test', { url: 'redis://127.0.0.1:1' }],
      ['connections.test', { id: connId }],
    ];
    for (const [method, params] of calls) {
      const r = await call(port, method, params, auth);
      expect(r.status, method).toBe(403);
      expect(r.body.error?.code, method).toBe('FORBIDDEN');
    }
    expect(existsSync(join(dir, 'ro-deep'))).toBe(false);
    const list = await call(port, 'connections.list', {}, auth);
    expect(list.body.result).toMatchObject([{ id: connId, readOnly: true, kind: 'postgres' }]);
  });

  it('refuses force-release (403) and leaves the lease alone', async () => {
    const rec = await backend.acquire('ro-job', 'w1', 60_000);
    const r = await call(
      port,
      'lease.forceRelease',
      { connectionId: connId, workId: 'ro-job', expectedToken: String(rec.fencingToken), reason: 'x' },
      auth,
    );
    expect(r.status).toBe(403);
    expect((await backend.admin.get('ro-job'))?.ended).toBeNull();
  });

  it('checks Host (DNS rebinding) and Origin: the bind origin and its localhost form pass, others do not', async () => {
    const h = (host: string, extra: Record<string, string> = {}) =>
      call(port, 'connections.list', {}, { ...auth, host, ...extra });
    expect((await h(`127.0.0.1:${port}`)).status).toBe(200);
    expect((await h(`localhost:${port}`)).status).toBe(200);
    expect((await h(`evil.example:${port}`)).status).toBe(421);
    expect((await h(`127.0.0.1:${port + 1}`)).status).toBe(421);
    expect((await rawFetch(port, '/', 'GET', undefined, { host: `evil.example:${port}` })).status).toBe(421);
    expect((await h(`localhost:${port}`, { origin: `http://localhost:${port}` })).status).toBe(200);
    expect((await h(`127.0.0.1:${port}`, { origin: `http://127.0.0.1:${port}` })).status).toBe(200);
    expect((await h(`127.0.0.1:${port}`, { origin: 'http://evil.example' })).status).toBe(403);
    expect((await h(`127.0.0.1:${port}`, { origin: `http://evil.example:${port}` })).status).toBe(403);
    expect((await upgrade(port, { ...auth, host: `evil.example:${port}` })).status).toBe(421);
    expect((await upgrade(port, { ...auth, origin: 'http://evil.example' })).status).toBe(403);
    const ok = await upgrade(port, { ...auth, origin: `http://localhost:${port}` });
    expect(ok.status).toBe(101);
    ok.ws?.close();
  });

  it('exchanges the token for a cookie and a secret: neither alone is a session, from any origin', async () => {
    const origin = `http://127.0.0.1:${port}`;
    const none = await rawFetch(port, '/api/session', 'POST', '', { origin });
    expect(none.status).toBe(401);
    expect(none.body.error?.name).toBe('UnauthenticatedError');
    const foreign = await rawFetch(port, '/api/session', 'POST', '', {
      ...auth,
      origin: 'http://evil.example',
    });
    expect(foreign.status).toBe(403);
    const ex = await rawFetch(port, '/api/session', 'POST', '', { ...auth, origin });
    expect(ex.status).toBe(200);
    const setCookie = ex.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(
      /^wl_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/,
    );
    const secret = (ex.body.result as { secret: string }).secret;
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const cookie = setCookie.split(';')[0]!;
    const withSecret = { cookie, origin, 'x-worklease-session': secret };
    expect((await call(port, 'console.session', {}, withSecret)).status).toBe(200);
    // The cookie alone is what another local server receives (cookies are not isolated by
    // port) and replays with a forged Origin: not a session.
    const replay = await call(port, 'console.session', {}, { cookie, origin });
    expect(replay.status).toBe(401);
    expect(replay.body.error?.name).toBe('UnauthenticatedError');
    // The secret alone is not one either, nor the pair without our Origin (no browser sends that).
    expect((await call(port, 'console.session', {}, { origin, 'x-worklease-session': secret })).status).toBe(
      401,
    );
    expect((await call(port, 'console.session', {}, { cookie, 'x-worklease-session': secret })).status).toBe(
      401,
    );
    // The WebSocket upgrade carries the secret as a subprotocol (a page cannot set headers there).
    expect((await upgrade(port, { cookie, origin })).status).toBe(401);
    const ws = await upgrade(port, { cookie, origin }, ['worklease', `worklease.session.${secret}`]);
    expect(ws.status).toBe(101);
    expect(ws.ws?.protocol).toBe('worklease');
    const closed = new Promise<number>((resolve) => ws.ws!.once('close', (code) => resolve(code)));
    const out = await rawFetch(port, '/api/session', 'DELETE', undefined, withSecret);
    expect(out.status).toBe(200);
    expect(await closed).toBe(4001);
    const after = await call(port, 'console.session', {}, withSecret);
    expect(after.status).toBe(401);
    expect(after.body.error?.name).toBe('UnauthenticatedError');
  });
});

describe('serve with users, roles, a trusted proxy and connection edits', () => {
  let proc: Running;
  let port: number;
  const tokens = { vera: newToken(), olivia: newToken(), adam: newToken() };
  const as = (user: keyof typeof tokens) => ({ authorization: `Bearer ${tokens[user]}` });
  const proxySecret = newToken();
  const proxied = (email: string) => ({
    'x-forwarded-email': email,
    'x-worklease-proxy-secret': proxySecret,
  });
  let main: string;
  let ro: string;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = join(dir, 'pglite-data');
    mkdirSync(dataDir);
    const config = join(dir, 'console.json');
    writeFileSync(
      config,
      JSON.stringify({
        connections: [
          { name: 'main', url: CONSOLE_URL, environment: 'test' },
          { name: 'ro', url: CONSOLE_URL, readOnly: true },
        ],
        users: [
          { name: 'vera', tokenSha256: sha(tokens.vera), roles: { '*': 'viewer' } },
          { name: 'olivia', tokenSha256: sha(tokens.olivia), roles: { '*': 'viewer', main: 'operator' } },
          { name: 'adam', tokenSha256: sha(tokens.adam), roles: { '*': 'admin' } },
          { name: 'pat@example.com', roles: { main: 'operator' } },
        ],
        proxy: { trusted: ['127.0.0.1'] },
      }),
    );
    ({ proc, port } = await serve(
      ['--config', config, '--allow-connection-edits', '--pglite-dir', dataDir, '--max-clients', '3'],
      { WORKLEASE_PROXY_SECRET: proxySecret },
    ));
    const list = (await call(port, 'connections.list', {}, as('adam'))).body.result as Array<{
      id: string;
      name: string;
    }>;
    await allLive(port, as('adam'));
    main = list.find((c) => c.name === 'main')!.id;
    ro = list.find((c) => c.name === 'ro')!.id;
  });
  afterAll(async () => {
    await proc?.stop();
  });

  it('generates no shared token when users are configured', () => {
    expect(proc.stdout()).not.toMatch(/token=/);
    expect(proc.stdout()).toMatch(
      /sign-in: per-user tokens; the proxy's x-forwarded-email header with its secret, from 127\.0\.0\.1/,
    );
    expect(proc.stdout() + proc.stderr()).not.toContain(proxySecret);
  });

  it('tells each person who they are and what they may do, with the reason', async () => {
    const vera = (await call(port, 'console.session', {}, as('vera'))).body.result as {
      user: string;
      via: string;
      connections: Array<{
        connectionId: string;
        role: string;
        forceRelease: { allowed: boolean; reason?: string };
      }>;
    };
    expect(vera).toMatchObject({ user: 'vera', via: 'token' });
    const onMain = vera.connections.find((c) => c.connectionId === main);
    expect(onMain).toMatchObject({ role: 'viewer', forceRelease: { allowed: false } });
    expect(onMain?.forceRelease.reason).toMatch(/viewer; force-release needs operator/);
    const info = (await call(port, 'console.info', {}, as('olivia'))).body.result as { operator: string };
    expect(info.operator).toBe('olivia');
  });

  it('roles: a viewer cannot force-release, an operator can and the audit names them, nobody else can be named', async () => {
    const rec = await backend.acquire('roles-job', 'w1', 60_000);
    const params = {
      connectionId: main,
      workId: 'roles-job',
      expectedToken: String(rec.fencingToken),
      reason: 'stuck',
    };
    const byVera = await call(port, 'lease.forceRelease', params, as('vera'));
    expect(byVera.status).toBe(403);
    expect(byVera.body.error?.message).toMatch(/viewer/);
    const spoof = await call(port, 'lease.forceRelease', { ...params, operator: 'adam' }, as('olivia'));
    expect(spoof.status).toBe(403);
    expect((await backend.admin.get('roles-job'))?.ended).toBeNull();
    const byOlivia = await call(port, 'lease.forceRelease', params, as('olivia'));
    expect(byOlivia.status).toBe(200);
    const audit = await backend.admin.audit({ workId: 'roles-job' });
    expect(audit.map((a) => a.operator)).toEqual(['olivia']);
    // olivia is only a viewer on 'ro' (which is read-only anyway) and on connections in general.
    const upd = await call(
      port,
      'connections.update',
      { id: main, changes: { environment: 'x' } },
      as('olivia'),
    );
    expect(upd.status).toBe(403);
    expect(upd.body.error?.message).toMatch(/admin role on every connection/);
  });

  it('a trusted proxy header names the user; an unknown proxy user gets 403, no credentials 401', async () => {
    const pat = await call(port, 'console.session', {}, proxied('pat@example.com'));
    expect(pat.status).toBe(200);
    expect(pat.body.result).toMatchObject({ user: 'pat@example.com', via: 'proxy' });
    // pat has no role on 'ro': it is not even listed.
    const list = (await call(port, 'connections.list', {}, proxied('pat@example.com'))).body.result as Array<{
      id: string;
    }>;
    expect(list.map((c) => c.id)).toEqual([main]);
    // The event stream is filtered the same way: pat's first event lists 'main' only.
    const ws = await upgrade(port, proxied('pat@example.com'));
    expect(ws.status).toBe(101);
    const deadline = Date.now() + 5000;
    while (ws.messages.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 300));
    ws.ws!.close();
    const events = ws.messages as Array<{
      type: string;
      connections?: Array<{ id: string }>;
      connection?: { id: string };
    }>;
    expect(events[0]?.type).toBe('connections');
    expect(events[0]?.connections?.map((c) => c.id)).toEqual([main]);
    // No event of a connection pat cannot see.
    for (const e of events) if (e.connection !== undefined) expect(e.connection.id).toBe(main);
    const nobody = await call(port, 'console.session', {}, proxied('mallory'));
    expect(nobody.status).toBe(403);
    // Without the secret the header names nobody, even from the proxy's address.
    expect((await call(port, 'console.session', {}, { 'x-forwarded-email': 'pat@example.com' })).status).toBe(
      401,
    );
    const anon = await call(port, 'console.session', {}, {});
    expect(anon.status).toBe(401);
    expect(anon.body.error?.name).toBe('UnauthenticatedError');
  });

  it('readOnly can be tightened through the API, never loosened', async () => {
    const loosen = await call(
      port,
      'connections.update',
      { id: ro, changes: { readOnly: false } },
      as('adam'),
    );
    expect(loosen.status).toBe(403);
    expect(loosen.body.error?.message).toMatch(/server configuration/);
    const tighten = await call(
      port,
      'connections.update',
      { id: main, changes: { readOnly: true } },
      as('adam'),
    );
    expect(tighten.status).toBe(200);
    expect(tighten.body.result).toMatchObject({ readOnly: true });
    const rec = await backend.acquire('tight-job', 'w1', 60_000);
    const fr = await call(
      port,
      'lease.forceRelease',
      { connectionId: main, workId: 'tight-job', expectedToken: String(rec.fencingToken), reason: 'x' },
      as('olivia'),
    );
    expect(fr.status).toBe(403);
    const back = await call(
      port,
      'connections.update',
      { id: main, changes: { readOnly: false } },
      as('adam'),
    );
    expect(back.status).toBe(403);
  });

  it('pglite paths only inside --pglite-dir; connections.test only on configured connections', async () => {
    const outside = join(dir, 'outside', 'db');
    for (const url of [`pglite://${outside}`, `pglite://${dataDir}/../escape`, `pglite://${dataDir}`]) {
      const r = await call(port, 'connections.add', { name: 'p', url }, as('adam'));
      expect(r.status, url).toBe(403);
    }
    expect(existsSync(join(dir, 'outside'))).toBe(false);
    expect(existsSync(join(dir, 'escape'))).toBe(false);
    expect(readdirSync(dataDir)).toEqual([]);
    const scan = await call(port, 'connections.test', { url: 'redis://127.0.0.1:6379' }, as('adam'));
    expect(scan.status).toBe(403);
    expect(scan.body.error?.message).toMatch(/configured connections only/);
    const own = await call(port, 'connections.test', { id: ro }, as('adam'));
    expect(own.status).toBe(200);
    expect(own.body.result).toMatchObject({ kind: 'postgres' });
  });

  it('caps the event clients with a clear refusal', async () => {
    const open: WebSocket[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        const u = await upgrade(port, as('vera'));
        expect(u.status).toBe(101);
        open.push(u.ws!);
      }
      expect((await upgrade(port, as('vera'))).status).toBe(503);
    } finally {
      for (const ws of open) ws.close();
    }
  });
});

describe('serve refuses an unsafe start with a clear error (exit 2)', () => {
  it.each([
    [['--token', '0000000000000000'], {}, /too weak/],
    [['--token', '0123456789abcdef'.repeat(2)], {}, /too weak/],
    [[], { WORKLEASE_TOKEN: 'passwordpasswordpassword1234567890' }, /too weak/],
    [['--token', 'a'.repeat(64)], {}, /too weak/],
    [[], { WORKLEASE_TOKEN: 'correct horse battery staple 1234567890' }, /malformed/],
    [['--read-only', '--allow-connection-edits'], {}, /exclude each other/],
    [['--connection-hosts', '127.0.0.1:5432'], {}, /give --allow-connection-edits too/],
    [['--allow-connection-edits', '--connection-hosts', 'db.internal'], {}, /host:port entries/],
    [['--allow-connection-edits', '--connection-hosts', 'db.internal:99999'], {}, /port 1\.\.65535/],
    [['--host', '0.0.0.0'], {}, /plain HTTP/],
    [['--host', '0.0.0.0', '--insecure-http'], {}, /--public-url/],
  ] as Array<[string[], NodeJS.ProcessEnv, RegExp]>)('serve %j', async (args, env, message) => {
    const r = await run(['serve', '--connect', CONSOLE_URL, '--port', '0', ...args], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).not.toMatch(/open:/);
  });
});

describe('serve refuses a trusted proxy without its secret (exit 2)', () => {
  it('on loopback too, and a weak one', async () => {
    const config = join(dir, 'proxy-only.json');
    writeFileSync(
      config,
      JSON.stringify({ proxy: { trusted: ['127.0.0.1'], defaultRoles: { '*': 'viewer' } } }),
    );
    const base = ['serve', '--config', config, '--connect', CONSOLE_URL, '--port', '0'];
    const none = await run(base, { WORKLEASE_PROXY_SECRET: '' });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/trusts a proxy at 127\.0\.0\.1 but no proxy secret is given/);
    const weak = await run(base, { WORKLEASE_PROXY_SECRET: 'secretsecretsecretsecret12345678' });
    expect(weak.code).toBe(2);
    expect(weak.stderr).toMatch(/too weak/);
    expect(weak.stdout).not.toMatch(/open:/);
    const secretFile = join(dir, 'proxy-secret');
    writeFileSync(secretFile, `${newToken()}\n`);
    const stray = await run([
      'serve',
      '--connect',
      CONSOLE_URL,
      '--port',
      '0',
      '--proxy-secret-file',
      secretFile,
    ]);
    expect(stray.code).toBe(2);
    expect(stray.stderr).toMatch(/--proxy-secret-file is given but the config file names no proxy/);
  });
});

describe('serve reloads its users on SIGHUP', () => {
  it("a removed token's sessions end without a restart; a bad file keeps the running configuration", async () => {
    const keep = newToken();
    const drop = newToken();
    const config = join(dir, 'reload.json');
    const write = (users: Array<[string, string]>) =>
      writeFileSync(
        config,
        JSON.stringify({
          connections: [{ name: 'main', url: CONSOLE_URL }],
          users: users.map(([name, token]) => ({ name, tokenSha256: sha(token), roles: { '*': 'viewer' } })),
        }),
      );
    write([
      ['kim', keep],
      ['dan', drop],
    ]);
    const { proc, port } = await serve(['--config', config]);
    try {
      const origin = `http://127.0.0.1:${port}`;
      const signIn = async (token: string) => {
        const r = await rawFetch(port, '/api/session', 'POST', '', {
          authorization: `Bearer ${token}`,
          origin,
        });
        return {
          cookie: (r.headers.get('set-cookie') ?? '').split(';')[0]!,
          origin,
          'x-worklease-session': (r.body.result as { secret: string }).secret,
        };
      };
      const kim = await signIn(keep);
      const dan = await signIn(drop);
      expect((await call(port, 'console.session', {}, dan)).status).toBe(200);
      write([['kim', keep]]);
      proc.child.kill('SIGHUP');
      await proc.waitFor(/"event":"config-reloaded"/, 'stderr');
      expect((await call(port, 'console.session', {}, dan)).status).toBe(401);
      expect((await call(port, 'console.session', {}, { authorization: `Bearer ${drop}` })).status).toBe(401);
      expect((await call(port, 'console.session', {}, kim)).status).toBe(200);
      writeFileSync(config, '{ not json');
      proc.child.kill('SIGHUP');
      await proc.waitFor(/SIGHUP: the configuration was not reloaded/, 'stderr');
      expect((await call(port, 'console.session', {}, kim)).status).toBe(200);
      expect(proc.child.exitCode).toBeNull();
      expect(proc.stderr()).toMatch(/"event":"session-revoked","user":"dan"/);
      expect(proc.stderr()).not.toContain(drop);
    } finally {
      await proc.stop();
    }
  });
});

describe('serve --tls-cert/--tls-key', () => {
  it('serves HTTPS and marks the session cookie Secure', async () => {
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    execFileSync('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ]);
    const token = newToken();
    const { proc, port } = await serve(['--connect', CONSOLE_URL, '--tls-cert', cert, '--tls-key', key], {
      WORKLEASE_TOKEN: token,
    });
    try {
      expect(proc.stdout()).toContain(`open: https://127.0.0.1:${port}/`);
      const { readFileSync } = await import('node:fs');
      const ca = readFileSync(cert);
      const reply = await new Promise<{ status: number; cookie: string }>((resolve, reject) => {
        const req = httpsRequest(
          {
            host: '127.0.0.1',
            port,
            path: '/api/session',
            method: 'POST',
            ca,
            headers: { authorization: `Bearer ${token}`, origin: `https://127.0.0.1:${port}` },
          },
          (res) => {
            res.resume();
            resolve({ status: res.statusCode ?? 0, cookie: String(res.headers['set-cookie'] ?? '') });
          },
        );
        req.on('error', reject);
        req.end();
      });
      expect(reply.status).toBe(200);
      expect(reply.cookie).toMatch(
        /^__Host-wl_session=[\w-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+; Secure$/,
      );
      // Plain HTTP on the TLS port gets no answer from the API.
      await expect(rawFetch(port, '/api/call', 'POST', '{}', {})).rejects.toThrow();
    } finally {
      await proc.stop();
    }
  });
});
