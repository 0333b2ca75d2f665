/**
 * The busy poll of the lease calls connection (src/backends/redis/poll.ts, wire.ts; the
 * `busyPollMs` open option): when a lone call polls (pure logic), that the poll runs while a lone
 * call waits and stops at its reply, at the bound and at close, that polled replies later than the
 * bound turn it off and a probe answered within it back on, on the shared Redis; that the option
 * reaches the connection through `openBackend`; and that a bad value is refused before any I/O. How
 * much it saves is measured by `npm run bench:redlock` (a row with `busyPollMs: 0`), not asserted
 * here.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { parseRedisUrl } from '../../src/backends/redis/connection.ts';
import {
  DEFAULT_BUSY_POLL_MS,
  defaultBusyPollMs,
  PollPolicy,
  PROBE_EVERY,
} from '../../src/backends/redis/poll.ts';
import { Wire } from '../../src/backends/redis/wire.ts';
import { resolveBackendUrl, urlOptionNames } from '../../src/backends/url.ts';
import { type OpenOptions, openBackend } from '../../src/index.ts';
import { codeOf, REDIS_URL, uniqueNamespace } from '../support/backends.ts';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('PollPolicy (no I/O)', () => {
  it('polls from the first lone call while polled replies come within the bound', () => {
    const p = new PollPolicy(0.1);
    expect(p.choose()).toBe(true);
    for (let i = 0; i < 20; i++) {
      expect(p.choose()).toBe(true);
      p.answered(0.05);
    }
    expect(p.hitRate).toBe(1);
    expect(p.on).toBe(true);
  });

  it('stops when most polled replies come later than the bound (a server across a network)', () => {
    const p = new PollPolicy(0.1);
    let late = 0;
    while (p.on) {
      expect(p.choose()).toBe(true);
      p.answered(0.4);
      late++;
    }
    // 1 → below 0.5 at 1/8 per reply: (7/8)^n < 0.5 from n = 6.
    expect(late).toBe(6);
    expect(p.hitRate).toBeCloseTo(0.875 ** 6, 9);
    // Off: one lone call in PROBE_EVERY polls (a probe), the others do not.
    const chosen = Array.from({ length: 3 * PROBE_EVERY }, () => p.choose());
    expect(chosen.filter(Boolean)).toHaveLength(3);
    expect(chosen[PROBE_EVERY - 1]).toBe(true);
    expect(chosen.slice(0, PROBE_EVERY - 1)).toEqual(Array(PROBE_EVERY - 1).fill(false));
  });

  it('a probe answered within the bound turns it back on; only polled replies count', () => {
    const p = new PollPolicy(0.1);
    for (let i = 0; i < 6; i++) p.answered(0.4);
    expect(p.on).toBe(false);
    // The wire counts a reply only for a call that chose to poll: a sleeping client's replies carry
    // its own wake-up, and counting them kept the poll off for good (poll.ts).
    const chosen = Array.from({ length: PROBE_EVERY }, () => p.choose());
    expect(chosen.indexOf(true)).toBe(PROBE_EVERY - 1);
    p.answered(0.05);
    // 0.448 + (1 − 0.448) / 8 = 0.517: on again.
    expect(p.hitRate).toBeGreaterThanOrEqual(0.5);
    expect(p.on).toBe(true);
    expect(p.choose()).toBe(true);
  });

  it('one slow reply among fast ones does not stop it', () => {
    const p = new PollPolicy(0.1);
    for (let i = 0; i < 30; i++) p.answered(0.04);
    p.answered(1000);
    expect(p.hitRate).toBe(0.875);
    expect(p.choose()).toBe(true);
  });

  it('a reply exactly at the bound counts as within it', () => {
    const p = new PollPolicy(0.1);
    for (let i = 0; i < 20; i++) p.answered(0.1);
    expect(p.hitRate).toBe(1);
  });

  it('a bound of 0 never polls, not even a probe, and keeps no rate', () => {
    const p = new PollPolicy(0);
    p.answered(0.01);
    expect(Array.from({ length: 2 * PROBE_EVERY }, () => p.choose())).toEqual(
      Array(2 * PROBE_EVERY).fill(false),
    );
    expect(p.hitRate).toBe(1);
    expect(p.on).toBe(false);
  });

  it('defaults to 0.2 ms, and to no poll in a process that may run on one CPU only', () => {
    expect(DEFAULT_BUSY_POLL_MS).toBe(0.2);
    expect(defaultBusyPollMs(2)).toBe(0.2);
    expect(defaultBusyPollMs(1)).toBe(0);
  });
});

describe('the busy poll on a real connection (shared Redis)', () => {
  const open: Wire[] = [];
  afterAll(() => {
    for (const w of open) w.close();
  });

  /** `busyPollMs`: the poll bound, ms. */
  async function wire(busyPollMs: number): Promise<Wire> {
    const w = new Wire(parseRedisUrl(REDIS_URL), {
      name: 'worklease-test:poll',
      connectTimeoutMs: 5000,
      callTimeoutMs: 5000,
      tickMs: 100,
      busyPollMs,
    });
    open.push(w);
    w.start();
    for (let i = 0; !w.ready; i++) {
      if (i === 500) throw new Error('the connection did not get ready in 5 s');
      await sleep(10);
    }
    return w;
  }

  it('polls while a lone call waits, as the policy says, and stops at its reply', async () => {
    const w = await wire(10);
    for (let i = 0; i < 5; i++) {
      // On from the first call, and while polled replies come within 10 ms (a loaded machine
      // could push some past it).
      const expected = w.pollPolicy.on;
      if (i === 0) expect(expected).toBe(true);
      const reply = w.call('PING', [], false);
      expect(w.busyPolling).toBe(expected);
      expect(await reply).toBe('PONG');
      await nextTurn();
      await nextTurn();
      expect(w.busyPolling).toBe(false);
    }
  });

  it('stops at the bound while the reply is still to come; late replies turn it off, unpolled ones do not count, a probe turns it back on', async () => {
    const w = await wire(2);
    const key = `${uniqueNamespace('poll')}:never`;
    // BLPOP on a list nobody pushes to answers nil after its timeout (0.1 s), long after the bound.
    const slow = w.call('BLPOP', [key, '0.1'], false);
    expect(w.busyPolling).toBe(true);
    await sleep(30);
    // The timer can run before the poll's step in the same turn of the loop: give it two turns.
    await nextTurn();
    await nextTurn();
    expect(w.inFlight).toBe(1);
    expect(w.busyPolling).toBe(false);
    expect(await slow).toBeNull();
    expect(w.pollPolicy.hitRate).toBe(0.875);
    // Five more late replies: off (the count is PollPolicy's test above).
    for (let i = 0; i < 5; i++) {
      const late = w.call('BLPOP', [key, '0.1'], false);
      expect(w.busyPolling).toBe(true);
      expect(await late).toBeNull();
    }
    expect(w.pollPolicy.on).toBe(false);
    const rate = w.pollPolicy.hitRate;
    // Lone calls do not poll now, and their fast replies leave the rate as it was; the
    // PROBE_EVERY-th polls.
    for (let i = 1; i < PROBE_EVERY; i++) {
      const unpolled = w.call('PING', [], false);
      expect(w.busyPolling).toBe(false);
      await unpolled;
    }
    expect(w.pollPolicy.hitRate).toBe(rate);
    const probe = w.call('PING', [], false);
    expect(w.busyPolling).toBe(true);
    await probe;
    // A probe answered within 2 ms turns it on again. On a loaded machine one reply can come
    // later (CI saw it stay off after the first probe): then the next probes, each the
    // PROBE_EVERY-th lone call, must bring it back; one hit is enough from this rate.
    for (let round = 0; !w.pollPolicy.on && round < 50; round++) {
      for (let i = 1; i < PROBE_EVERY; i++) {
        const unpolled = w.call('PING', [], false);
        expect(w.busyPolling).toBe(false);
        await unpolled;
      }
      const next = w.call('PING', [], false);
      expect(w.busyPolling).toBe(true);
      await next;
    }
    // On again, and the next lone call polls.
    expect(w.pollPolicy.on).toBe(true);
    await nextTurn();
    await nextTurn();
    const polled = w.call('PING', [], false);
    expect(w.busyPolling).toBe(true);
    await polled;
  });

  it('only a lone call polls; calls sent while others wait do not start one of their own', async () => {
    const w = await wire(10);
    const first = w.call('PING', [], false);
    expect(w.busyPolling).toBe(true);
    const rest = Array.from({ length: 8 }, () => w.call('PING', [], false));
    expect(w.inFlight).toBe(9);
    expect(await Promise.all([first, ...rest])).toEqual(Array(9).fill('PONG'));
    await nextTurn();
    await nextTurn();
    expect(w.busyPolling).toBe(false);
  });

  it('with a bound of 0 never polls', async () => {
    const w = await wire(0);
    for (let i = 0; i < 3; i++) {
      const reply = w.call('PING', [], false);
      expect(w.busyPolling).toBe(false);
      await reply;
    }
    expect(w.pollPolicy.on).toBe(false);
  });

  it('a poll ends when the connection closes under a waiting call', async () => {
    const w = await wire(10);
    const waiting = w.call('BLPOP', [`${uniqueNamespace('poll')}:never`, '1'], false);
    expect(w.busyPolling).toBe(true);
    w.close();
    await expect(waiting).rejects.toThrow('Connection is closed.');
    await nextTurn();
    await nextTurn();
    expect(w.busyPolling).toBe(false);
  });
});

describe('the busyPollMs option', () => {
  it('reaches the lease calls connection: its first renew polls with busyPollMs 10, none with 0', async () => {
    const prefix = uniqueNamespace('poll');
    const r = new Redis(REDIS_URL);
    const immediates = (): number => process.getActiveResourcesInfo().filter((x) => x === 'Immediate').length;
    /** Whether each of three renews left one more Immediate (the poll's) pending right after it was written. */
    const polls = async (busyPollMs: number): Promise<boolean[]> => {
      const b = await openBackend(REDIS_URL, { keyPrefix: prefix, busyPollMs });
      try {
        const rec = await b.acquire(`w${busyPollMs}`, 'h', 60_000);
        // The first lease call goes through ioredis and connects the lease calls connection.
        for (let i = 0; ; i++) {
          const names = String(await r.call('CLIENT', 'LIST', 'TYPE', 'normal'));
          if (names.split(`name=worklease:${prefix} `).length - 1 === 2) break;
          if (i === 250) throw new Error('the lease calls connection did not come up in 5 s');
          await sleep(20);
        }
        const seen: boolean[] = [];
        for (let i = 0; i < 3; i++) {
          const before = immediates();
          const p = b.renew(rec, 60_000);
          seen.push(immediates() > before);
          await p;
          await nextTurn();
          await nextTurn();
        }
        return seen;
      } finally {
        await b.close();
      }
    };
    try {
      // The connection's first call always polls (no average yet); the next ones unless a loaded
      // machine pushed the average reply past 10 ms.
      expect((await polls(10))[0]).toBe(true);
      expect(await polls(0)).toEqual([false, false, false]);
    } finally {
      const keys = await r.keys(`${prefix}:*`);
      if (keys.length > 0) await r.del(...keys);
      r.disconnect();
    }
  });

  it('is a Redis URL option, a decimal number of ms', () => {
    expect(urlOptionNames('redis')).toContain('busyPollMs');
    expect(urlOptionNames('redis-cluster')).toContain('busyPollMs');
    expect(urlOptionNames('postgres')).not.toContain('busyPollMs');
    expect(resolveBackendUrl('redis://h?busyPollMs=0.05').options.busyPollMs).toBe(0.05);
    expect(resolveBackendUrl('redis://h?busyPollMs=0').options.busyPollMs).toBe(0);
    for (const bad of ['fast', '-1', '1e3', '.5', '0.1.2', '']) {
      expect(() => resolveBackendUrl(`redis://h?busyPollMs=${bad}`), bad).toThrow(
        /busyPollMs must be a decimal number such as 0.1/,
      );
    }
    expect(() => resolveBackendUrl('redis://h?busyPollMs=0.05', { busyPollMs: 0.1 })).toThrow(/give it once/);
  });

  it('a bad value, or one for a backend without a poll, is refused before any I/O', async () => {
    const refused = async (url: string, busyPollMs: unknown): Promise<string> =>
      codeOf(openBackend(url, { busyPollMs } as OpenOptions));
    // Port 1: a refused option never gets as far as connecting.
    for (const bad of [-1, 10.001, '0.1', Number.NaN, Number.POSITIVE_INFINITY, null]) {
      expect(await refused('redis://127.0.0.1:1', bad), String(bad)).toBe('INVALID_ARGUMENT');
    }
    expect(await refused('redis://127.0.0.1:1?busyPollMs=20', undefined)).toBe('INVALID_ARGUMENT');
    const bad = await openBackend('redis://127.0.0.1:1', { busyPollMs: -1 }).catch((e: unknown) => e);
    expect((bad as Error).message).toBe(
      'options.busyPollMs must be a number of milliseconds from 0 to 10 (such as 0.1), got -1',
    );
    expect(await refused('postgres://127.0.0.1:1/x', 0.1)).toBe('INVALID_ARGUMENT');
    expect(await refused('pglite://memory', 0)).toBe('INVALID_ARGUMENT');
    const err = await openBackend('postgres://127.0.0.1:1/x', { busyPollMs: 0.1 }).catch((e: unknown) => e);
    expect((err as Error).message).toBe('options.busyPollMs is for Redis; postgres has no busy poll');
  });
});
