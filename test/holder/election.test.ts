/**
 * Leader election: one leader at a time, the term is the fencing token, a
 * deposed leader's writes are fenced, a resignation hands over at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Deposed,
  InvalidArgumentError,
  type LeaseBackend,
  LeaseLostError,
  lead,
  openBackend,
  type Term,
} from '../../src/index.ts';
import { type BackendTarget, isolated, PG_URL, REDIS_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';

const targets: BackendTarget[] = [
  { kind: 'postgres', url: PG_URL },
  { kind: 'redis', url: REDIS_URL },
  { kind: 'pglite', url: 'pglite://memory' },
];

/** Resolves with the next value pushed to it. */
function channel<T>(): { push(v: T): void; next(): Promise<T> } {
  const items: T[] = [];
  const waiting: ((v: T) => void)[] = [];
  return {
    push(v) {
      const w = waiting.shift();
      if (w === undefined) items.push(v);
      else w(v);
    },
    next() {
      const v = items.shift();
      return v === undefined ? new Promise((r) => waiting.push(r)) : Promise.resolve(v);
    },
  };
}

describe.each(targets)('leader election on $kind', (target) => {
  const namespace = uniqueNamespace('elect');
  let backend: LeaseBackend;
  beforeAll(async () => {
    backend = await openBackend(target.url, isolated(target, namespace));
  });
  afterAll(async () => {
    await backend?.close();
    await dropNamespace(target, namespace);
  });

  it('elects one leader; a force-released leader is deposed and fenced; the next term is higher; resign hands over', async () => {
    const elected = channel<[string, Term]>();
    const deposed = channel<[string, Deposed]>();
    const candidate = (id: string) =>
      lead(backend, 'scheduler', id, {
        ttlMs: 900,
        waitPollMs: 3_600_000,
        onElected: (term) => elected.push([id, term]),
        onDeposed: (d) => deposed.push([id, d]),
      });
    const a = candidate('a');
    const [first, t1] = await elected.next();
    expect(first).toBe('a');
    const b = candidate('b');
    await new Promise((r) => setTimeout(r, 200));
    expect(b.term).toBeNull();
    expect(a.term?.token).toBe(t1.token);

    // An operator force-releases the leader: the next leader has a higher term, the old one is fenced.
    await backend.admin.forceRelease('scheduler', {
      expectedToken: t1.token,
      operator: 'op',
      reason: 'test',
    });
    const [second, t2] = await elected.next();
    expect(second).toBe('b');
    expect(t2.token > t1.token).toBe(true);
    const [who, d1] = await deposed.next();
    expect(who).toBe('a');
    expect(d1.token).toBe(t1.token);
    expect(['fenced', 'expired']).toContain(d1.reason);
    expect(t1.signal.aborted).toBe(true);
    await expect(t1.holder.save(new Uint8Array([1]))).rejects.toBeInstanceOf(LeaseLostError);
    await t2.holder.save(new TextEncoder().encode('leader b'));

    // b resigns: a (campaigning again) takes over at once, with b's checkpoint and a clean handoff.
    await b.resign();
    const [third, t3] = await elected.next();
    expect(third).toBe('a');
    expect(t3.token > t2.token).toBe(true);
    expect(t3.holder.expired).toBe(false);
    expect(new TextDecoder().decode(t3.holder.state ?? new Uint8Array())).toBe('leader b');
    const [who2, d2] = await deposed.next();
    expect(who2).toBe('b');
    expect(d2.reason).toBe('released');

    await a.stop();
    const [, d3] = await deposed.next();
    expect(d3.reason).toBe('released');
    const [fourth] = await elected.next();
    expect(fourth).toBe('b');
    await b.stop();
    expect((await backend.admin.get('scheduler'))?.ended).toBe('released');
  });

  it('refuses bad arguments before any I/O', () => {
    const onElected = () => {};
    expect(() => lead(backend, '', 'a', { onElected })).toThrow(InvalidArgumentError);
    expect(() => lead(backend, 'x', 'a', {} as never)).toThrow(InvalidArgumentError);
    expect(() => lead(backend, 'x', 'a', { onElected, ttlMs: -1 })).toThrow(InvalidArgumentError);
    expect(() => lead(backend, 'x', 'a', { onElected, ttlMs: 1000, intervalMs: 900 })).toThrow(
      InvalidArgumentError,
    );
    expect(() => lead(backend, 'x', 'a', { onElected, bogus: 1 } as never)).toThrow(InvalidArgumentError);
  });
});
