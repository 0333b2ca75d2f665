/**
 * The holder layer against real servers: claim, save, release, the `expired`
 * flag, heartbeat, and the three ways a holder loses its lease — fenced by a
 * force-release, frozen past its ttl, and a renew hanging on a server that
 * stopped answering — plus withLease on success, failure and loss.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import {
  claim,
  FencedError,
  InvalidArgumentError,
  type LeaseBackend,
  LeaseHeldError,
  LeaseLostError,
  openBackend,
  withLease,
} from '../../src/index.ts';
import { type BackendTarget, isolated, PG_URL, REDIS_URL, uniqueNamespace } from '../support/backends.ts';
import { dropConnections, dropNamespace } from '../support/faults.ts';
import { startProxy } from '../support/proxy.ts';
import { spyBackend } from './spy.ts';

const targets: BackendTarget[] = [
  { kind: 'postgres', url: PG_URL },
  { kind: 'redis', url: REDIS_URL },
];

const text = (s: string): Uint8Array => new TextEncoder().encode(s);
const str = (b: Uint8Array | null): string | null => (b === null ? null : new TextDecoder().decode(b));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** Blocks this thread's event loop, like a long GC pause or a suspended VM, without burning CPU. */
const freeze = (ms: number): void => {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
};

describe.each(targets)('holder on $kind', (target) => {
  const namespace = uniqueNamespace('holder');
  const opened: LeaseBackend[] = [];
  const open = async (url = target.url, extra = {}): Promise<LeaseBackend> => {
    const b = await openBackend(url, isolated(target, namespace, extra));
    opened.push(b);
    return b;
  };
  let seq = 0;
  const item = (): string => `item-${++seq}`;

  afterAll(async () => {
    for (const b of opened) await b.close().catch(() => {});
    await dropNamespace(target, namespace);
  });

  it('claims a fresh item, saves, releases; the next holder resumes cleanly', async () => {
    const backend = await open();
    const id = item();
    const a = await claim(backend, id, 'holder-a', { ttlMs: 5000, stepId: 'step-1' });
    expect(typeof a.token).toBe('bigint');
    expect(a.workId).toBe(id);
    expect(a.holderId).toBe('holder-a');
    expect(a.stepId).toBe('step-1');
    expect(a.expired).toBe(false);
    expect(a.state).toBeNull();
    expect((await backend.admin.get(id))?.stepId).toBe('step-1');
    await expect(claim(backend, id, 'holder-b', { ttlMs: 5000 })).rejects.toBeInstanceOf(LeaseHeldError);
    await a.save(text('one'));
    expect(str(a.state)).toBe('one');
    await a.renew();
    await a.release();
    await expect(a.save(text('two'))).rejects.toBeInstanceOf(LeaseLostError);

    const b = await claim(backend, id, 'holder-b', { ttlMs: 5000 });
    expect(b.token > a.token).toBe(true);
    expect(b.expired).toBe(false);
    expect(str(b.state)).toBe('one');
    await b.release();
  });

  it('sets expired when it takes over a lease that ran out, and after a force-release', async () => {
    const backend = await open();
    const id = item();
    const a = await claim(backend, id, 'holder-a', { ttlMs: 300 });
    await a.save(text('half done'));
    await sleep(400);
    expect(a.lost).toBe(true);
    const b = await claim(backend, id, 'holder-b', { ttlMs: 5000 });
    expect(b.expired).toBe(true);
    expect(str(b.state)).toBe('half done');

    await backend.admin.forceRelease(id, { expectedToken: b.token, operator: 'test', reason: 'holder test' });
    const c = await claim(backend, id, 'holder-c', { ttlMs: 5000 });
    expect(c.expired).toBe(true);
    await c.release();
    const d = await claim(backend, id, 'holder-d', { ttlMs: 5000 });
    expect(d.expired).toBe(false);
    await d.release();
  });

  it('loses the lease when force-released during heartbeat: onLost once, signal aborted, no more calls', async () => {
    const spy = spyBackend(await open());
    const id = item();
    const h = await claim(spy.backend, id, 'holder-a', { ttlMs: 3000 });
    const onLost = vi.fn();
    const onRenewed = vi.fn();
    h.heartbeat({ intervalMs: 50, onLost, onRenewed });
    await vi.waitFor(() => expect(onRenewed).toHaveBeenCalled(), { timeout: 5000 });
    await spy.backend.admin.forceRelease(id, {
      expectedToken: h.token,
      operator: 'test',
      reason: 'holder test',
    });
    await vi.waitFor(() => expect(onLost).toHaveBeenCalled(), { timeout: 5000 });
    const err = onLost.mock.calls[0]?.[0] as LeaseLostError;
    expect(err).toBeInstanceOf(LeaseLostError);
    expect(err.code).toBe('LEASE_LOST');
    expect(err.cause).toBeInstanceOf(FencedError);
    expect(h.lost).toBe(true);
    expect(h.signal.aborted).toBe(true);
    expect(h.signal.reason).toBe(err);

    const before = { ...spy.calls };
    await expect(h.save(text('x'))).rejects.toBe(err);
    await expect(h.renew()).rejects.toBe(err);
    await expect(h.release()).rejects.toBe(err);
    expect(() => h.heartbeat()).toThrow(LeaseLostError);
    await sleep(200);
    expect(spy.calls).toEqual(before);
    expect(onLost).toHaveBeenCalledTimes(1);
  });

  it('declares itself lost after the process was frozen past its ttl, and sends nothing', async () => {
    const spy = spyBackend(await open());
    const id = item();
    const h = await claim(spy.backend, id, 'holder-a', { ttlMs: 400 });
    const onLost = vi.fn();
    h.heartbeat({ intervalMs: 100, onLost });
    await sleep(150);
    freeze(700);
    // The first thing the holder does after the freeze: it must not reach the backend.
    const checkpoints = spy.calls.checkpoint ?? 0;
    await expect(h.save(text('too late'))).rejects.toBeInstanceOf(LeaseLostError);
    expect(spy.calls.checkpoint ?? 0).toBe(checkpoints);
    expect(h.lost).toBe(true);
    const err = h.signal.reason as LeaseLostError;
    expect(err.details?.reason).toBe('deadline');
    await sleep(150);
    expect(onLost).toHaveBeenCalledTimes(1);
    // The server let it run out too: someone else can take over, and sees it was not a clean handoff.
    const b = await claim(spy.backend, id, 'holder-b', { ttlMs: 5000 });
    expect(b.expired).toBe(true);
    await b.release();
  });

  it('declares itself lost while a renew hangs on a server that stopped answering, before the server expires it', async () => {
    const [host, port] = target.kind === 'postgres' ? ['127.0.0.1', 5432] : ['127.0.0.1', 6379];
    const proxy = await startProxy(host, port);
    try {
      const spy = spyBackend(await open(proxy.rewrite(target.url), { callTimeoutMs: 30_000 }));
      const direct = await open();
      const id = item();
      // A wide margin so that "before the server expires it" holds even on a loaded machine.
      const h = await claim(spy.backend, id, 'holder-a', { ttlMs: 3000, safetyMarginMs: 1000 });
      let lostAt: { renewsInFlight: number; liveOnServer: Promise<boolean> } | undefined;
      const onLost = vi.fn((_err: LeaseLostError) => {
        lostAt = {
          renewsInFlight: spy.inFlight('renew'),
          liveOnServer: Promise.all([direct.admin.get(id), direct.admin.serverTime()]).then(
            ([info, t]) => info !== null && info.expiresAt > t,
          ),
        };
      });
      h.heartbeat({ intervalMs: 200, onLost });
      await sleep(300);
      proxy.blackhole();
      await vi.waitFor(() => expect(onLost).toHaveBeenCalled(), { timeout: 10_000, interval: 20 });
      expect(lostAt?.renewsInFlight).toBe(1);
      expect(await lostAt?.liveOnServer).toBe(true);
      const err = onLost.mock.calls[0]?.[0] as LeaseLostError;
      expect(err.details?.reason).toBe('deadline');
      await expect(h.save(text('x'))).rejects.toBe(err);
      expect(spy.calls.checkpoint ?? 0).toBe(0);
      expect(onLost).toHaveBeenCalledTimes(1);
    } finally {
      proxy.restore();
      await proxy.close();
    }
  });

  it('rides out dropped connections: transient errors are retried inside the deadline', async () => {
    const backend = await open();
    const id = item();
    const h = await claim(backend, id, 'holder-a', { ttlMs: 3000 });
    const onLost = vi.fn();
    const onRenewed = vi.fn();
    h.heartbeat({ intervalMs: 100, onLost, onRenewed });
    for (let i = 0; i < 3; i++) {
      await dropConnections(target, namespace);
      await sleep(150);
    }
    const renewed = onRenewed.mock.calls.length;
    await vi.waitFor(() => expect(onRenewed.mock.calls.length).toBeGreaterThan(renewed), { timeout: 5000 });
    await h.save(text('still mine'));
    expect(onLost).not.toHaveBeenCalled();
    await h.release();
  });

  it('a release racing a heartbeat renewal is neither reported as a loss nor refused', async () => {
    const backend = await open();
    const onLost = vi.fn();
    for (let i = 0; i < 15; i++) {
      const id = item();
      const h = await claim(backend, id, 'holder-a', { ttlMs: 2000 });
      h.heartbeat({ intervalMs: 1, onLost });
      await sleep(i % 4);
      await h.release();
      expect((await backend.admin.get(id))?.ended).toBe('released');
    }
    await sleep(50);
    expect(onLost).not.toHaveBeenCalled();
  });

  it('a renewal refused by the release it raced, its reply first, is no loss: the release decides', async () => {
    // The order the race test above hits only sometimes, forced: a renewal is in flight when
    // release() starts, reaches the server after the release committed (so it is refused), and
    // its refusal comes back before the release's reply does. The server and its answers are real.
    const backend = await open();
    let gate = false;
    let renewEntered!: () => void;
    const entered = new Promise<void>((r) => {
      renewEntered = r;
    });
    let committed!: () => void;
    const releaseCommitted = new Promise<void>((r) => {
      committed = r;
    });
    let refused!: () => void;
    const renewRefused = new Promise<void>((r) => {
      refused = r;
    });
    const raced: LeaseBackend = {
      ...spyBackend(backend).backend,
      renew: async (rec, ttl) => {
        if (!gate) return backend.renew(rec, ttl);
        renewEntered();
        await releaseCommitted;
        try {
          return await backend.renew(rec, ttl);
        } finally {
          refused();
        }
      },
      release: async (rec) => {
        await backend.release(rec);
        committed();
        await renewRefused;
      },
    };
    const onLost = vi.fn();
    const id = item();
    const h = await claim(raced, id, 'holder-a', { ttlMs: 2000 });
    gate = true;
    h.heartbeat({ intervalMs: 5, onLost });
    await entered;
    await h.release();
    expect((await backend.admin.get(id))?.ended).toBe('released');
    await sleep(20);
    expect(onLost).not.toHaveBeenCalled();
  });

  it('withLease releases cleanly on success and returns the result', async () => {
    const backend = await open();
    const id = item();
    const result = await withLease(backend, id, 'holder-a', { ttlMs: 3000, stepId: 's1' }, async (holder) => {
      expect(holder.signal.aborted).toBe(false);
      await holder.save(text('done'));
      return 42;
    });
    expect(result).toBe(42);
    expect((await backend.admin.get(id))?.ended).toBe('released');
    const next = await claim(backend, id, 'holder-b', { ttlMs: 3000 });
    expect(next.expired).toBe(false);
    expect(str(next.state)).toBe('done');
    await next.release();
  });

  it('withLease on failure rethrows and leaves the lease to run out (not a clean handoff)', async () => {
    const backend = await open();
    const id = item();
    const boom = new Error('work failed');
    let seen: AbortSignal | undefined;
    await expect(
      withLease(backend, id, 'holder-a', { ttlMs: 500, intervalMs: 100 }, async (holder) => {
        seen = holder.signal;
        await holder.save(text('partial'));
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(seen?.aborted).toBe(true);
    const info = await backend.admin.get(id);
    expect(info?.ended).toBeNull();
    await expect(claim(backend, id, 'holder-b', { ttlMs: 3000 })).rejects.toBeInstanceOf(LeaseHeldError);
    await sleep(600);
    const next = await claim(backend, id, 'holder-b', { ttlMs: 3000 });
    expect(next.expired).toBe(true);
    expect(str(next.state)).toBe('partial');
    await next.release();
  });

  it('withLease on loss aborts the work and rejects with LeaseLostError', async () => {
    const backend = await open();
    const id = item();
    const onLost = vi.fn();
    const run = withLease(
      backend,
      id,
      'holder-a',
      { ttlMs: 3000, intervalMs: 50, onLost },
      async (holder) => {
        await backend.admin.forceRelease(id, {
          expectedToken: holder.token,
          operator: 'test',
          reason: 'holder test',
        });
        await new Promise((_, reject) => {
          holder.signal.addEventListener('abort', () => reject(holder.signal.reason), { once: true });
        });
      },
    );
    await expect(run).rejects.toBeInstanceOf(LeaseLostError);
    expect(onLost).toHaveBeenCalledTimes(1);
    // Force-released, not released by the holder: the next holder knows.
    const next = await claim(backend, id, 'holder-b', { ttlMs: 3000 });
    expect(next.expired).toBe(true);
    await next.release();
  });

  it('refuses bad options before any I/O', async () => {
    const spy = spyBackend(await open());
    const id = item();
    const bad: unknown[] = [
      { ttlMs: 0 },
      { ttlMs: Number.NaN },
      { ttlMs: 1000, safetyMarginMs: 600 },
      { ttlMs: 1000, safetyMarginMs: -1 },
      { ttlMs: 1000, stepId: '' },
      { ttl: 1000 },
    ];
    for (const options of bad) {
      await expect(claim(spy.backend, id, 'h', options as never)).rejects.toBeInstanceOf(
        InvalidArgumentError,
      );
    }
    await expect(claim(spy.backend, '', 'h')).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(
      withLease(spy.backend, id, 'h', { ttlMs: 1000, intervalMs: 600 }, async () => 1),
    ).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(spy.calls.acquire ?? 0).toBe(0);

    const h = await claim(spy.backend, id, 'h', { ttlMs: 1000 });
    expect(() => h.heartbeat({ intervalMs: 501 })).toThrow(InvalidArgumentError);
    expect(() => h.heartbeat({ intervalMs: 0 })).toThrow(InvalidArgumentError);
    const stop = h.heartbeat({ intervalMs: 300 });
    expect(() => h.heartbeat({ intervalMs: 300 })).toThrow(InvalidArgumentError);
    stop();
    await expect(h.save('text' as never)).rejects.toBeInstanceOf(InvalidArgumentError);
    await h.release();
  });
});
