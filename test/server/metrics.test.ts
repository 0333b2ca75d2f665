/**
 * `/metrics`: Prometheus text from the console, scraped over HTTP. Behind the console's sign-in on
 * the web server (a bearer token; the caller sees only connections it has a role on), or on a
 * listener of its own without sign-in. Checks the text format (HELP/TYPE, label escaping), the
 * figures against the fleet, and the console's own backend calls.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleService, createConsoleService } from '../../src/console/index.ts';
import { type LeaseBackend, openBackend } from '../../src/index.ts';
import { sha256Hex } from '../../src/server/auth.ts';
import {
  escapeLabel,
  type MetricsServer,
  parseMetricsBind,
  startMetricsServer,
  startWebServer,
  type WebServer,
} from '../../src/server/index.ts';
import { sharedOpener, until } from '../console/helpers.ts';

function get(
  port: number,
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), body }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** The value of the one sample of `name` whose labels include every given one. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${escapeLabel(v)}"`))) {
      return Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return undefined;
}

const WEIRD = 'we"ird\\name';
const tokens = { vera: 'v'.repeat(8) + sha256Hex('vera').slice(0, 40), adam: sha256Hex('adam-token') };
let backend: LeaseBackend;
let service: ConsoleService;
let web: WebServer;
let plain: WebServer;
let side: MetricsServer;

beforeAll(async () => {
  backend = await openBackend('pglite://memory');
  service = createConsoleService({
    openBackend: sharedOpener(backend),
    connections: [
      { name: 'main', url: 'pglite://memory', thresholds: { stuckAfterMs: 60_000 } },
      { name: WEIRD, url: 'pglite://memory' },
    ],
    feed: { pollMaxMs: 100 },
    shared: {},
  });
  const a = await backend.acquire('m-1', 'h-1', 60_000);
  await backend.acquire('m-2', 'h-1', 60_000);
  await backend.acquire('m-3', 'h-2', 60_000);
  await backend.release(a);
  for (const c of service.connections()) await service.waitLive(c.id);
  await until('rows in the model', () => (service.model(service.connections()[0]!.id)?.size ?? 0) >= 3);
  const users = [
    { name: 'vera', tokenSha256: sha256Hex(tokens.vera), roles: { main: 'viewer' as const } },
    { name: 'adam', tokenSha256: sha256Hex(tokens.adam), roles: { '*': 'admin' as const } },
  ];
  web = await startWebServer({
    service,
    port: 0,
    metrics: true,
    auth: { sharedToken: null, sharedRoles: {}, users },
    staticDir: '/nonexistent',
  });
  plain = await startWebServer({
    service,
    port: 0,
    auth: { sharedToken: null, sharedRoles: {}, users },
    staticDir: '/nonexistent',
  });
  side = await startMetricsServer({ service, port: 0 });
});
afterAll(async () => {
  await side?.close();
  await web?.close();
  await plain?.close();
  await service?.close();
  await backend?.close();
});

describe('/metrics behind the sign-in', () => {
  it('serves the text format with HELP and TYPE lines and the fleet figures', async () => {
    const out = await get(web.port, '/metrics', { authorization: `Bearer ${tokens.adam}` });
    expect(out.status).toBe(200);
    expect(out.type).toBe('text/plain; version=0.0.4; charset=utf-8');
    for (const [name, type] of [
      ['worklease_console_leases', 'gauge'],
      ['worklease_console_stuck_leases', 'gauge'],
      ['worklease_console_holders', 'gauge'],
      ['worklease_console_backend_calls_total', 'counter'],
      ['worklease_console_backend_calls_per_second', 'gauge'],
      ['worklease_console_connection_up', 'gauge'],
      ['worklease_console_heartbeats_checked_age_seconds', 'gauge'],
      ['worklease_console_heartbeat_check_interval_seconds', 'gauge'],
      ['worklease_console_heartbeat_check_duration_seconds', 'gauge'],
    ]) {
      expect(out.body).toMatch(new RegExp(`^# HELP ${name} \\S.*$`, 'm'));
      expect(out.body).toContain(`# TYPE ${name} ${type}\n`);
    }
    // Every line is a comment or `name{labels} value`.
    for (const line of out.body.trimEnd().split('\n')) {
      expect(line).toMatch(/^(# (HELP|TYPE) \w+ .+|\w+\{[^}]*\} [0-9.e+-]+)$/);
    }
    expect(sample(out.body, 'worklease_console_leases', { connection: 'main', status: 'live' })).toBe(2);
    expect(sample(out.body, 'worklease_console_leases', { connection: 'main', status: 'released' })).toBe(1);
    expect(sample(out.body, 'worklease_console_stuck_leases', { connection: 'main' })).toBe(0);
    expect(sample(out.body, 'worklease_console_holders', { connection: 'main' })).toBe(2);
    expect(sample(out.body, 'worklease_console_connection_up', { connection: 'main' })).toBe(1);
    // Heartbeat checks: the last began within the 2 s interval (plus a sweep and some load) before now.
    const age = sample(out.body, 'worklease_console_heartbeats_checked_age_seconds', { connection: 'main' });
    expect(age).toBeGreaterThanOrEqual(0);
    expect(age).toBeLessThan(5);
    expect(
      sample(out.body, 'worklease_console_heartbeat_check_interval_seconds', { connection: 'main' }),
    ).toBe(2);
    expect(
      sample(out.body, 'worklease_console_heartbeat_check_duration_seconds', { connection: 'main' }),
    ).toBeGreaterThanOrEqual(0);
    // The name with a quote and a backslash is escaped in its label.
    expect(out.body).toContain('connection="we\\"ird\\\\name"');
    expect(sample(out.body, 'worklease_console_leases', { connection: WEIRD, status: 'live' })).toBe(2);
  });

  it("counts the console's own backend calls, and shows the rate on the connection", async () => {
    const read = async () =>
      sample(
        (await get(web.port, '/metrics', { authorization: `Bearer ${tokens.adam}` })).body,
        'worklease_console_backend_calls_total',
        { connection: 'main' },
      ) ?? 0;
    const before = await read();
    const id = service.connections().find((c) => c.name === 'main')!.id;
    await service.handle(
      'lease.get',
      { connectionId: id, workId: 'm-2' },
      {
        user: 'adam',
        via: 'token',
        roles: { '*': 'admin' },
      },
    );
    expect(await read()).toBeGreaterThan(before);
    // The model polls and heartbeats every ~100 ms-1 s: a non-zero rate within the 10 s window.
    await until(
      'a rate',
      () => (service.connections().find((c) => c.name === 'main')?.callsPerSecond ?? 0) > 0,
      15_000,
    );
  });

  it('shows a caller only the connections it has a role on', async () => {
    const out = await get(web.port, '/metrics', { authorization: `Bearer ${tokens.vera}` });
    expect(out.status).toBe(200);
    expect(out.body).toContain('connection="main"');
    expect(out.body).not.toContain('ird');
  });

  it('refuses without or with a wrong token, a foreign Origin, a POST; absent unless enabled', async () => {
    expect((await get(web.port, '/metrics')).status).toBe(401);
    expect((await get(web.port, '/metrics', { authorization: `Bearer ${'x'.repeat(43)}` })).status).toBe(401);
    const foreign = await get(web.port, '/metrics', {
      authorization: `Bearer ${tokens.adam}`,
      origin: 'http://evil.example',
    });
    expect(foreign.status).toBe(403);
    expect((await get(web.port, '/metrics', { authorization: `Bearer ${tokens.adam}` }, 'POST')).status).toBe(
      405,
    );
    const off = await get(plain.port, '/metrics', { authorization: `Bearer ${tokens.adam}` });
    expect(off.status).toBe(404);
    expect(off.body).not.toContain('worklease_console');
  });
});

describe('/metrics on a listener of its own', () => {
  it('needs no sign-in, shows every connection, and serves nothing else', async () => {
    expect(side.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const out = await get(side.port, '/metrics');
    expect(out.status).toBe(200);
    expect(sample(out.body, 'worklease_console_leases', { connection: 'main', status: 'live' })).toBe(2);
    expect(out.body).toContain('connection="we\\"ird\\\\name"');
    expect((await get(side.port, '/api/call')).status).toBe(404);
    expect((await get(side.port, '/metrics', {}, 'POST')).status).toBe(405);
  });

  it('answers only Host names that cannot be a rebound DNS name (421 otherwise)', async () => {
    // A page on evil.example whose name was rebound to 127.0.0.1 sends its own name as Host: it
    // must not read the names and counts of every connection.
    for (const host of [`evil.example:${side.port}`, 'evil.example', `localhost.evil.example:${side.port}`]) {
      const out = await get(side.port, '/metrics', { host });
      expect(out.status, host).toBe(421);
      expect(out.body, host).not.toContain('worklease_console');
    }
    for (const host of [`127.0.0.1:${side.port}`, `localhost:${side.port}`, `[::1]:${side.port}`]) {
      expect((await get(side.port, '/metrics', { host })).status, host).toBe(200);
    }
    // A name the operator gave is accepted, the others still are not.
    const named = await startMetricsServer({ service, port: 0, hostNames: ['metrics.internal'] });
    try {
      expect((await get(named.port, '/metrics', { host: `metrics.internal:${named.port}` })).status).toBe(
        200,
      );
      expect((await get(named.port, '/metrics', { host: `other.internal:${named.port}` })).status).toBe(421);
    } finally {
      await named.close();
    }
  });

  it('parses --metrics-bind: loopback unless a host is named', () => {
    expect(parseMetricsBind('9464')).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(parseMetricsBind('0.0.0.0:9464')).toEqual({ host: '0.0.0.0', port: 9464 });
    expect(parseMetricsBind('[::1]:9464')).toEqual({ host: '::1', port: 9464 });
    for (const bad of ['', 'host:', ':80', '70000', 'a:b', '1.2.3.4:99999']) {
      expect(() => parseMetricsBind(bad), bad).toThrow(/--metrics-bind/);
    }
  });
});
