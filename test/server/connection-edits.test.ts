/**
 * Connection edits on a served console (`serve --allow-connection-edits`) cannot reach what the
 * server can: a real `worklease serve` process whose environment holds PostgreSQL credentials
 * (PGPASSWORD, PGUSER, …), and fake PostgreSQL servers on loopback ports that record what they
 * receive. Only an admin of every connection edits; names are unique and visible; hosts off the
 * allow-list are refused before any I/O, open or closed alike; the server's ambient credentials
 * never leave it; passwords are shown redacted whatever they hold.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, start } from '../cli/support.ts';
import { PG_URL } from '../support/backends.ts';
import { type FakePostgres, startFakePostgres } from '../support/fake-postgres.ts';

const AMBIENT = {
  PGPASSWORD: `ambient-${randomBytes(8).toString('hex')}`,
  PGUSER: 'ambient-user',
  PGDATABASE: 'ambient-db',
  PGPORT: '1',
  REDISCLI_AUTH: `ambient-redis-${randomBytes(8).toString('hex')}`,
};
const PGPASS_SECRET = `pgpass-${randomBytes(8).toString('hex')}`;
const ODD_PASSWORD = 'p@ss/w:rd';

const sha = (t: string): string => createHash('sha256').update(t).digest('hex');
const newToken = (): string => randomBytes(32).toString('hex');

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

interface Reply {
  status: number;
  body: { ok: boolean; result?: unknown; error?: { code: string; message: string } };
}

let dir: string;
let proc: Running;
let port: number;
let fake: FakePostgres;
let offList: FakePostgres;
let closedPort: number;
/** A fake Redis: records every byte a client sends it, answers nothing. */
let redisBytes = '';
let fakeRedis: ReturnType<typeof createServer>;
let fakeRedisPort: number;
const tokens = { adam: newToken(), olga: newToken(), nina: newToken(), vic: newToken() };

async function call(user: keyof typeof tokens, method: string, params: unknown): Promise<Reply> {
  const res = await fetch(`http://127.0.0.1:${port}/api/call`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${tokens[user]}` },
    body: JSON.stringify({ method, params }),
  });
  return { status: res.status, body: (await res.json()) as Reply['body'] };
}

const add = (user: keyof typeof tokens, name: string, url: string) =>
  call(user, 'connections.add', { name, url });

/** Waits long enough for a connection the console accepted to have reached its host. */
const settle = () => new Promise((r) => setTimeout(r, 1500));

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'wl-edits-'));
  fake = await startFakePostgres();
  offList = await startFakePostgres();
  closedPort = await freePort();
  fakeRedis = createServer((socket) => {
    socket.on('data', (d: Buffer) => {
      redisBytes += d.toString('latin1');
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((r) => fakeRedis.listen(0, '127.0.0.1', r));
  fakeRedisPort = (fakeRedis.address() as { port: number }).port;
  // A ~/.pgpass of the server's that knows the fake host: never to be read for an added connection.
  const pgpass = join(dir, 'pgpass');
  writeFileSync(pgpass, `127.0.0.1:*:*:*:${PGPASS_SECRET}\n`, { mode: 0o600 });
  const config = join(dir, 'console.json');
  writeFileSync(
    config,
    JSON.stringify({
      connections: [
        { name: 'main', url: `${PG_URL}?schema=edits_${randomBytes(4).toString('hex')}` },
        { name: 'odd', url: `postgres://postgres:${ODD_PASSWORD}@127.0.0.1:5432/test` },
      ],
      users: [
        { name: 'adam', tokenSha256: sha(tokens.adam), roles: { '*': 'admin' } },
        // Admin of every connection but one: not an admin of every connection.
        { name: 'olga', tokenSha256: sha(tokens.olga), roles: { '*': 'admin', main: 'viewer' } },
        // Admin of one name only.
        { name: 'nina', tokenSha256: sha(tokens.nina), roles: { '*': 'viewer', shadow: 'admin' } },
        { name: 'vic', tokenSha256: sha(tokens.vic), roles: { '*': 'viewer' } },
      ],
    }),
  );
  proc = start(
    [
      'serve',
      '--config',
      config,
      '--allow-connection-edits',
      '--connection-hosts',
      `127.0.0.1:${fake.port},127.0.0.1:${fakeRedisPort}`,
      '--port',
      String(await freePort()),
    ],
    { ...AMBIENT, PGPASSFILE: pgpass },
  );
  const [, p] = await proc.waitFor(/open: http:\/\/[^\s/]+:(\d+)\//);
  port = Number(p);
});

afterAll(async () => {
  await proc?.stop();
  await fake?.close();
  await offList?.close();
  await new Promise<void>((r) => (fakeRedis ? fakeRedis.close(() => r()) : r()));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('connection edits on a served console', () => {
  it("never sends the server's ambient PostgreSQL credentials to a host a caller chose", async () => {
    const noPassword = await add(
      'adam',
      'no-password',
      `postgres://app@127.0.0.1:${fake.port}/db?sslmode=disable`,
    );
    expect(noPassword.status).toBe(403);
    expect(noPassword.body.error?.message).toMatch(/carries its own user and password/);
    const noUser = await add('adam', 'no-user', `postgres://127.0.0.1:${fake.port}/db?sslmode=disable`);
    expect(noUser.status).toBe(403);
    await settle();
    // Nothing reached the host, least of all PGPASSWORD.
    expect(fake.logins.map((l) => l.password)).not.toContain(AMBIENT.PGPASSWORD);
    expect(fake.connections).toBe(0);
    const given = await add(
      'adam',
      'given',
      `postgres://app:given-pw@127.0.0.1:${fake.port}/db?sslmode=disable`,
    );
    expect(given.status).toBe(200);
    const deadline = Date.now() + 10_000;
    while (fake.logins.every((l) => l.password === null) && Date.now() < deadline) await settle();
    expect(fake.logins.length).toBeGreaterThan(0);
    for (const login of fake.logins) {
      expect(login.startup.user).toBe('app');
      expect(login.startup.database).toBe('db');
      expect(login.password).toBe('given-pw');
    }
    expect(JSON.stringify(fake.logins)).not.toContain(PGPASS_SECRET);
  });

  it("sends a Redis host no credential from the server's environment (REDISCLI_AUTH)", async () => {
    const r = await add('adam', 'cache', `redis://127.0.0.1:${fakeRedisPort}`);
    expect(r.status).toBe(200);
    const deadline = Date.now() + 10_000;
    while (redisBytes === '' && Date.now() < deadline) await settle();
    expect(redisBytes).not.toBe('');
    expect(redisBytes).not.toContain(AMBIENT.REDISCLI_AUTH);
    expect(redisBytes.toUpperCase()).not.toContain('AUTH');
  });

  it('refuses a host off the allow-list before any I/O, the same way open or closed', async () => {
    const open = await add(
      'adam',
      'scan-open',
      `postgres://app:pw@127.0.0.1:${offList.port}/db?sslmode=disable`,
    );
    const closed = await add(
      'adam',
      'scan-closed',
      `postgres://app:pw@127.0.0.1:${closedPort}/db?sslmode=disable`,
    );
    expect(open.status).toBe(403);
    expect(closed.status).toBe(403);
    const shape = (r: Reply, p: number) => r.body.error?.message.replace(String(p), 'PORT');
    expect(shape(open, offList.port)).toBe(shape(closed, closedPort));
    expect(open.body.error?.message).toMatch(/not a host this console may reach.*nothing was sent/);
    const redis = await add('adam', 'scan-redis', `redis://127.0.0.1:${offList.port}`);
    expect(redis.status).toBe(403);
    await settle();
    expect(offList.connections).toBe(0);
  });

  it('refuses what would take the server ambient settings: sockets, files, missing port, database or sslmode', async () => {
    const at = `127.0.0.1:${fake.port}`;
    const TWICE = /hosts are given both/;
    const cases: Array<[string, RegExp]> = [
      [`postgres://fence:pw@${at}/db?sslmode=require&sslcert=/root/.postgresql/postgresql.crt`, /sslcert/],
      [`postgres://fence:pw@${at}/db?sslmode=require&sslkey=/root/.postgresql/postgresql.key`, /sslkey/],
      // The URL grammar refuses this one first (400, before the fence): hosts given twice.
      [`postgres://fence:pw@${at}/db?sslmode=disable&host=/var/run/postgresql`, TWICE],
      [
        `postgres://fence:pw@${at}/db?sslmode=verify-ca&sslrootcert=/root/.postgresql/root.crt`,
        /'sslrootcert'/,
      ],
      [`postgres://fence:pw@/db?sslmode=disable&host=/var/run/postgresql`, /name the host/],
      ['postgres://fence:pw@127.0.0.1/db?sslmode=disable', /give the port/],
      [`postgres://fence:pw@${at}?sslmode=disable`, /name the database/],
      [`postgres://fence:pw@${at}/db`, /sslmode/],
      [`postgres://fence:p@ss@${at}/db?sslmode=disable`, /ambiguous/],
    ];
    for (const [url, message] of cases) {
      const r = await add('adam', `bad-${randomBytes(3).toString('hex')}`, url);
      expect(r.status, `${url} ${JSON.stringify(r.body)}`).toBe(message === TWICE ? 400 : 403);
      expect(r.body.error?.message, url).toMatch(message);
    }
    await settle();
    // Counted by user name: a connection an earlier test added keeps reconnecting to this host.
    expect(fake.logins.filter((l) => l.startup.user === 'fence')).toEqual([]);
  });

  it('only an admin of every connection adds, edits or removes one', async () => {
    const url = `postgres://app:pw@127.0.0.1:${fake.port}/db?sslmode=disable`;
    // An admin of one name adds a connection of that name pointing at another connection's database.
    const byNina = await add('nina', 'shadow', `${PG_URL}`);
    expect(byNina.status).toBe(403);
    expect(byNina.body.error?.message).toMatch(/admin role on every connection/);
    expect((await add('olga', 'by-olga', url)).status).toBe(403);
    expect((await add('vic', 'by-vic', url)).status).toBe(403);
    const list = (await call('adam', 'connections.list', {})).body.result as Array<{
      id: string;
      name: string;
    }>;
    const main = list.find((c) => c.name === 'main')!;
    expect(
      (await call('olga', 'connections.update', { id: main.id, changes: { environment: 'x' } })).status,
    ).toBe(403);
    expect((await call('nina', 'connections.remove', { id: main.id })).status).toBe(403);
    expect(list.map((c) => c.name)).not.toContain('shadow');
  });

  it('keeps names unique and visible: no duplicates by case or look-alike characters, no invisible ones', async () => {
    const url = `postgres://app:pw@127.0.0.1:${fake.port}/db?sslmode=disable`;
    for (const name of [
      'main',
      'MAIN',
      '\uFF4D\uFF41\uFF49\uFF4E',
      'ma\u200Bin',
      'ma\u202Ein',
      '\u3164',
      ' ',
    ]) {
      const r = await add('adam', name, url);
      expect(r.status, JSON.stringify(name)).toBe(400);
    }
    const list = (await call('adam', 'connections.list', {})).body.result as Array<{
      id: string;
      name: string;
    }>;
    const given = list.find((c) => c.name === 'given')!;
    const rename = await call('adam', 'connections.update', { id: given.id, changes: { name: 'Main' } });
    expect(rename.status).toBe(400);
  });

  it('shows a password holding @, / and : as *** in the list and never prints it', async () => {
    const list = (await call('adam', 'connections.list', {})).body.result as Array<{
      name: string;
      url: string;
    }>;
    expect(list.find((c) => c.name === 'odd')?.url).toBe('postgres://postgres:***@127.0.0.1:5432/test');
    const all = JSON.stringify(list) + proc.stdout() + proc.stderr();
    expect(all).not.toContain('ss/w:rd');
    expect(all).not.toContain(AMBIENT.PGPASSWORD);
  });
});
