/**
 * The conformance cases of a work item's history and holds (docs/history.md), run by the same
 * per-backend files as contract.ts: admin.history, hold / unhold and ON_HOLD, handoffCheckpoint,
 * and prune's retention. Every refused call is followed by a check that nothing was written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HistoryEntry, LeaseBackend } from '../../src/index.ts';
import {
  claim,
  ErrorCode,
  InvalidArgumentError,
  NotFoundError,
  OnHoldError,
  openBackend,
  WorkleaseError,
  withLease,
} from '../../src/index.ts';
import { type BackendTarget, isolated, openIsolated, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';

const LIVE = 30_000;
const SHORT = 100;
const OP = { operator: 'alice', reason: 'poison item: kills every worker' };
const enc = (text: string): Uint8Array => new TextEncoder().encode(text);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function codeOf(call: () => Promise<unknown>): Promise<string> {
  try {
    await call();
    return 'OK';
  } catch (err) {
    return err instanceof WorkleaseError ? err.code : `not a WorkleaseError: ${String(err)}`;
  }
}

/** Waits until the backend's clock is past `at` (expiry is decided by the server's clock). */
async function waitPast(b: LeaseBackend, at: Date): Promise<void> {
  while ((await b.admin.serverTime()).getTime() <= at.getTime() + 2) await sleep(20);
}

/** The fields a history entry's reader branches on, for compact comparisons. */
function brief(e: HistoryEntry): string {
  const who = e.operator === undefined ? '' : ` by ${e.operator}: ${e.reason}`;
  const bytes = e.checkpointBytes === undefined ? '' : ` [${e.checkpointBytes} B]`;
  return `${e.kind} ${e.holderId}#${e.token}${who}${bytes}`;
}

export function defineHistory(target: BackendTarget): void {
  describe(`history and holds on ${target.kind}`, () => {
    const ns = uniqueNamespace(`his_${target.kind.replace('-', '_')}`);
    let b: LeaseBackend;

    beforeAll(async () => {
      b = await openIsolated(target, ns);
    }, 120_000);

    afterAll(async () => {
      await b?.close();
      await dropNamespace(target, ns);
    });

    it('records every ownership change newest first, with holders, tokens, operators and checkpoint sizes', async () => {
      const id = 'h/cycle';
      const r1 = await b.acquire(id, 'w1', LIVE);
      await b.checkpoint(r1, enc('abc'), LIVE);
      await b.release(r1);
      const r2 = await b.acquire(id, 'w2', LIVE);
      const forced = await b.admin.forceRelease(id, {
        expectedToken: r2.fencingToken,
        operator: 'bob',
        reason: 'stuck',
      });
      const r3 = await b.acquire(id, 'w3', SHORT);
      await waitPast(b, r3.expiresAt);
      const r4 = await b.acquire(id, 'w4', LIVE);
      await b.admin.requestRelease(id, {
        expectedToken: r4.fencingToken,
        operator: 'carol',
        reason: 'deploy',
      });
      await b.admin.hold(id, OP);
      await b.admin.unhold(id, { operator: 'dave', reason: 'fixed' });

      const h = await b.admin.history(id);
      expect(h.map(brief)).toEqual([
        `unheld w4#${r4.fencingToken} by dave: fixed`,
        `held w4#${r4.fencingToken} by alice: ${OP.reason}`,
        `release-requested w4#${r4.fencingToken} by carol: deploy`,
        `acquired w4#${r4.fencingToken} [3 B]`,
        `expired w3#${r3.fencingToken} [3 B]`,
        `acquired w3#${r3.fencingToken} [3 B]`,
        `force-released w2#${r2.fencingToken} by bob: stuck [3 B]`,
        `acquired w2#${r2.fencingToken} [3 B]`,
        `released w1#${r1.fencingToken} [3 B]`,
        `acquired w1#${r1.fencingToken}`,
      ]);
      expect(forced.fencingToken).toBeGreaterThan(r2.fencingToken);
      // The expiry is dated when the lease ran out, not when the next acquire noticed it.
      const expired = h.find((e) => e.kind === 'expired');
      expect(expired?.at.getTime()).toBe(r3.expiresAt.getTime());
      for (let i = 1; i < h.length; i++) {
        expect(h[i - 1]!.at.getTime(), `${brief(h[i - 1]!)} after ${brief(h[i]!)}`).toBeGreaterThanOrEqual(
          h[i]!.at.getTime(),
        );
      }
      expect(new Set(h.map((e) => e.id)).size).toBe(h.length);
    });

    it('writes nothing on renew and checkpoint', async () => {
      const id = 'h/heartbeats';
      let r = await b.acquire(id, 'w1', LIVE);
      const before = await b.admin.history(id);
      for (let i = 0; i < 20; i++) {
        r = await b.renew(r, LIVE);
        await b.checkpoint(r, enc(`step ${i}`), LIVE);
      }
      expect(await b.admin.history(id)).toEqual(before);
      expect(before.map((e) => e.kind)).toEqual(['acquired']);
    });

    it('racing acquires write one entry per change: 12 on a fresh item, 12 on an expired lease, 12 on a held item', async () => {
      const id = 'h/race';
      const race = async (ttlMs: number): Promise<string[]> => {
        const results = await Promise.all(
          Array.from({ length: 12 }, (_, i) => codeOf(() => b.acquire(id, `r${i}`, ttlMs))),
        );
        return results;
      };
      const fresh = await Promise.all(
        Array.from({ length: 12 }, (_, i) => codeOf(() => b.acquire(`${id}-fresh`, `r${i}`, LIVE))),
      );
      expect(fresh.filter((c) => c === 'OK')).toHaveLength(1);
      expect(fresh.filter((c) => c !== 'OK').every((c) => c === 'LEASE_HELD')).toBe(true);
      expect((await b.admin.history(`${id}-fresh`)).map((e) => e.kind)).toEqual(['acquired']);
      await b.acquire(id, 'r-first', SHORT);
      const lease = await b.admin.get(id);
      await waitPast(b, lease!.expiresAt);
      const second = await race(LIVE);
      expect(second.filter((c) => c === 'OK')).toHaveLength(1);
      const now = await b.admin.get(id);
      expect((await b.admin.history(id)).map(brief)).toEqual([
        `acquired ${now!.holderId}#${now!.fencingToken}`,
        `expired ${lease!.holderId}#${lease!.fencingToken}`,
        `acquired ${lease!.holderId}#${lease!.fencingToken}`,
      ]);
      // And on hold, every racer is refused and nothing is written.
      await b.admin.hold(id, OP);
      expect(new Set(await race(LIVE))).toEqual(new Set(['ON_HOLD']));
      expect((await b.admin.history(id)).map((e) => e.kind)).toEqual([
        'held',
        'acquired',
        'expired',
        'acquired',
      ]);
    });

    it('pages with limit and before, and an unknown work item has an empty history', async () => {
      const id = 'h/pages';
      for (let i = 0; i < 4; i++) await b.release(await b.acquire(id, `w${i}`, LIVE));
      const all = await b.admin.history(id, { limit: 100 });
      expect(all).toHaveLength(8);
      const pages: HistoryEntry[] = [];
      let before: string | undefined;
      for (;;) {
        const page = await b.admin.history(id, before === undefined ? { limit: 3 } : { limit: 3, before });
        pages.push(...page);
        if (page.length < 3) break;
        before = page.at(-1)!.id;
      }
      expect(pages).toEqual(all);
      expect(await b.admin.history('h/never-acquired')).toEqual([]);
    });

    it('hold: acquire and claim fail ON_HOLD, the live lease is not fenced, unhold lets acquire in again', async () => {
      const id = 'h/hold';
      const r = await b.acquire(id, 'w1', LIVE);
      const cursor = await b.admin.changeCursor();
      const held = await b.admin.hold(id, OP);
      // Not an ownership change: no change-feed entry (the version moves, as for a renew).
      const feed = await b.admin.changes({ cursor });
      expect(feed.changes.filter((c) => c.workId === id)).toEqual([]);
      expect(held.hold).toMatchObject({ operator: 'alice', reason: OP.reason });
      expect(held.hold?.at).toBeInstanceOf(Date);
      expect(held.fencingToken).toBe(r.fencingToken);
      expect((await b.admin.get(id))?.hold).toEqual(held.hold);
      const listed = await b.admin.list({ workIdPrefix: id });
      expect(listed.items.find((i) => i.workId === id)?.hold).toEqual(held.hold);

      // The holder goes on: renew, checkpoint and release still work under its token.
      const renewed = await b.renew(r, LIVE);
      await b.checkpoint(renewed, enc('progress'), LIVE);
      await b.release(renewed);

      // Nobody gets it while held, live lease or not.
      let err: unknown;
      try {
        await b.acquire(id, 'w2', LIVE);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(OnHoldError);
      expect((err as OnHoldError).code).toBe(ErrorCode.ON_HOLD);
      expect((err as OnHoldError).details).toMatchObject({
        workId: id,
        operator: 'alice',
        reason: OP.reason,
      });
      expect((err as OnHoldError).message).toContain('on hold');
      const after = await b.admin.get(id);
      expect(after?.fencingToken).toBe(r.fencingToken);
      expect(after?.ended).toBe('released');

      // A waiting claim gives up at once: waiting does not end a hold.
      const started = Date.now();
      expect(await codeOf(() => claim(b, id, 'w3', { ttlMs: LIVE, waitMs: 60_000 }))).toBe('ON_HOLD');
      expect(Date.now() - started).toBeLessThan(30_000);
      let ran = false;
      const viaWithLease = withLease(b, id, 'w3', { ttlMs: LIVE, waitMs: 60_000 }, async () => {
        ran = true;
      });
      expect(await codeOf(() => viaWithLease)).toBe('ON_HOLD');
      expect(ran).toBe(false);

      // Holding again writes nothing and keeps the first hold.
      const historyBefore = await b.admin.history(id);
      const again = await b.admin.hold(id, { operator: 'zed', reason: 'other' });
      expect(again.hold).toEqual(held.hold);
      expect(await b.admin.history(id)).toEqual(historyBefore);

      const audit = await b.admin.audit({ workId: id });
      expect(audit.map((a) => `${a.action} ${a.operator}`)).toEqual(['hold alice']);
      expect(audit[0]).toMatchObject({
        oldToken: r.fencingToken,
        newToken: r.fencingToken,
        reason: OP.reason,
      });

      const unheld = await b.admin.unhold(id, { operator: 'dave', reason: 'fixed upstream' });
      expect(unheld.hold).toBeNull();
      expect((await b.admin.audit({ workId: id }))[0]).toMatchObject({ action: 'unhold', operator: 'dave' });
      // Unholding again writes nothing.
      const n = (await b.admin.history(id)).length;
      expect((await b.admin.unhold(id, { operator: 'dave', reason: 'again' })).hold).toBeNull();
      expect(await b.admin.history(id)).toHaveLength(n);
      const next = await b.acquire(id, 'w2', LIVE);
      expect(next.fencingToken).toBeGreaterThan(r.fencingToken);
      expect((await b.admin.history(id, { limit: 4 })).map((e) => e.kind)).toEqual([
        'acquired',
        'unheld',
        'released',
        'held',
      ]);
    });

    it('hold and unhold of an unknown work item fail NOT_FOUND and write nothing', async () => {
      for (const call of [() => b.admin.hold('h/unknown', OP), () => b.admin.unhold('h/unknown', OP)]) {
        await expect(call()).rejects.toBeInstanceOf(NotFoundError);
      }
      expect(await b.admin.history('h/unknown')).toEqual([]);
      expect(await b.admin.audit({ workId: 'h/unknown' })).toEqual([]);
      expect(await b.admin.get('h/unknown')).toBeNull();
    });

    // Generous: it opens a second backend (on PGlite a WebAssembly instance) on a loaded machine.
    it('refuses bad input with INVALID_ARGUMENT before any I/O (also on a closed backend) and writes nothing', {
      timeout: 120_000,
    }, async () => {
      const id = 'h/bad-input';
      await b.acquire(id, 'w1', LIVE);
      const bad: Array<[string, (x: LeaseBackend) => Promise<unknown>]> = [
        ['empty reason', (x) => x.admin.hold(id, { operator: 'alice', reason: '' })],
        ['blank reason', (x) => x.admin.hold(id, { operator: 'alice', reason: '   ' })],
        ['reason too long', (x) => x.admin.hold(id, { operator: 'alice', reason: 'x'.repeat(2001) })],
        ['no reason', (x) => x.admin.hold(id, { operator: 'alice' } as never)],
        ['no options', (x) => x.admin.hold(id, undefined as never)],
        ['unknown option', (x) => x.admin.hold(id, { ...OP, force: true } as never)],
        ['operator with a newline', (x) => x.admin.hold(id, { operator: 'a\nb', reason: 'r' })],
        ['empty work id', (x) => x.admin.hold('', OP)],
        ['work id too long', (x) => x.admin.unhold('x'.repeat(513), OP)],
        ['unhold empty reason', (x) => x.admin.unhold(id, { operator: 'alice', reason: '' })],
        ['history limit 0', (x) => x.admin.history(id, { limit: 0 })],
        ['history limit 1001', (x) => x.admin.history(id, { limit: 1001 })],
        ['history before garbage', (x) => x.admin.history(id, { before: 'not an id!' })],
        ['history before empty', (x) => x.admin.history(id, { before: '' })],
        ['history unknown option', (x) => x.admin.history(id, { after: '1' } as never)],
        ['history empty work id', (x) => x.admin.history('')],
        ['handoff bad length', (x) => x.admin.handoffCheckpoint(id, { length: 0 })],
        ['prune bad keep', (x) => x.admin.prune({ olderThanMs: 0, history: { keepPerItem: 0 } })],
        ['prune bad age', (x) => x.admin.prune({ olderThanMs: 0, history: { olderThanMs: -1 } })],
        ['prune history unknown', (x) => x.admin.prune({ olderThanMs: 0, history: { keep: 1 } as never })],
      ];
      const closed = await openBackend(target.url, isolated(target, ns));
      await closed.close();
      for (const [what, call] of bad) {
        await expect(call(b), what).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(call(closed), `${what} (closed)`).rejects.toBeInstanceOf(InvalidArgumentError);
      }
      expect((await b.admin.get(id))?.hold).toBeNull();
      expect((await b.admin.history(id)).map((e) => e.kind)).toEqual(['acquired']);
      expect(await b.admin.audit({ workId: id })).toEqual([]);
    });

    it('keeps the checkpoint of the last handoff apart from the current one', async () => {
      const id = 'h/handoff';
      expect(await b.admin.handoffCheckpoint(id)).toBeNull();
      const r1 = await b.acquire(id, 'w1', LIVE);
      expect(await b.admin.handoffCheckpoint(id)).toBeNull(); // no checkpoint at that handoff
      await b.checkpoint(r1, enc('state at handoff'), LIVE);
      await b.release(r1);
      const r2 = await b.acquire(id, 'w2', LIVE);
      await b.checkpoint(r2, enc('newer'), LIVE);
      const page = await b.admin.handoffCheckpoint(id);
      expect(page?.fencingToken).toBe(r2.fencingToken);
      expect(page?.size).toBe(16);
      expect(new TextDecoder().decode(page?.bytes)).toBe('state at handoff');
      const slice = await b.admin.handoffCheckpoint(id, { offset: 6, length: 2 });
      expect(new TextDecoder().decode(slice?.bytes)).toBe('at');
      expect(new TextDecoder().decode((await b.admin.readState(id))?.bytes)).toBe('newer');
      await b.release(r2);
      await b.acquire(id, 'w3', LIVE);
      expect(new TextDecoder().decode((await b.admin.handoffCheckpoint(id))?.bytes)).toBe('newer');
    });

    it('prune keeps held items, records an unnoticed expiry, and applies the retention by count and age', async () => {
      const held = 'h/prune-held';
      const lapsed = 'h/prune-lapsed';
      const busy = 'h/prune-busy';
      await b.release(await b.acquire(held, 'w1', LIVE));
      await b.admin.hold(held, OP);
      const r = await b.acquire(lapsed, 'w1', SHORT);
      for (let i = 0; i < 5; i++) await b.release(await b.acquire(busy, `w${i}`, LIVE));
      await waitPast(b, r.expiresAt);
      const keep = { history: { keepPerItem: 3 } };
      await b.admin.prune({ olderThanMs: 0, limit: 100_000, ...keep });
      expect((await b.admin.get(held))?.hold).toMatchObject({ operator: 'alice' });
      expect(await b.admin.get(lapsed)).toBeNull();
      expect((await b.admin.history(lapsed)).map(brief)).toEqual([
        `expired w1#${r.fencingToken}`,
        `acquired w1#${r.fencingToken}`,
      ]);
      expect((await b.admin.history(busy)).map((e) => `${e.kind} ${e.holderId}`)).toEqual([
        'released w4',
        'acquired w4',
        'released w3',
      ]);
      // By age: entries older than 0 ms are all gone.
      await sleep(5);
      await b.admin.prune({ olderThanMs: 0, history: { olderThanMs: 0 } });
      expect(await b.admin.history(busy)).toEqual([]);
      expect(await b.admin.history(held)).toEqual([]);
      // The held item is still held; unheld and pruned, it goes.
      await b.admin.unhold(held, OP);
      await b.admin.prune({ olderThanMs: 0 });
      expect(await b.admin.get(held)).toBeNull();
    });
  });
}
