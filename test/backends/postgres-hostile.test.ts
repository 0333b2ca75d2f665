/**
 * A hostile or broken server never takes the process down: whatever a fake server on a loopback
 * port answers (an authentication type `pg` does not know, a SASL mechanism it does not speak, a
 * message with a bad length, a cut mid-message, garbage in reply to a statement), the call fails
 * with BACKEND_UNAVAILABLE naming the server, in the library and in the CLI, and nothing is thrown
 * past it (an uncaught exception would fail this file).
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { HotPool } from '../../src/backends/postgres/hot.ts';
import { openBackend } from '../../src/index.ts';
import { run } from '../cli/support.ts';
import { type FakePostgres, type FakeReply, startFakePostgres } from '../support/fake-pg.ts';

const fakes: FakePostgres[] = [];
afterAll(async () => {
  for (const f of fakes) await f.close();
});

async function fake(reply: FakeReply): Promise<FakePostgres> {
  const f = await startFakePostgres(reply);
  fakes.push(f);
  return f;
}

const CONNECT_REPLIES: FakeReply[] = ['unknown-auth', 'sasl-unknown-mechanism', 'bad-length', 'cut'];

describe('a server that answers the start-up with something the client cannot read', () => {
  for (const reply of CONNECT_REPLIES) {
    it(`${reply}: openBackend fails BACKEND_UNAVAILABLE naming the server, within the call timeout`, async () => {
      const f = await fake(reply);
      const started = performance.now();
      const err = await openBackend(f.url, { callTimeoutMs: 3000 }).then(
        (b) => b.close().then(() => null),
        (e: unknown) => e as { code: string; message: string },
      );
      expect(performance.now() - started).toBeLessThan(5000);
      expect(err).toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
      expect(err?.message).toContain(`127.0.0.1:${f.port}`);
    });
  }

  it('the CLI says so in one line and exits 5', { timeout: 60_000 }, async () => {
    const results = await Promise.all(
      CONNECT_REPLIES.map(async (reply) => ({
        reply,
        r: await run(['ls', (await fake(reply)).url, '--timeout', '3000']),
      })),
    );
    for (const { reply, r } of results) {
      expect(r.code, `${reply}: ${r.stderr}`).toBe(5);
      expect(r.stderr, reply).toMatch(/^worklease: BACKEND_UNAVAILABLE: .*127\.0\.0\.1:\d+/m);
      expect(r.stderr, reply).not.toMatch(/\n\s+at /);
    }
  });
});

describe('a server that speaks garbage after a normal start-up', () => {
  it('fails the lease call on that connection, not the process', async () => {
    const f = await fake('garbage-after-ready');
    const pool = new HotPool(
      () => new pg.Client({ connectionString: f.url }),
      1,
      3000,
      f.url,
      () => {},
      () => Promise.reject(new Error('not used')),
    );
    try {
      const err = await pool.query({ name: 'x', text: 'SELECT 1', hot: true }, [])!.then(
        () => null,
        (e: unknown) => e as { code: string; message: string },
      );
      expect(err).toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
      expect(err?.message).toMatch(/protocol violation/);
      expect(pool.open).toBe(0);
    } finally {
      pool.close();
    }
  });
});
