/**
 * `worklease serve` with a connection to a server that speaks garbage (a fake PostgreSQL that
 * answers the start-up with an authentication type no client knows): the console stays up, serves
 * its API, and shows that connection's error; the process neither crashes nor exits.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, start } from '../cli/support.ts';
import { type FakePostgres, startFakePostgres } from '../support/fake-pg.ts';

let fake: FakePostgres;
let proc: Running;
let port = 0;
const token = randomBytes(32).toString('hex');

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port: p } = s.address() as { port: number };
      s.close(() => resolve(p));
    });
  });
}

async function api(method: string): Promise<{ ok: boolean; result?: unknown }> {
  const res = await fetch(`http://127.0.0.1:${port}/api/call`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ method, params: {} }),
  });
  return (await res.json()) as { ok: boolean; result?: unknown };
}

beforeAll(async () => {
  fake = await startFakePostgres('unknown-auth');
  proc = start(['serve', '--port', String(await freePort()), '--connect', `${fake.url}?callTimeoutMs=2000`], {
    WORKLEASE_TOKEN: token,
  });
  port = Number((await proc.waitFor(/open: https?:\/\/[^\s/]+:(\d+)\//, 'stdout', 60_000))[1]);
}, 90_000);

afterAll(async () => {
  await proc?.stop();
  await fake?.close();
});

describe('serve with a connection to a server that speaks garbage', () => {
  it("stays up and shows the connection's error", { timeout: 60_000 }, async () => {
    const deadline = Date.now() + 30_000;
    let list: Array<{ state: string; error: { code: string; message: string } | null }> = [];
    for (;;) {
      list = (await api('connections.list')).result as typeof list;
      if (list[0]?.error !== null && list[0]?.error !== undefined) break;
      if (Date.now() > deadline) throw new Error(`no error shown: ${JSON.stringify(list)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(list[0]!.error).toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
    expect(list[0]!.error!.message).toContain(`127.0.0.1:${fake.port}`);
    expect(list[0]!.error!.message).toMatch(/protocol violation/);
    // Still serving, several reconnect attempts later.
    await new Promise((r) => setTimeout(r, 3000));
    expect((await api('connections.list')).ok).toBe(true);
    expect(proc.child.exitCode).toBeNull();
    expect(proc.stderr()).not.toMatch(/Unknown authenticationOk|uncaught/i);
  });
});
