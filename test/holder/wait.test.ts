/**
 * Waiting acquire (`claim(…, { waitMs })`) on every backend: woken by the
 * backend when a lease is released or force-released, by its expiry when it
 * runs out, exactly one winner per handoff, and no lost wake-up — the safety
 * poll is set to an hour, so a wake-up that never came would hang the test.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  claim,
  InvalidArgumentError,
  type LeaseBackend,
  LeaseHeldError,
  openBackend,
  withLease,
} from '../../src/index.ts';
import { allTargets, isolated, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';

const HOUR = 3_600_000;
const text = (s: string): Uint8Array => new TextEncoder().encode(s);
const str = (b: Uint8Array | null): string => (b === null ? '' : new TextDecoder().decode(b));

describe.each(allTargets())('waiting acquire on $kind', (target) => {
  const namespace = uniqueNamespace('wait');
  let backend: LeaseBackend;
  let seq = 0;
  const item = (): string => `item-${++seq}`;

  beforeAll(async () => {
    backend = await openBackend(target.url, isolated(target, namespace));
  });
  afterAll(async () => {
    await backend?.close();
    await dropNamespace(target, namespace);
  });

  it('is woken by a release and starts with a clean handoff', async () => {
    const id = item();
    const a = await claim(backend, id, 'a', { ttlMs: 60_000 });
    await a.save(text('7'));
    const waiting = claim(backend, id, 'b', { ttlMs: 60_000, waitMs: 30_000, waitPollMs: HOUR });
    await new Promise((r) => setTimeout(r, 100));
    const released = performance.now();
    await a.release();
    const b = await waiting;
    expect(performance.now() - released).toBeLessThan(5000);
    expect(b.token > a.token).toBe(true);
    expect(b.expired).toBe(false);
    expect(str(b.state)).toBe('7');
    await b.release();
  });

  it('is woken by a force-release and by the expiry of a lease that ran out', async () => {
    const id = item();
    const a = await claim(backend, id, 'a', { ttlMs: 60_000 });
    const waiting = claim(backend, id, 'b', { ttlMs: 60_000, waitMs: 30_000, waitPollMs: HOUR });
    await new Promise((r) => setTimeout(r, 100));
    await backend.admin.forceRelease(id, { expectedToken: a.token, operator: 'op', reason: 'test' });
    const b = await waiting;
    expect(b.expired).toBe(true);
    await b.release();

    const id2 = item();
    const c = await claim(backend, id2, 'c', { ttlMs: 400 });
    const started = performance.now();
    // Nothing is written when a lease runs out: the waiter wakes at the reported expiresAt.
    const d = await claim(backend, id2, 'd', { ttlMs: 60_000, waitMs: 30_000, waitPollMs: HOUR });
    expect(performance.now() - started).toBeLessThan(5000);
    expect(d.token > c.token).toBe(true);
    expect(d.expired).toBe(true);
    await d.release();
  });

  it('rejects with LeaseHeldError when the wait runs out, and with the reason when aborted', async () => {
    const id = item();
    const a = await claim(backend, id, 'a', { ttlMs: 60_000 });
    await expect(claim(backend, id, 'b', { waitMs: 200 })).rejects.toBeInstanceOf(LeaseHeldError);
    const controller = new AbortController();
    const waiting = claim(backend, id, 'b', { waitMs: Number.POSITIVE_INFINITY, signal: controller.signal });
    setTimeout(() => controller.abort(new Error('shutting down')), 100);
    await expect(waiting).rejects.toThrow('shutting down');
    expect((await backend.admin.get(id))?.holderId).toBe('a');
    await a.release();
  });

  it('withLease waits too', async () => {
    const id = item();
    const a = await claim(backend, id, 'a', { ttlMs: 60_000 });
    setTimeout(() => void a.release(), 100);
    const token = await withLease(
      backend,
      id,
      'b',
      { ttlMs: 60_000, waitMs: 30_000, waitPollMs: HOUR },
      async (h) => {
        expect(h.expired).toBe(false);
        return h.token;
      },
    );
    expect(token > a.token).toBe(true);
    await expect(withLease(backend, id, 'b', { waitMs: -1 }, async () => 1)).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
  });

  it('refuses bad wait options before any I/O', async () => {
    const id = item();
    for (const bad of [{ waitMs: -1 }, { waitMs: Number.NaN }, { waitPollMs: 1 }, { signal: {} }]) {
      await expect(claim(backend, id, 'a', bad as never)).rejects.toBeInstanceOf(InvalidArgumentError);
    }
    expect(await backend.admin.get(id)).toBeNull();
  });

  it('50 waiters, 200 handoffs: exactly one winner each, every handoff taken, tokens strictly increase', async () => {
    const id = item();
    const HANDOFFS = 200;
    const WAITERS = 50;
    const controller = new AbortController();
    let handoffs = 0;
    let releasedAt = 0;
    const latencies: number[] = [];
    const tokens: bigint[] = [];
    let holding = 0;
    let maxHolding = 0;
    const waiter = async (n: number): Promise<void> => {
      while (handoffs < HANDOFFS) {
        let h: Awaited<ReturnType<typeof claim>>;
        try {
          h = await claim(backend, id, `w${n}`, {
            ttlMs: 60_000,
            waitMs: Number.POSITIVE_INFINITY,
            waitPollMs: HOUR,
            signal: controller.signal,
          });
        } catch (err) {
          if (controller.signal.aborted) return;
          throw err;
        }
        if (handoffs >= HANDOFFS) {
          await h.release();
          return;
        }
        holding++;
        maxHolding = Math.max(maxHolding, holding);
        if (releasedAt > 0) latencies.push(performance.now() - releasedAt);
        tokens.push(h.token);
        // Every taker resumes from the previous one's checkpoint, after a clean handoff.
        expect(h.expired).toBe(false);
        const count = Number(str(h.state) || '0');
        expect(count).toBe(handoffs);
        handoffs++;
        await h.save(text(String(count + 1)));
        holding--;
        releasedAt = performance.now();
        if (handoffs >= HANDOFFS) controller.abort();
        await h.release();
      }
    };
    await Promise.all(Array.from({ length: WAITERS }, (_, n) => waiter(n)));
    expect(handoffs).toBe(HANDOFFS);
    expect(maxHolding).toBe(1);
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]! > tokens[i - 1]!).toBe(true);
    latencies.sort((x, y) => x - y);
    expect(latencies.length).toBe(HANDOFFS - 1);
    // With the poll at an hour, a lost wake-up would hang; this bounds what "woken" means here.
    expect(latencies.at(-1)!).toBeLessThan(10_000);
  }, 60_000);
});
