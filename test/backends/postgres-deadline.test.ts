/**
 * No lease that nobody holds: an acquire whose caller gave up (the call timed out while the server
 * was stalled) must not grant a lease when the server comes back. A private PostgreSQL (its own
 * directory and loopback port) is stopped with SIGSTOP while acquires are sent; after SIGCONT,
 * every item whose acquire failed on the client is acquirable by another holder at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PrivatePostgres, startPostgres } from '../../src/chaos/postgres-servers.ts';
import type { LeaseBackend } from '../../src/index.ts';
import { openBackend } from '../../src/index.ts';

const ITEMS = 6;
let server: PrivatePostgres;
const opened: LeaseBackend[] = [];

beforeAll(async () => {
  server = await startPostgres();
}, 120_000);

afterAll(async () => {
  for (const b of opened) await b.close().catch(() => {});
  server?.stop();
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe("an acquire past its caller's deadline (PostgreSQL stalled by SIGSTOP)", () => {
  it('grants nothing once the server resumes: another holder takes every such item at once', {
    timeout: 60_000,
  }, async () => {
    const a = await openBackend(server.url, { schema: 'deadline', callTimeoutMs: 1000, poolSize: ITEMS });
    opened.push(a);
    const b = await openBackend(server.url, { schema: 'deadline', migrate: false, poolSize: ITEMS });
    opened.push(b);
    const items = Array.from({ length: ITEMS }, (_, i) => `stalled-${i}`);
    // Warm: every lease call connection open, on both backends, before the stall.
    for (const backend of [a, b]) {
      await Promise.all(
        items.map(async (w) => backend.release(await backend.acquire(`${w}-warm`, 'warm', 60_000))),
      );
    }
    server.pause();
    let outcomes: string[];
    try {
      const started = performance.now();
      outcomes = await Promise.all(
        items.map((w) =>
          a.acquire(w, 'gave-up', 60_000).then(
            () => 'OK',
            (e: { code?: string }) => e.code ?? String(e),
          ),
        ),
      );
      expect(performance.now() - started).toBeLessThan(5000);
      // The server stays stalled well past the callers' deadlines.
      await sleep(1500);
    } finally {
      server.resume();
    }
    expect(outcomes).toEqual(items.map(() => 'BACKEND_UNAVAILABLE'));
    // The stalled statements reach the server now; give it a moment to run them.
    await sleep(500);
    const taken = await Promise.all(
      items.map((w) =>
        b.acquire(w, 'next', 60_000).then(
          () => 'OK',
          (e: { code?: string; message?: string }) => `${e.code}: ${e.message}`,
        ),
      ),
    );
    expect(taken).toEqual(items.map(() => 'OK'));
    for (const w of items) expect((await b.admin.get(w))?.holderId).toBe('next');
  });
});
