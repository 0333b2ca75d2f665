/**
 * The session store and the limits, alone, on a clock the test moves: both secrets needed, idle
 * timeout and lifetime, rotation with its grace, per-user caps that end only that user's own
 * sessions, per-address caps that refuse, failed sign-ins that lock an address for a window.
 */
import { describe, expect, it } from 'vitest';
import type { Caller } from '../../src/console/access.ts';
import { Limits, SlidingWindow } from '../../src/server/guards/limits.ts';
import { SessionStore } from '../../src/server/guards/sessions.ts';

const viewer: Caller = { user: 'vera', via: 'token', roles: { '*': 'viewer' } };
const admin: Caller = { user: 'adam', via: 'token', roles: { '*': 'admin' } };

function clock() {
  let t = 1_000_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe('SessionStore', () => {
  it('a session is the cookie and the secret together; either alone, or a swapped pair, is none', () => {
    const store = new SessionStore();
    const a = store.create(viewer, '127.0.0.1', 'cred-v');
    const b = store.create(admin, '127.0.0.1', 'cred-a');
    if (!a.ok || !b.ok) throw new Error('refused');
    expect(store.check([a.cookie], a.secret)).toMatchObject({ ok: true, session: a.session, current: true });
    expect(store.check([a.cookie], null)).toEqual({ ok: false, reason: 'secret' });
    expect(store.check([a.cookie], b.secret)).toEqual({ ok: false, reason: 'secret' });
    expect(store.check([], a.secret)).toEqual({ ok: false, reason: 'unknown' });
    // A planted cookie sent first (a longer path) does not hide the page's own.
    expect(store.check([b.cookie, a.cookie], a.secret)).toMatchObject({ ok: true, session: a.session });
  });

  it('ends a session idle for idleMs (an open event stream keeps it) and any at lifetimeMs', () => {
    const c = clock();
    const store = new SessionStore({ idleMs: 1000, lifetimeMs: 10_000, now: c.now });
    const s = store.create(viewer, '127.0.0.1', 'cred');
    if (!s.ok) throw new Error('refused');
    c.advance(999);
    expect(store.check([s.cookie], s.secret).ok).toBe(true);
    store.touch(s.session);
    c.advance(999);
    expect(store.alive(s.session)).toBe(true);
    c.advance(2);
    expect(store.check([s.cookie], s.secret)).toEqual({ ok: false, reason: 'expired' });
    const t = store.create(viewer, '127.0.0.1', 'cred');
    if (!t.ok) throw new Error('refused');
    t.session.streams = 1;
    c.advance(9_999);
    expect(store.alive(t.session)).toBe(true);
    c.advance(1);
    expect(store.alive(t.session)).toBe(false);
    expect(store.prune()).toEqual([t.session]);
    expect(store.size).toBe(0);
  });

  it('rotates both secrets when due, keeps the old pair for the grace period, then refuses it', () => {
    const c = clock();
    const store = new SessionStore({
      rotateMs: 600_000,
      rotateGraceMs: 60_000,
      idleMs: 3_600_000,
      now: c.now,
    });
    const s = store.create(viewer, '127.0.0.1', 'cred');
    if (!s.ok) throw new Error('refused');
    expect(store.rotate(s.session, true)).toBeNull();
    c.advance(600_000);
    // A request with the old pair (a lagging tab) never turns it again.
    expect(store.rotate(s.session, false)).toBeNull();
    const next = store.rotate(s.session, true);
    expect(next).not.toBeNull();
    expect(next!.cookie).not.toBe(s.cookie);
    // Every mix of old and new works during the grace, as tabs catch up.
    for (const [cookie, secret] of [
      [next!.cookie, next!.secret],
      [s.cookie, s.secret],
      [next!.cookie, s.secret],
      [s.cookie, next!.secret],
    ]) {
      expect(store.check([cookie!], secret!).ok).toBe(true);
    }
    expect(store.check([next!.cookie], next!.secret)).toMatchObject({ current: true });
    c.advance(60_000);
    expect(store.check([s.cookie], s.secret).ok).toBe(false);
    expect(store.check([next!.cookie], s.secret).ok).toBe(false);
    expect(store.check([next!.cookie], next!.secret).ok).toBe(true);
  });

  it("a user's flood of sign-ins ends only that user's own sessions; an address's flood is refused, not evicting", () => {
    const store = new SessionStore({ maxPerIdentity: 5, maxPerAddress: 8 });
    const mine = store.create(admin, '127.0.0.2', 'cred-a');
    if (!mine.ok) throw new Error('refused');
    const replaced = [];
    for (let i = 0; i < 1000; i++) {
      const s = store.create(viewer, '127.0.0.1', 'cred-v');
      if (s.ok && s.replaced !== null) replaced.push(s.replaced);
    }
    expect(replaced.every((r) => r.caller.user === 'vera')).toBe(true);
    expect(store.check([mine.cookie], mine.secret).ok).toBe(true);
    expect(store.all().filter((s) => s.caller.user === 'vera')).toHaveLength(5);
    // Other users at the same address fill it up to its cap; then that address is refused.
    const others = ['a', 'b', 'c'].map((u) => store.create({ ...viewer, user: u }, '127.0.0.1', `cred-${u}`));
    expect(others.map((o) => o.ok)).toEqual([true, true, true]);
    const over = store.create({ ...viewer, user: 'd' }, '127.0.0.1', 'cred-d');
    expect(over).toMatchObject({ ok: false, status: 429, reason: 'address' });
    expect(store.check([mine.cookie], mine.secret).ok).toBe(true);
    // The least recently used session is the one a user's cap ends.
    const store2 = new SessionStore({ maxPerIdentity: 2 });
    const first = store2.create(viewer, 'x', 'c');
    const second = store2.create(viewer, 'x', 'c');
    if (!first.ok || !second.ok) throw new Error('refused');
    store2.touch(first.session);
    const third = store2.create(viewer, 'x', 'c');
    expect(third.ok && third.replaced).toBe(second.session);
  });
});

describe('Limits', () => {
  it('locks an address after maxFailures failures in the window, until the oldest leaves it', () => {
    const c = clock();
    const limits = new Limits({ maxFailures: 3, failureWindowMs: 10_000, now: c.now }, 10);
    for (let i = 0; i < 3; i++) {
      expect(limits.lockedFor('127.0.0.1')).toBe(0);
      limits.failed('127.0.0.1');
      c.advance(1000);
    }
    expect(limits.lockedFor('127.0.0.1')).toBe(7000);
    expect(limits.lockedFor('127.0.0.2')).toBe(0);
    c.advance(7000);
    expect(limits.lockedFor('127.0.0.1')).toBe(0);
  });

  it('caps sign-ins per person, and streams per person, per address and in all', () => {
    const c = clock();
    const limits = new Limits(
      { maxSignIns: 2, signInWindowMs: 1000, maxStreamsPerIdentity: 2, maxStreamsPerAddress: 3, now: c.now },
      4,
    );
    expect(limits.signIn('token:vera')).toBe(0);
    expect(limits.signIn('token:vera')).toBe(0);
    expect(limits.signIn('token:vera')).toBe(1000);
    expect(limits.signIn('token:adam')).toBe(0);
    expect(limits.openStream('token:vera', 'a1')).toBeNull();
    expect(limits.openStream('token:vera', 'a1')).toBeNull();
    expect(limits.openStream('token:vera', 'a1')).toMatchObject({ status: 429, reason: 'identity' });
    expect(limits.openStream('token:adam', 'a1')).toBeNull();
    expect(limits.openStream('token:bob', 'a1')).toMatchObject({ status: 429, reason: 'address' });
    expect(limits.openStream('token:bob', 'a2')).toBeNull();
    expect(limits.openStream('token:carl', 'a3')).toMatchObject({ status: 503, reason: 'total' });
    limits.closeStream('token:vera', 'a1');
    expect(limits.openStream('token:adam', 'a1')).toBeNull();
    expect(limits.openStreams).toBe(4);
  });

  it('keeps at most maxKeys addresses, forgetting the least recently counted', () => {
    const w = new SlidingWindow(2, 60_000, 100);
    for (let i = 0; i < 10_000; i++) w.add(`10.0.${i >> 8}.${i & 255}`, i);
    expect(w.keys).toBe(100);
  });
});
