/**
 * A claim whose caller gave up (its signal aborted) while the acquire or the checkpoint read was
 * on its way: the claim rejects at once with the signal's reason, and the lease the backend grants
 * afterwards is handed back — released when it began cleanly (the item is free again at once,
 * with its checkpoint and clean handoff as the predecessor left them), left to run out when it
 * was a takeover (a release would hide from the next holder that the work before may be half
 * done). An election stopped while its claim is on its way stops at once and leads nothing.
 * And one signal shared by many waits carries one listener of the library at most.
 */
import { getEventListeners } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claim, type LeaseBackend, lead, openBackend } from '../../src/index.ts';
import { type BackendTarget, isolated, PG_URL, REDIS_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';

const targets: BackendTarget[] = [
  { kind: 'postgres', url: PG_URL },
  { kind: 'redis', url: REDIS_URL },
];

const text = (s: string): Uint8Array => new TextEncoder().encode(s);
const str = (b: Uint8Array | null): string | null => (b === null ? null : new TextDecoder().decode(b));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A gate that holds calls until opened. */
function gate(): { wait: Promise<void>; open(): void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => {
    open = r;
  });
  return { wait, open };
}

/**
 * The backend, with `acquire` or `readCheckpoint` held at a gate before it is sent: the call is on
 * its way when the caller aborts, and reaches the server only after. Counts the calls answered.
 */
function gated(
  inner: LeaseBackend,
  which: 'acquire' | 'readCheckpoint',
  g: { wait: Promise<void> },
): { backend: LeaseBackend; answered: () => number } {
  let answered = 0;
  const backend: LeaseBackend = {
    kind: inner.kind,
    url: inner.url,
    maxStateBytes: inner.maxStateBytes,
    acquire: async (...a) => {
      if (which === 'acquire') await g.wait;
      const r = await inner.acquire(...a);
      if (which === 'acquire') answered++;
      return r;
    },
    checkpoint: inner.checkpoint.bind(inner),
    renew: inner.renew.bind(inner),
    release: inner.release.bind(inner),
    readCheckpoint: async (...a) => {
      if (which === 'readCheckpoint') await g.wait;
      const r = await inner.readCheckpoint(...a);
      if (which === 'readCheckpoint') answered++;
      return r;
    },
    admin: inner.admin,
    close: () => inner.close(),
  };
  return { backend, answered: () => answered };
}

async function until(what: string, check: () => Promise<boolean> | boolean, ms = 20_000): Promise<void> {
  const end = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe.each(targets)('a claim aborted while its calls are on their way, on $kind', (target) => {
  const namespace = uniqueNamespace('abort');
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

  for (const which of ['acquire', 'readCheckpoint'] as const) {
    it(`rejects at once when aborted during ${which}; the lease granted after is released, the checkpoint kept`, async () => {
      const id = item();
      const first = await claim(backend, id, 'first', { ttlMs: 60_000 });
      await first.save(text('42'));
      await first.release();

      const g = gate();
      const late = gated(backend, which, g);
      const controller = new AbortController();
      const claiming = claim(late.backend, id, 'gave-up', { ttlMs: 60_000, signal: controller.signal });
      await sleep(50);
      controller.abort(new Error('caller gave up'));
      // At once: the gated call has not even reached the server.
      await expect(claiming).rejects.toThrow('caller gave up');
      expect(late.answered()).toBe(0);

      g.open();
      await until(`${which} to be answered`, () => late.answered() === 1);
      // Handed back: released, so the next holder takes it at once, with a clean handoff and the checkpoint.
      await until(
        'the late lease to be released',
        async () => (await backend.admin.get(id))?.ended === 'released',
      );
      const info = await backend.admin.get(id);
      expect(info?.holderId).toBe('gave-up');
      const next = await claim(backend, id, 'next', { ttlMs: 60_000 });
      expect(next.expired).toBe(false);
      expect(str(next.state)).toBe('42');
      expect(next.token > (info?.fencingToken ?? 0n)).toBe(true);
      await next.release();
    });
  }

  it('leaves a takeover granted after the abort to run out, so the next holder still sees expired', async () => {
    const id = item();
    const first = await claim(backend, id, 'first', { ttlMs: 300 });
    await first.save(text('7'));
    // `first` dies: its lease runs out without a release.
    await until('the first lease to run out', async () => {
      const [info, now] = await Promise.all([backend.admin.get(id), backend.admin.serverTime()]);
      return info !== null && info.expiresAt.getTime() < now.getTime();
    });

    const g = gate();
    const late = gated(backend, 'acquire', g);
    const controller = new AbortController();
    const claiming = claim(late.backend, id, 'gave-up', { ttlMs: 1500, signal: controller.signal });
    controller.abort(new Error('caller gave up'));
    await expect(claiming).rejects.toThrow('caller gave up');
    g.open();
    await until('the late acquire to be answered', () => late.answered() === 1);
    await sleep(300);
    const info = await backend.admin.get(id);
    expect(info?.holderId).toBe('gave-up');
    expect(info?.ended).toBeNull();
    // Once it has run out, the next holder learns that the work before it did not finish.
    const next = await claim(backend, id, 'next', { ttlMs: 60_000, waitMs: 20_000, waitPollMs: 100 });
    expect(next.expired).toBe(true);
    expect(str(next.state)).toBe('7');
    await next.release();
  });

  it('an election stopped while its claim is on its way stops at once and leads nothing', async () => {
    const name = item();
    const g = gate();
    const late = gated(backend, 'acquire', g);
    let elected = 0;
    const leadership = lead(late.backend, name, 'candidate', {
      ttlMs: 60_000,
      onElected: () => {
        elected++;
      },
    });
    await sleep(50);
    await leadership.stop();
    g.open();
    await until('the late acquire to be answered', () => late.answered() === 1);
    await until(
      'the late lease to be released',
      async () => (await backend.admin.get(name))?.ended === 'released',
    );
    expect(elected).toBe(0);
    expect(leadership.term).toBeNull();
  });

  it('a signal shared by 50 waiting claims carries one listener of the library, none once they ended', async () => {
    const ids = Array.from({ length: 50 }, () => item());
    const holders = await Promise.all(ids.map((id) => claim(backend, id, 'holder', { ttlMs: 60_000 })));
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => {
      warnings.push(w);
    };
    process.on('warning', onWarning);
    try {
      const controller = new AbortController();
      const waits = ids.map((id) =>
        claim(backend, id, 'waiter', {
          ttlMs: 60_000,
          waitMs: Number.POSITIVE_INFINITY,
          waitPollMs: 10,
          signal: controller.signal,
        }).catch((err: unknown) => err),
      );
      // Every waiter retries every 10 ms: many sleeps, each watching the signal.
      await sleep(500);
      expect(getEventListeners(controller.signal, 'abort').length).toBe(1);
      controller.abort(new Error('enough'));
      for (const r of await Promise.all(waits)) expect(String(r)).toContain('enough');
      expect(getEventListeners(controller.signal, 'abort').length).toBe(0);

      // A signal that never aborts keeps nothing once the waits it watched are over.
      const keep = new AbortController();
      const more = ids.slice(0, 20).map((id) =>
        claim(backend, id, 'waiter', {
          ttlMs: 60_000,
          waitMs: 300,
          waitPollMs: 10,
          signal: keep.signal,
        }).catch((err: unknown) => err),
      );
      for (const r of await Promise.all(more)) expect((r as { code?: string }).code).toBe('LEASE_HELD');
      expect(getEventListeners(keep.signal, 'abort').length).toBe(0);
      await sleep(50);
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      await Promise.all(holders.map((h) => h.release()));
    }
  });
});

describe('an election whose claims keep failing', () => {
  const namespace = uniqueNamespace('abortfail');
  const target: BackendTarget = { kind: 'redis', url: REDIS_URL };
  let backend: LeaseBackend;
  beforeAll(async () => {
    backend = await openBackend(target.url, isolated(target, namespace));
  });
  afterAll(async () => {
    await backend?.close();
    await dropNamespace(target, namespace);
  });

  it('stops at once, also in the middle of a backoff of seconds', async () => {
    let acquires = 0;
    const failing: LeaseBackend = {
      ...gated(backend, 'readCheckpoint', { wait: Promise.resolve() }).backend,
      acquire: async () => {
        acquires++;
        throw new Error('the server refuses');
      },
    };
    const leadership = lead(failing, 'name', 'candidate', {
      ttlMs: 60_000,
      waitPollMs: 3_600_000,
      onElected: () => {},
    });
    // Backoffs of 50, 100, … 3 200 ms after the first 7 failures: after the 8th it is 6.4 s.
    await until('8 failed campaigns', () => acquires >= 8, 60_000);
    const stopped = await Promise.race([
      leadership.stop().then(() => 'stopped'),
      sleep(4000).then(() => 'still in its backoff'),
    ]);
    expect(stopped).toBe('stopped');
    expect(acquires).toBe(8);
  }, 90_000);
});
