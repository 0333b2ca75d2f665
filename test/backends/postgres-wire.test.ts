/**
 * The lease calls' own PostgreSQL connections (src/backends/postgres/hot.ts): frames and replies
 * without I/O, then on the shared server (which connections carry what, many calls on few
 * connections, a reply in many socket chunks, deadlines, a dropped table, close), then on a private
 * server that takes only TLS and a SCRAM password (initdb'd into a temporary folder, loopback port),
 * where `pg` opens these connections as it opens the pool's.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { callFrames, encodeParams, HotPool, serverError } from '../../src/backends/postgres/hot.ts';
import { applicationName, openPostgres } from '../../src/backends/postgres/index.ts';
import { freePort } from '../../src/chaos/servers.ts';
import type { LeaseBackend, WorkleaseError } from '../../src/index.ts';
import { codeOf, PG_URL, uniqueNamespace } from '../support/backends.ts';
import { startProxy } from '../support/proxy.ts';
import { holdRow } from '../support/row-lock.ts';

const LIVE = 60_000;
const schemas: string[] = [];
const backends: LeaseBackend[] = [];
let admin: pg.Client;

beforeAll(async () => {
  admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
});

afterAll(async () => {
  await Promise.allSettled(backends.map((b) => b.close()));
  for (const s of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  await admin.end();
});

async function open(
  extra: Parameters<typeof openPostgres>[1] = {},
): Promise<{ b: LeaseBackend; schema: string }> {
  const schema = uniqueNamespace('pgw');
  schemas.push(schema);
  const b = await openPostgres(PG_URL, { schema, ...extra });
  backends.push(b);
  return { b, schema };
}

/** The backend's connections on the server, with the last statement each ran. */
async function conns(schema: string): Promise<Array<{ pid: number; query: string }>> {
  const { rows } = await admin.query('SELECT pid, query FROM pg_stat_activity WHERE application_name = $1', [
    applicationName(schema),
  ]);
  return rows.map((r) => ({ pid: Number(r.pid), query: String(r.query) }));
}

const isLeaseCall = (query: string): boolean =>
  /INSERT INTO .*\.leases AS l|UPDATE .*\.leases l SET/s.test(query);

describe('frames and replies (no I/O)', () => {
  const p = {
    parse: Buffer.from('P-frame'),
    describe: Buffer.from('D-frame'),
    name: Buffer.from('wl_renew\0'),
  };

  it('encodes parameters as pg does: text, NULL, bytes in binary; anything else goes through pg', () => {
    const bytes = new Uint8Array([1, 2, 3]);
    expect(encodeParams(['é', 42, 2n ** 63n - 1n, null, undefined, bytes])).toEqual([
      'é',
      '42',
      '9223372036854775807',
      null,
      null,
      Buffer.from([1, 2, 3]),
    ]);
    expect(encodeParams([new Date(0)])).toBeNull();
    expect(encodeParams([{ a: 1 }])).toBeNull();
    expect(encodeParams([['a']])).toBeNull();
  });

  it('writes Bind, Execute and Sync, with Parse and Describe only when asked', () => {
    const frame = callFrames(p, ['wé', null], false, false);
    const bind = Buffer.concat([
      Buffer.from('B'),
      Buffer.from([0, 0, 0, 31]),
      Buffer.from('\0wl_renew\0'),
      Buffer.from([0, 0, 0, 2]), // no format codes (all text), 2 parameters
      Buffer.from([0, 0, 0, 3]),
      Buffer.from('wé'),
      Buffer.from([0xff, 0xff, 0xff, 0xff]), // NULL
      Buffer.from([0, 0]), // results in text
    ]);
    const tail = Buffer.from([69, 0, 0, 0, 9, 0, 0, 0, 0, 0, 83, 0, 0, 0, 4]);
    expect(frame).toEqual(Buffer.concat([bind, tail]));
    expect(callFrames(p, ['wé', null], true, true)).toEqual(Buffer.concat([p.parse, p.describe, bind, tail]));
  });

  it('marks each byte parameter binary and the others text', () => {
    const frame = callFrames(p, ['a', Buffer.from([0, 255])], false, false);
    const formats = frame.subarray(1 + 4 + 1 + p.name.length, 1 + 4 + 1 + p.name.length + 6);
    expect([...formats]).toEqual([0, 2, 0, 0, 0, 1]);
    const params = frame.subarray(1 + 4 + 1 + p.name.length + 6 + 2);
    expect([...params.subarray(0, 4 + 1 + 4 + 2)]).toEqual([0, 0, 0, 1, 97, 0, 0, 0, 2, 0, 255]);
  });

  it('reads an ErrorResponse into the fields pg names', () => {
    const body = Buffer.from('SERROR\0VERROR\0CWL001\0Mrefused\0Dtoken=7\0HHint\0tleases\0Rf\0\0');
    const e = serverError(body, 0, body.length);
    expect(e).toBeInstanceOf(Error);
    expect({ ...e, message: e.message }).toMatchObject({
      message: 'refused',
      severity: 'ERROR',
      code: 'WL001',
      detail: 'token=7',
      hint: 'Hint',
      table: 'leases',
      routine: 'f',
    });
  });

  it('a pool refuses a parameter it cannot encode, or a statement without a name, without I/O: the caller sends it through pg', () => {
    const pool = new HotPool(
      () => new pg.Client({ connectionString: 'postgres://nobody@127.0.0.1:1/none' }),
      1,
      1000,
      'x',
      () => {},
      () => Promise.reject(new Error('not called')),
    );
    expect(pool.query({ name: 'x', text: 'SELECT $1', hot: true }, [new Date()])).toBeNull();
    expect(pool.query({ text: 'SELECT 1', hot: true }, [])).toBeNull();
    expect(pool.open).toBe(0);
    pool.close();
  });

  it('with a pg that does not hand over its socket, the waiting call and every later one go through pg', async () => {
    // A pg version whose Client keeps its socket elsewhere: connect succeeds, connection.stream is none.
    const connect = vi.spyOn(pg.Client.prototype, 'connect').mockImplementationOnce(function (
      this: pg.Client,
      cb?: (err: Error | null) => void,
    ) {
      Object.defineProperty(this, 'connection', { value: { stream: undefined } });
      queueMicrotask(() => cb?.(null));
    } as never);
    const sent: unknown[][] = [];
    const pool = new HotPool(
      () => new pg.Client({ connectionString: PG_URL }),
      1,
      1000,
      'x',
      () => {},
      async (_s, params) => {
        sent.push([...params]);
        return [{ via: 'pg' }];
      },
    );
    try {
      const statement = { name: 'x', text: 'SELECT $1', hot: true as const };
      expect(await pool.query(statement, ['a'])).toEqual([{ via: 'pg' }]);
      expect(sent).toEqual([['a']]);
      expect(pool.query(statement, ['b'])).toBeNull();
      expect(pool.open).toBe(0);
    } finally {
      connect.mockRestore();
      pool.close();
    }
  });
});

describe('the lease calls connections on the shared server', () => {
  it('are opened by the first lease call and carry the lease calls; a backend that only reads opens none', async () => {
    const { b, schema } = await open({ poolSize: 4 });
    await b.admin.serverTime();
    await b.admin.list({});
    expect(await b.admin.get('nothing')).toBeNull();
    const before = await conns(schema);
    expect(before.length).toBeGreaterThan(0);
    expect(before.filter((c) => isLeaseCall(c.query))).toEqual([]);
    const rec = await b.acquire('w', 'h', LIVE);
    await b.renew(rec, LIVE);
    const after = await conns(schema);
    const added = after.filter((c) => !before.some((x) => x.pid === c.pid));
    expect(added).toHaveLength(1);
    expect(isLeaseCall(added[0]!.query)).toBe(true);
    // Reads keep to the pool's connections.
    await b.admin.list({});
    expect((await conns(schema)).find((c) => c.pid === added[0]!.pid)?.query).toMatch(
      /UPDATE .*\.leases l SET/s,
    );
  });

  it('answer many calls in flight on fewer connections, each call with its own result', async () => {
    const { b, schema } = await open({ poolSize: 3 });
    const recs = await Promise.all(
      Array.from({ length: 40 }, (_, i) => b.acquire(`many-${i}`, `h${i}`, LIVE)),
    );
    expect(new Set(recs.map((r) => r.fencingToken)).size).toBe(40);
    const states = recs.map((_, i) => new Uint8Array(100 + i).fill(i));
    await Promise.all(recs.map((r, i) => b.checkpoint(r, states[i]!, LIVE)));
    const read = await Promise.all(recs.map((r) => b.readCheckpoint(r)));
    read.forEach((r, i) => {
      expect(Buffer.from(r.state!)).toEqual(Buffer.from(states[i]!));
    });
    const leaseConns = (await conns(schema)).filter((c) => /leases l/.test(c.query));
    expect(leaseConns.length).toBeLessThanOrEqual(3);
  });

  it('reads back a state of several MiB whole (a reply in many socket chunks)', async () => {
    const { b } = await open({ maxStateBytes: 6 * 1024 * 1024 });
    const rec = await b.acquire('big', 'h', LIVE);
    const state = Buffer.alloc(5 * 1024 * 1024);
    for (let i = 0; i < state.length; i++) state[i] = (i * 31) & 0xff;
    await b.checkpoint(rec, state, LIVE);
    const read = await b.readCheckpoint(rec);
    expect(read.state?.byteLength).toBe(state.length);
    expect(Buffer.from(read.state!).equals(state)).toBe(true);
  });

  it('a call that waits for a connection past its deadline fails BACKEND_UNAVAILABLE; the pool goes on', async () => {
    const schema = uniqueNamespace('pgw');
    schemas.push(schema);
    const proxy = await startProxy('127.0.0.1', Number(new URL(PG_URL).port || 5432));
    try {
      const b = await openPostgres(proxy.rewrite(PG_URL), { schema, poolSize: 1, callTimeoutMs: 400 });
      backends.push(b);
      const [one, two] = [await b.acquire('one', 'h', LIVE), await b.acquire('two', 'h', LIVE)];
      // The one connection stops answering: the first renew is written on it, the second waits for
      // it, and the connection opened when the first gives up does not come up either.
      proxy.blackhole();
      const [first, second] = await Promise.all([
        b.renew(one, LIVE).catch((e: WorkleaseError) => e),
        b.renew(two, LIVE).catch((e: WorkleaseError) => e),
      ]);
      expect((first as WorkleaseError).code).toBe('BACKEND_UNAVAILABLE');
      expect((first as WorkleaseError).message).toMatch(/no answer from .* within 400 ms/);
      expect((second as WorkleaseError).code).toBe('BACKEND_UNAVAILABLE');
      expect((second as WorkleaseError).message).toMatch(/waiting for a connection to .* took over 400 ms/);
      proxy.restore();
      // Neither call was answered; both leases renew with their tokens on a fresh connection.
      expect((await b.renew(two, LIVE)).fencingToken).toBe(two.fencingToken);
      expect((await b.renew(one, LIVE)).fencingToken).toBe(one.fencingToken);
    } finally {
      proxy.restore();
      await proxy.close();
    }
  });

  it('a lease table dropped under the backend is SCHEMA_MISMATCH, and the connection stays usable', async () => {
    const { b, schema } = await open({ poolSize: 1 });
    const rec = await b.acquire('gone', 'h', LIVE);
    const pids = (await conns(schema)).map((c) => c.pid);
    await admin.query(`ALTER TABLE "${schema}".leases RENAME TO leases_away`);
    try {
      expect(await codeOf(b.renew(rec, LIVE))).toBe('SCHEMA_MISMATCH');
    } finally {
      await admin.query(`ALTER TABLE "${schema}".leases_away RENAME TO leases`);
    }
    // Prepared on a table that was renamed: the server re-plans it by the table's oid.
    expect((await b.renew(rec, LIVE)).fencingToken).toBe(rec.fencingToken);
    expect((await conns(schema)).map((c) => c.pid).sort()).toEqual(pids.sort());
  });

  it('close fails a lease call still in flight with BACKEND_UNAVAILABLE and leaves none of its connections', async () => {
    const { b, schema } = await open({ poolSize: 2 });
    const rec = await b.acquire('closing', 'h', LIVE);
    const lock = await holdRow(schema, 'closing');
    try {
      const pending = codeOf(b.renew(rec, LIVE));
      await lock.waiting();
      await b.close();
      expect(await pending).toBe('BACKEND_UNAVAILABLE');
    } finally {
      await lock.close();
    }
    // The server ends the one that waited on the lock once the lock is gone.
    await expect.poll(async () => (await conns(schema)).length).toBe(0);
  });
});

describe('on a private server that takes only TLS and a SCRAM password', () => {
  let dir = '';
  let url = '';
  const PASSWORD = 'w0rk-lease secret';

  /** Runs a PostgreSQL tool as the postgres user (initdb refuses root). */
  function asPostgres(command: string): void {
    execFileSync('su', ['postgres', '-c', command], { stdio: 'ignore', timeout: 60_000 });
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'worklease-pg-tls-'));
    // The folder was made for this test alone; postgres must own it to run initdb in it and to
    // read the key.
    execFileSync('chown', ['postgres', dir]);
    chmodSync(dir, 0o700);
    const [cert, key] = [join(dir, 'cert.pem'), join(dir, 'key.pem')];
    const subject = ['-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'];
    const req = ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', ...subject];
    execFileSync('openssl', [...req, '-keyout', key, '-out', cert], { stdio: 'ignore' });
    execFileSync('chown', ['postgres', cert, key]);
    chmodSync(key, 0o600);
    const port = await freePort();
    asPostgres(`initdb -D ${dir}/data -A trust -U postgres`);
    writeFileSync(
      join(dir, 'data', 'postgresql.auto.conf'),
      `port = ${port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${dir}'\nssl = on\nssl_cert_file = '${cert}'\nssl_key_file = '${key}'\npassword_encryption = 'scram-sha-256'\n`,
    );
    // Over TCP only TLS with a password; the local socket (this test's admin) stays trusted.
    writeFileSync(
      join(dir, 'data', 'pg_hba.conf'),
      'local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\nhost all all 127.0.0.1/32 reject\n',
    );
    asPostgres(`pg_ctl -D ${dir}/data -l ${dir}/log -w start`);
    execFileSync('psql', [
      '-h',
      dir,
      '-p',
      String(port),
      '-U',
      'postgres',
      '-d',
      'postgres',
      '-Atqc',
      `CREATE ROLE app LOGIN PASSWORD '${PASSWORD}'`,
    ]);
    execFileSync('psql', [
      '-h',
      dir,
      '-p',
      String(port),
      '-U',
      'postgres',
      '-d',
      'postgres',
      '-Atqc',
      'CREATE DATABASE app OWNER app',
    ]);
    url = `postgres://app:${encodeURIComponent(PASSWORD)}@127.0.0.1:${port}/app?sslmode=verify-full&sslrootcert=${encodeURIComponent(cert)}`;
  }, 90_000);

  afterAll(async () => {
    if (dir !== '') {
      try {
        asPostgres(`pg_ctl -D ${dir}/data -m immediate -w stop`);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });

  it('opens the lease calls connections with TLS and the password, and carries the calls on them', async () => {
    const b = await openPostgres(url, { poolSize: 2 });
    try {
      const rec = await b.acquire('tls', 'h', LIVE);
      const state = new Uint8Array(3000).fill(9);
      await b.checkpoint(rec, state, LIVE);
      expect(Buffer.from((await b.readCheckpoint(rec)).state!)).toEqual(Buffer.from(state));
      expect(await codeOf(b.renew({ ...rec, fencingToken: rec.fencingToken + 1n }, LIVE))).toBe('FENCED');
      await b.release(rec);
      const port = new URL(url).port;
      const rows = execFileSync('psql', [
        '-h',
        dir,
        '-p',
        port,
        '-U',
        'postgres',
        '-d',
        'app',
        '-Atqc',
        `SELECT s.ssl, translate(a.query, E'\\n', ' ') FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.application_name = 'worklease:worklease'`,
      ])
        .toString()
        .trim()
        .split('\n');
      const lease = rows.filter((r) => isLeaseCall(r));
      expect(lease.length).toBeGreaterThan(0);
      for (const r of rows) expect(r.startsWith('t|')).toBe(true);
    } finally {
      await b.close();
    }
  });

  it('a lease calls connection that cannot log in fails its call FORBIDDEN; the next one opens once it can', async () => {
    const port = new URL(url).port;
    const psql = (sql: string): void => {
      execFileSync('psql', ['-h', dir, '-p', port, '-U', 'postgres', '-d', 'postgres', '-Atqc', sql]);
    };
    // Opened (the pool's connections log in), then the password changes before the first lease call.
    const b = await openPostgres(url, { poolSize: 2, schema: 'pwchange', callTimeoutMs: 5000 });
    try {
      psql(`ALTER ROLE app PASSWORD 'changed meanwhile'`);
      const err = await b.acquire('pw', 'h', LIVE).catch((e: WorkleaseError) => e);
      expect((err as WorkleaseError).code).toBe('FORBIDDEN');
      expect((err as WorkleaseError).message).toMatch(
        /^connecting failed on .*password authentication failed/,
      );
      expect(String((err as WorkleaseError).message)).not.toContain(PASSWORD);
      psql(`ALTER ROLE app PASSWORD '${PASSWORD}'`);
      const rec = await b.acquire('pw', 'h', LIVE);
      expect((await b.renew(rec, LIVE)).fencingToken).toBe(rec.fencingToken);
    } finally {
      psql(`ALTER ROLE app PASSWORD '${PASSWORD}'`);
      await b.close();
    }
  });
});
