/**
 * No lease that nobody holds, on Redis: an acquire whose caller gave up (the call timed out while
 * the server was stalled) must not grant a lease when the server comes back. A private
 * redis-server (its own directory and loopback port) is stopped with SIGSTOP while acquires are
 * sent; after SIGCONT, every item whose acquire failed on the client is acquirable by another
 * holder at once (scripts.ts, acquire: the deadline in the server's clock).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, startRedisServer } from '../../src/chaos/servers.ts';
import type { LeaseBackend } from '../../src/index.ts';
import { openBackend } from '../../src/index.ts';

const ITEMS = 8;
let server: RedisServer;
const opened: LeaseBackend[] = [];

beforeAll(async () => {
  server = await startRedisServer();
}, 60_000);

afterAll(async () => {
  for (const b of opened) await b.close().catch(() => {});
  await server?.stop();
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const outcome = (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => 'OK',
    (e: { code?: string; message?: string }) => `${e.code ?? ''}: ${e.message ?? String(e)}`,
  );

describe("an acquire past its caller's deadline (Redis stalled by SIGSTOP)", () => {
  it('grants nothing once the server resumes: another holder takes every such item at once', {
    timeout: 60_000,
  }, async () => {
    const a = await openBackend(server.url, { keyPrefix: 'deadline', callTimeoutMs: 1000 });
    opened.push(a);
    const b = await openBackend(server.url, { keyPrefix: 'deadline', migrate: false });
    opened.push(b);
    const items = Array.from({ length: ITEMS }, (_, i) => `stalled-${i}`);
    // Warm: both backends' lease call connections up, and every bucket's clock read, before the stall.
    for (const backend of [a, b]) {
      await Promise.all(
        items.map(async (w) => backend.release(await backend.acquire(`${w}-warm`, 'warm', 60_000))),
      );
    }
    server.pause();
    let outcomes: string[];
    try {
      const started = performance.now();
      // A step id too: the script's other argument count (scripts.ts, acquire).
      outcomes = await Promise.all(
        items.map((w, i) =>
          outcome(a.acquire(w, 'gave-up', 60_000, i % 2 === 0 ? { stepId: 'step-1' } : {})),
        ),
      );
      expect(performance.now() - started).toBeLessThan(10_000);
      // The server stays stalled well past the callers' deadlines.
      await sleep(1500);
    } finally {
      server.resume();
    }
    expect(outcomes.map((o) => o.split(':')[0])).toEqual(items.map(() => 'BACKEND_UNAVAILABLE'));
    // The stalled scripts reach the server now; give it a moment to run them.
    await sleep(500);
    const taken = await Promise.all(items.map((w) => outcome(b.acquire(w, 'next', 60_000))));
    expect(taken).toEqual(items.map(() => 'OK'));
    for (const w of items) expect((await b.admin.get(w))?.holderId).toBe('next');
  });

  it('an acquire in time still takes the lease, with and without a step', {
    timeout: 30_000,
  }, async () => {
    const a = await openBackend(server.url, { keyPrefix: 'in-time', callTimeoutMs: 1000 });
    opened.push(a);
    const first = await a.acquire('plain', 'h', 60_000);
    const stepped = await a.acquire('stepped', 'h', 60_000, { stepId: 's-7' });
    expect((await a.admin.get('plain'))?.fencingToken).toBe(first.fencingToken);
    expect((await a.admin.get('stepped'))?.stepId).toBe('s-7');
    expect(stepped.fencingToken > 0n).toBe(true);
  });
});
