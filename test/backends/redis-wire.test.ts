/**
 * The lease calls' own connection to a standalone Redis (src/backends/redis/wire.ts): its RESP
 * reply parser and frames (no I/O), and, on a private redis-server with a password and a database
 * number, that lease calls go through it once it is up (reads stay on ioredis), that a call whose
 * connection is killed under it fails BACKEND_UNAVAILABLE and is never re-sent, that a reply
 * arriving after its call's deadline is dropped without shifting the next calls' replies, that a
 * state of several MiB arrives whole, and that close leaves no connection behind.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRedis } from '../../src/backends/redis/index.ts';
import { STAGED_MIN_BYTES } from '../../src/backends/redis/scripts.ts';
import { frame, parseReply, WireReplyError } from '../../src/backends/redis/wire.ts';
import { freePort, type RedisServer, startRedisServer } from '../../src/chaos/servers.ts';
import type { CheckpointRead, LeaseBackend } from '../../src/index.ts';
import { codeOf, uniqueNamespace } from '../support/backends.ts';
import { startProxy } from '../support/proxy.ts';

const LIVE = 30_000;
const PASSWORD = 'wire-secret';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` every 20 ms; fails after 5 s, saying what did not happen. */
async function until(what: string, cond: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(20);
  }
}

/** Every reply in `bytes`, parsed in turn; throws when the bytes stop short of a whole reply. */
function parseAll(bytes: Buffer, buffers = false): unknown[] {
  const out: unknown[] = [];
  let pos = 0;
  while (pos < bytes.length) {
    const r = parseReply(bytes, pos, buffers);
    if (typeof r === 'symbol') throw new Error(`incomplete at ${pos}`);
    out.push(r.value);
    pos = r.end;
  }
  return out;
}

describe('wire replies and frames (no I/O)', () => {
  const stream = Buffer.from(
    [
      '$5\r\nhello\r\n',
      '$-1\r\n',
      '+OK\r\n',
      ':-42\r\n',
      ':1700000000123\r\n',
      '*3\r\n$6\r\nFENCED\r\n$-1\r\n$4\r\nds-1\r\n',
      '*2\r\n*1\r\n:7\r\n*-1\r\n',
      '-NOSCRIPT No matching script. Please use EVAL.\r\n',
      '*2\r\n-ERR inner\r\n$0\r\n\r\n',
      // A bulk holding CR LF and a multi-byte character (byte length 9, not 7).
      '$9\r\na\r\nbé\r\nc\r\n',
    ].join(''),
  );

  it('parses every RESP2 reply type as ioredis returns it', () => {
    const [bulk, nil, ok, neg, big, fenced, nested, err, withErr, crlf] = parseAll(stream);
    expect([bulk, nil, ok, neg, big]).toEqual(['hello', null, 'OK', -42, 1700000000123]);
    expect(fenced).toEqual(['FENCED', null, 'ds-1']);
    expect(nested).toEqual([[7], null]);
    expect(err).toBeInstanceOf(WireReplyError);
    expect((err as Error).name).toBe('ReplyError');
    expect((err as Error).message).toBe('NOSCRIPT No matching script. Please use EVAL.');
    expect((withErr as unknown[])[0]).toBeInstanceOf(WireReplyError);
    expect((withErr as unknown[])[1]).toBe('');
    expect(crlf).toBe('a\r\nbé\r\nc');
  });

  it('returns Buffers with the exact bytes when asked', () => {
    const state = Buffer.from([0, 13, 10, 255, 36, 42]);
    const bytes = Buffer.concat([Buffer.from('*2\r\n$1\r\n1\r\n$6\r\n'), state, Buffer.from('\r\n')]);
    const [reply] = parseAll(bytes, true) as [Buffer[]];
    expect(Buffer.isBuffer(reply[0])).toBe(true);
    expect(reply[0]!.toString()).toBe('1');
    expect(reply[1]).toEqual(state);
  });

  it('answers "incomplete" at every byte where a reply is cut, and nothing else', () => {
    // Replies end at these offsets; a cut anywhere else must not produce a reply.
    const ends: number[] = [];
    let pos = 0;
    while (pos < stream.length) {
      const r = parseReply(stream, pos, false);
      if (typeof r === 'symbol') throw new Error('whole stream incomplete');
      pos = r.end;
      ends.push(pos);
    }
    let start = 0;
    for (const end of ends) {
      for (let cut = start; cut < end; cut++) {
        expect(typeof parseReply(stream.subarray(0, cut), start, false)).toBe('symbol');
      }
      start = end;
    }
  });

  it('refuses a stream that is not RESP', () => {
    expect(() => parseReply(Buffer.from('HTTP/1.1 400\r\n'), 0, false)).toThrow(/unexpected byte 72/);
  });

  it('frames a command with strings, numbers and a Buffer written as it is', () => {
    const state = Buffer.from([0, 13, 10]);
    const parts = frame('EVALSHA', ['ab', 3, state, 'é']);
    expect(Array.isArray(parts)).toBe(true);
    expect((parts as unknown[]).includes(state)).toBe(true);
    const bytes = Buffer.concat((parts as Array<string | Buffer>).map((p) => Buffer.from(p)));
    expect(bytes).toEqual(
      Buffer.concat([
        Buffer.from('*5\r\n$7\r\nEVALSHA\r\n$2\r\nab\r\n$1\r\n3\r\n$3\r\n'),
        state,
        Buffer.from('\r\n$2\r\né\r\n'),
      ]),
    );
    expect(frame('PING', [])).toBe('*1\r\n$4\r\nPING\r\n');
  });
});

interface Conn {
  id: string;
  name: string;
  cmd: string;
  db: string;
}

describe('the lease calls connection on a private redis-server (password, database 2)', () => {
  let server: RedisServer;
  let admin: Redis;
  beforeAll(async () => {
    server = await startRedisServer({ args: ['--requirepass', PASSWORD] });
    admin = new Redis({ port: server.port, host: '127.0.0.1', password: PASSWORD });
  }, 30_000);
  afterAll(async () => {
    admin?.disconnect();
    await server?.stop();
  });

  const url = (port = server.port): string => `redis://:${PASSWORD}@127.0.0.1:${port}/2`;

  async function conns(prefix: string): Promise<Conn[]> {
    const list = String(await admin.call('CLIENT', 'LIST', 'TYPE', 'normal'));
    return list
      .split('\n')
      .map((line) => Object.fromEntries(line.split(' ').map((kv) => kv.split('=', 2))) as unknown as Conn)
      .filter((c) => c.name === `worklease:${prefix}`);
  }

  /** Opens a backend and makes its first lease call, then waits until its own connection is up. */
  async function opened(
    extra: { callTimeoutMs?: number; maxStateBytes?: number } = {},
    at = url(),
  ): Promise<{ b: LeaseBackend; prefix: string }> {
    const prefix = uniqueNamespace('wire');
    const b = await openRedis(at, { keyPrefix: prefix, callTimeoutMs: 2000, ...extra });
    await b.acquire('first', 'h', LIVE);
    await until('the lease calls connection comes up', async () => (await conns(prefix)).length === 2);
    return { b, prefix };
  }

  it('sends lease calls on their own logged-in connection once it is up; reads stay on ioredis', async () => {
    const { b, prefix } = await opened();
    try {
      const rec = await b.acquire('w', 'h', LIVE);
      await b.renew(rec, LIVE);
      await b.admin.get('w');
      const cs = await conns(prefix);
      expect(cs).toHaveLength(2);
      // Both logged in and selected database 2; the last command of each tells them apart.
      expect(cs.map((c) => c.db)).toEqual(['2', '2']);
      expect(cs.map((c) => c.cmd).sort()).toEqual(['evalsha', 'hget']);
      await admin.select(2);
      expect((await admin.keys(`${prefix}:*`)).length).toBeGreaterThan(0);
      await admin.select(0);
      expect(await admin.keys(`${prefix}:*`)).toEqual([]);
      // NOSCRIPT on this connection: the script was not run; it is sent as EVAL (through ioredis).
      await b.checkpoint(rec, Buffer.from('kept'), LIVE);
      await admin.script('FLUSH');
      expect((await b.renew(rec, LIVE)).fencingToken).toBe(rec.fencingToken);
      await admin.script('FLUSH');
      expect(Buffer.from((await b.readCheckpoint(rec)).state!).toString()).toBe('kept');
    } finally {
      await b.close();
    }
  });

  it('answers many calls in flight, of mixed reply kinds, each with its own reply', async () => {
    const { b } = await opened();
    try {
      const recs = await Promise.all(Array.from({ length: 64 }, (_, i) => b.acquire(`m${i}`, 'h', LIVE)));
      // Odd items get states large enough to go as a transaction (several replies for one call).
      const state = (i: number, round: number): Buffer => {
        const text = Buffer.from(`state-${i}-${round}`);
        return i % 2 === 0 ? text : Buffer.concat([text, Buffer.alloc(STAGED_MIN_BYTES, i)]);
      };
      await Promise.all(recs.map((r, i) => b.checkpoint(r, state(i, 0), LIVE)));
      for (let round = 1; round <= 3; round++) {
        // One connection answers in order: each read sees the state written in the round before.
        const out = await Promise.all(
          recs.flatMap((r, i) => [
            b.renew(r, LIVE),
            b.readCheckpoint(r),
            codeOf(b.release({ ...r, fencingToken: 1n })),
            b.checkpoint(r, state(i, round), LIVE),
          ]),
        );
        recs.forEach((r, i) => {
          expect((out[4 * i] as { fencingToken: bigint }).fencingToken).toBe(r.fencingToken);
          expect(Buffer.from((out[4 * i + 1] as CheckpointRead).state!)).toEqual(state(i, round - 1));
          expect(out[4 * i + 2]).toBe('FENCED');
          expect(out[4 * i + 3]).toEqual({});
        });
      }
    } finally {
      await b.close();
    }
  });

  it('reads back a state of several MiB whole (a reply in many socket chunks)', async () => {
    const { b } = await opened({ maxStateBytes: 8 * 1024 * 1024 });
    try {
      const rec = await b.acquire('big', 'h', LIVE);
      const state = Buffer.alloc(5 * 1024 * 1024 + 3);
      for (let i = 0; i < state.length; i++) state[i] = (i * 7919) & 0xff;
      await b.checkpoint(rec, state, LIVE);
      const [one, two] = await Promise.all([b.readCheckpoint(rec), b.readCheckpoint(rec)]);
      expect(Buffer.from(one.state!).equals(state)).toBe(true);
      expect(Buffer.from(two.state!).equals(state)).toBe(true);
    } finally {
      await b.close();
    }
  });

  it('a call in flight when the connection is killed fails BACKEND_UNAVAILABLE, is never re-sent; calls go on meanwhile', async () => {
    const { b, prefix } = await opened();
    try {
      const rec = await b.acquire('k', 'h', LIVE);
      await b.renew(rec, LIVE);
      await b.admin.get('k');
      const wire = (await conns(prefix)).find((c) => c.cmd === 'evalsha');
      expect(wire).toBeDefined();
      await admin.call('CLIENT', 'PAUSE', '1000', 'WRITE');
      const pending = codeOf(b.acquire('in-flight', 'h1', LIVE));
      await sleep(200);
      expect(Number(await admin.call('CLIENT', 'KILL', 'ID', wire!.id))).toBe(1);
      expect(await pending).toBe('BACKEND_UNAVAILABLE');
      await admin.call('CLIENT', 'UNPAUSE');
      // While it reconnects, lease calls go through ioredis.
      const again = await b.renew(rec, LIVE);
      expect(again.fencingToken).toBe(rec.fencingToken);
      // Had the acquire been re-sent, the item would be held now.
      expect(await b.admin.get('in-flight')).toBeNull();
      await until('the lease calls connection comes back', async () =>
        (await conns(prefix)).some((c) => c.id !== wire!.id && c.cmd === 'client|setname'),
      );
      const taken = await b.acquire('in-flight', 'h1', LIVE);
      expect(await b.admin.get('in-flight')).toMatchObject({ fencingToken: taken.fencingToken, version: 1n });
    } finally {
      await admin.call('CLIENT', 'UNPAUSE').catch(() => {});
      await b.close();
    }
  });

  it('a reply that comes after its deadline is dropped, and the next calls get their own', async () => {
    const proxy = await startProxy('127.0.0.1', server.port);
    const { b, prefix } = await opened({ callTimeoutMs: 500 }, url(proxy.port));
    try {
      const rec = await b.acquire('late', 'h', LIVE);
      await b.checkpoint(rec, Buffer.from('before'), LIVE);
      proxy.blackhole();
      const started = Date.now();
      const codes = await Promise.all([codeOf(b.renew(rec, LIVE)), codeOf(b.readCheckpoint(rec))]);
      expect(codes).toEqual(['BACKEND_UNAVAILABLE', 'BACKEND_UNAVAILABLE']);
      expect(Date.now() - started).toBeLessThan(1500);
      expect(await conns(prefix)).toHaveLength(2);
      // The held frames now reach the server, and their replies come back to calls that gave up.
      proxy.restore();
      await b.checkpoint(rec, Buffer.from('after'), LIVE);
      const read = await b.readCheckpoint(rec);
      expect(Buffer.from(read.state!).toString()).toBe('after');
      const renewed = await b.renew(rec, LIVE);
      expect(Number.isNaN(renewed.expiresAt.getTime())).toBe(false);
      expect(await codeOf(b.renew({ ...rec, fencingToken: rec.fencingToken + 1n }, LIVE))).toBe('FENCED');
    } finally {
      await b.close();
      await proxy.close();
    }
  });

  it('works for a user whose ACL refuses CLIENT SETNAME, and falls back to ioredis while its own login fails', async () => {
    await admin.call('ACL', 'SETUSER', 'limited', 'on', '>pw-1', '~*', '&*', '+@all', '-client');
    const userConns = async (): Promise<Conn[]> =>
      String(await admin.call('CLIENT', 'LIST', 'TYPE', 'normal'))
        .split('\n')
        .filter((line) => line.includes(' user=limited '))
        .map((line) => Object.fromEntries(line.split(' ').map((kv) => kv.split('=', 2))) as unknown as Conn);
    const b = await openRedis(`redis://limited:pw-1@127.0.0.1:${server.port}/2`, {
      keyPrefix: uniqueNamespace('acl'),
      callTimeoutMs: 2000,
    });
    try {
      const rec = await b.acquire('acl', 'h', LIVE);
      await until('the lease calls connection comes up', async () => (await userConns()).length === 2);
      await b.renew(rec, LIVE);
      await b.admin.get('acl');
      const cs = await userConns();
      expect(cs.map((c) => c.name)).toEqual(['', '']);
      expect(cs.map((c) => c.cmd).sort()).toEqual(['evalsha', 'hget']);
      // The password changes: the ioredis connection stays logged in, the killed one cannot log in again.
      await admin.call('ACL', 'SETUSER', 'limited', 'resetpass', '>pw-2');
      await admin.call('CLIENT', 'KILL', 'ID', cs.find((c) => c.cmd === 'evalsha')!.id);
      // A call written before the client saw the close may have run: BACKEND_UNAVAILABLE, as with ioredis.
      expect(['OK', 'BACKEND_UNAVAILABLE']).toContain(await codeOf(b.renew(rec, LIVE)));
      for (let i = 0; i < 10; i++) {
        expect((await b.renew(rec, LIVE)).fencingToken).toBe(rec.fencingToken);
        await sleep(50);
      }
      expect((await userConns()).map((c) => c.cmd)).toEqual(['evalsha']);
    } finally {
      await b.close();
      await admin.call('ACL', 'DELUSER', 'limited');
    }
  });

  it('close leaves no connection of the backend open', async () => {
    const { b, prefix } = await opened();
    await b.close();
    await until('both connections are closed', async () => (await conns(prefix)).length === 0);
  });
});

describe('the lease calls connection over TLS (private redis-server with a test certificate)', () => {
  let server: RedisServer;
  let certs: string;
  let tlsPort: number;
  beforeAll(async () => {
    // A certificate for localhost, made for this test in a folder of its own.
    certs = mkdtempSync(join(tmpdir(), 'worklease-tls-'));
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

  it('logs in over TLS and carries the lease calls; reads stay on ioredis', async () => {
    // A child process: Node trusts a certificate for rediss:// only through NODE_EXTRA_CA_CERTS.
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        '--import',
        'tsx',
        'test/backends/wire-tls-child.ts',
        `rediss://localhost:${tlsPort}`,
        String(server.port),
        uniqueNamespace('tls'),
      ],
      { env: { ...process.env, NODE_EXTRA_CA_CERTS: join(certs, 'cert.pem') }, timeout: 30_000 },
    );
    // The child's last lease call, readCheckpoint, is one transaction (MULTI … EXEC) on that connection.
    expect(JSON.parse(stdout)).toEqual({ cmds: ['exec', 'hget'], token: true, state: 'over tls' });
  }, 40_000);
});
