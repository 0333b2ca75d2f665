/**
 * The conformance suite of the lease contract (DESIGN §2), written once against
 * the public API and run by one small test file per backend, so every backend is
 * held to the same semantics. A backend change that alters behaviour extends
 * this file; it never gets a backend-specific exception here.
 *
 * Conventions: every case uses its own work ids (unique within the file's
 * namespace), "live" leases have a long ttl, expiry is forced with short ttls
 * and a wait measured on the server's clock, and every refused call is
 * followed by a check that the stored lease did not change.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  BackendKind,
  ChangeKind,
  LeaseBackend,
  LeaseChange,
  LeaseInfo,
  LeasePage,
  LeaseRecord,
  OpenOptions,
} from '../../src/index.ts';
import {
  BackendUnavailableError,
  ConflictError,
  ErrorCode,
  FencedError,
  InvalidArgumentError,
  LeaseExpiredError,
  LeaseHeldError,
  MAX_ID_LENGTH,
  NotFoundError,
  openBackend,
  SchemaMismatchError,
  WorkleaseError,
} from '../../src/index.ts';
import { allTargets, type BackendTarget, openIsolated, uniqueNamespace } from '../support/backends.ts';
import { dropConnections, dropNamespace, hasServerConnections } from '../support/faults.ts';
import { quietCursor } from '../support/feed.ts';
import { tokenSeeder } from '../support/tokens.ts';

/** Long enough that a lease cannot run out during a case. */
const LIVE = 30_000;
/** Short enough that waiting it out keeps the suite fast. */
const SHORT = 100;
/** A small checkpoint limit, so the over-limit case is cheap; every payload here fits. */
const MAX_STATE = 1024;
/** Longest a single call may take around a dropped connection before we call it a hang. */
const LIVENESS_MS = 15_000;

export function targetFor(kind: BackendKind): BackendTarget {
  const target = allTargets().find((t) => t.kind === kind);
  if (target === undefined) throw new Error(`no test target for ${kind}`);
  return target;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function bytes(...values: number[]): Uint8Array {
  return Uint8Array.from(values);
}

/** Rejects when `promise` does not settle in time, so a hang fails the case instead of the whole file. */
async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function summarize(err: unknown): Record<string, unknown> {
  return err instanceof Error
    ? { name: err.name, code: (err as { code?: unknown }).code, message: err.message }
    : { thrown: err };
}

/**
 * Runs `call` and asserts it fails with exactly this class and code. A thunk,
 * so a backend that throws synchronously is caught too.
 */
async function expectError<E extends WorkleaseError>(
  call: () => Promise<unknown>,
  Cls: new (message: string) => E,
  code: ErrorCode,
): Promise<E> {
  let result: unknown;
  try {
    result = await call();
  } catch (err) {
    expect(summarize(err)).toMatchObject({ code });
    expect(err).toBeInstanceOf(Cls);
    expect(err).toBeInstanceOf(WorkleaseError);
    return err as E;
  }
  throw new Error(`expected ${code}, but the call succeeded with ${String(result)}`);
}

/** Asserts (token, version) strictly increases along the list, lexicographically. */
function expectIncreasing(points: { fencingToken: bigint; version: bigint }[]): void {
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1]!;
    const b = points[i]!;
    const later =
      b.fencingToken > a.fencingToken || (b.fencingToken === a.fencingToken && b.version > a.version);
    expect(
      later,
      `(token, version) must strictly increase: (${a.fencingToken}, ${a.version}) then (${b.fencingToken}, ${b.version})`,
    ).toBe(true);
  }
}

/**
 * The token rule (DESIGN §2, docs/durability.md): a new token is above the previous one (when there
 * is one) and not below the server clock in µs at the call (`before` = serverTime() read just before
 * it; PGlite's clock has ms resolution, hence the whole-ms floor).
 */
function expectNextToken(token: bigint, previous: bigint | null, before: Date): void {
  if (previous !== null) expect(token > previous, `token ${token} must exceed ${previous}`).toBe(true);
  expect(
    token >= BigInt(before.getTime()) * 1000n,
    `token ${token} must not be below the server clock in µs (${before.getTime()} ms)`,
  ).toBe(true);
}

function samePoint(
  a: { fencingToken: bigint; version: bigint },
  b: { fencingToken: bigint; version: bigint },
): boolean {
  return a.fencingToken === b.fencingToken && a.version === b.version;
}

/** True when a Uint8Array (a checkpoint payload) is anywhere inside `value`. */
function holdsBytes(value: unknown, depth = 0): boolean {
  if (value instanceof Uint8Array || value instanceof ArrayBuffer) return true;
  if (depth > 6 || typeof value !== 'object' || value === null || value instanceof Date) return false;
  return Object.values(value).some((v) => holdsBytes(v, depth + 1));
}

export function defineConformance(target: BackendTarget): void {
  describe(`lease contract on ${target.kind}`, () => {
    const namespace = uniqueNamespace(`conf_${target.kind.replace('-', '_')}`);
    const namespaces = new Set<string>([namespace]);
    const opened: LeaseBackend[] = [];
    let b: LeaseBackend;
    let seq = 0;
    /** A work id no other case uses. */
    const wid = (tag: string): string => `${tag}-${++seq}`;

    async function open(ns = namespace, extra: OpenOptions = {}): Promise<LeaseBackend> {
      namespaces.add(ns);
      const backend = await openIsolated(target, ns, extra);
      opened.push(backend);
      return backend;
    }

    /** Waits until the server's clock is past `expiresAt` (plus a little), bounded. */
    async function waitPast(expiresAt: Date, backend: LeaseBackend = b): Promise<void> {
      const now = await backend.admin.serverTime();
      await sleep(Math.min(2_000, Math.max(0, expiresAt.getTime() - now.getTime())) + 30);
    }

    /** The stored lease, which must exist. */
    async function info(workId: string, backend: LeaseBackend = b): Promise<LeaseInfo> {
      const got = await backend.admin.get(workId);
      expect(got, `admin.get(${workId})`).not.toBeNull();
      return got!;
    }

    /** A lease held by `holder` that has already run out (by the server's clock). */
    async function expiredLease(workId: string, holder: string, state?: Uint8Array): Promise<LeaseRecord> {
      const rec = await b.acquire(workId, holder, LIVE);
      // The checkpoint/renew shortens the lease so the setup call itself cannot run into the expiry.
      if (state === undefined) await b.renew(rec, SHORT);
      else await b.checkpoint(rec, state, SHORT);
      await waitPast((await info(workId)).expiresAt);
      return rec;
    }

    beforeAll(async () => {
      // One backend per file: opening PGlite compiles Postgres to WASM, which takes seconds.
      b = await open(namespace, { maxStateBytes: MAX_STATE });
    });

    afterAll(async () => {
      for (const backend of opened) await backend.close().catch(() => {});
      for (const ns of namespaces) await dropNamespace(target, ns);
    });

    it('reports its kind, URL and checkpoint size limit', () => {
      expect(b.kind).toBe(target.kind);
      // The effective namespace is part of the reported URL (see the URL grammar block below).
      expect(b.url).toBe(withQuery(target.url, `${namespaceOption(target)}=${namespace}`));
      expect(b.maxStateBytes).toBe(MAX_STATE);
    });

    describe('acquire', () => {
      it('on a fresh work item: a token from the server clock, clean handoff, no state', async () => {
        const w = wid('fresh');
        const t0 = await b.admin.serverTime();
        const rec = await b.acquire(w, 'h1', LIVE);
        const t1 = await b.admin.serverTime();
        expect(rec.workId).toBe(w);
        expect(rec.holderId).toBe('h1');
        expectNextToken(rec.fencingToken, null, t0);
        // The clock floor, not more: below the server time in µs after the call (+1 ms of resolution).
        expect(rec.fencingToken <= (BigInt(t1.getTime()) + 1n) * 1000n).toBe(true);
        expect(rec.expiresAt).toBeInstanceOf(Date);
        expect(await b.readCheckpoint(rec)).toEqual({ state: null, cleanHandoff: true });
        expect(await info(w)).toMatchObject({
          workId: w,
          holderId: 'h1',
          fencingToken: rec.fencingToken,
          cleanHandoff: true,
          predecessorEnd: 'none',
          ended: null,
          checkpointSize: null,
        });
      });

      it('accepts ids of exactly MAX_ID_LENGTH and any well-formed Unicode, and returns them unchanged', async () => {
        const longWork = `${wid('long')}-`.padEnd(MAX_ID_LENGTH, 'w');
        const longHolder = 'h'.repeat(MAX_ID_LENGTH);
        const longStep = 's'.repeat(MAX_ID_LENGTH);
        const rec = await b.acquire(longWork, longHolder, LIVE, { stepId: longStep });
        expect(rec.workId).toBe(longWork);
        expect(rec.holderId).toBe(longHolder);
        expect(await info(longWork)).toMatchObject({
          workId: longWork,
          holderId: longHolder,
          stepId: longStep,
        });

        const uni = `${wid('uni')}-zé-日本-🙂-{tag}:x%_*?[\\`;
        const rec2 = await b.acquire(uni, 'hölder-🙂', LIVE);
        expect(rec2).toMatchObject({ workId: uni, holderId: 'hölder-🙂' });
        expect(await info(uni)).toMatchObject({ workId: uni, holderId: 'hölder-🙂' });
      });

      it('on a live lease: LEASE_HELD, for another holder and for the same holder, and nothing changes', async () => {
        const w = wid('held');
        await b.acquire(w, 'h1', LIVE);
        const before = await info(w);
        await expectError(() => b.acquire(w, 'h2', LIVE), LeaseHeldError, ErrorCode.LEASE_HELD);
        await expectError(() => b.acquire(w, 'h1', LIVE), LeaseHeldError, ErrorCode.LEASE_HELD);
        expect(await info(w)).toEqual(before);
        // The refusal names the holder and when its lease runs out, as stored.
        const held = await b.acquire(w, 'h2', LIVE).catch((e: WorkleaseError) => e);
        expect((held as WorkleaseError).details).toMatchObject({
          workId: w,
          holderId: 'h1',
          expiresAt: before.expiresAt,
        });
        expect((held as Error).message).toContain("held by 'h1'");
      });

      it('sets expiresAt to the server time plus ttl', async () => {
        const w = wid('expiry');
        const t0 = (await b.admin.serverTime()).getTime();
        const rec = await b.acquire(w, 'h1', 60_000);
        const t1 = (await b.admin.serverTime()).getTime();
        expect(rec.expiresAt.getTime()).toBeGreaterThanOrEqual(t0 + 60_000 - 1_000);
        expect(rec.expiresAt.getTime()).toBeLessThanOrEqual(t1 + 60_000 + 1_000);
        expect((await info(w)).expiresAt.getTime()).toBe(rec.expiresAt.getTime());
      });

      it('after expiry: a higher token, a takeover (not clean), and the previous checkpoint is kept', async () => {
        const w = wid('takeover');
        const r1 = await expiredLease(w, 'h1', bytes(1, 2, 3));
        const t0 = await b.admin.serverTime();
        const rec = await b.acquire(w, 'h2', LIVE);
        expectNextToken(rec.fencingToken, r1.fencingToken, t0);
        const read = await b.readCheckpoint(rec);
        expect(read.cleanHandoff).toBe(false);
        expect(Array.from(read.state ?? [])).toEqual([1, 2, 3]);
        expect(await info(w)).toMatchObject({
          holderId: 'h2',
          fencingToken: rec.fencingToken,
          cleanHandoff: false,
          predecessorEnd: 'expired',
          ended: null,
          checkpointSize: 3,
        });
      });

      it('after expiry the same holder may take its own lease back, as a takeover', async () => {
        const w = wid('self-takeover');
        const r1 = await expiredLease(w, 'h1');
        const rec = await b.acquire(w, 'h1', LIVE);
        expect(rec.fencingToken > r1.fencingToken).toBe(true);
        expect((await b.readCheckpoint(rec)).cleanHandoff).toBe(false);
      });

      it('after release: a higher token, a clean handoff, and the checkpoint is kept', async () => {
        const w = wid('handoff');
        const r1 = await b.acquire(w, 'h1', LIVE);
        await b.checkpoint(r1, bytes(9, 8, 7), LIVE);
        await b.release(r1);
        const r2 = await b.acquire(w, 'h2', LIVE);
        expect(r2.fencingToken > r1.fencingToken).toBe(true);
        const read = await b.readCheckpoint(r2);
        expect(read.cleanHandoff).toBe(true);
        expect(Array.from(read.state ?? [])).toEqual([9, 8, 7]);
        expect(await info(w)).toMatchObject({
          holderId: 'h2',
          cleanHandoff: true,
          predecessorEnd: 'released',
          ended: null,
        });
      });

      it('tokens strictly increase and never repeat across acquire, release, expiry, force-release and prune', async () => {
        const w = wid('tokens');
        const wLive = wid('tokens-live');
        const wExpired = wid('tokens-expired');
        const seen: bigint[] = [];

        const r1 = await b.acquire(w, 'a', LIVE);
        seen.push(r1.fencingToken);
        await b.release(r1);
        const r2 = await b.acquire(w, 'b', LIVE);
        seen.push(r2.fencingToken);
        await b.renew(r2, SHORT);
        await waitPast((await info(w)).expiresAt);
        const r3 = await b.acquire(w, 'c', LIVE);
        seen.push(r3.fencingToken);
        const forced = await b.admin.forceRelease(w, {
          expectedToken: r3.fencingToken,
          operator: 'op',
          reason: 'test',
        });
        seen.push(forced.fencingToken);
        const r5 = await b.acquire(w, 'd', LIVE);
        seen.push(r5.fencingToken);
        await b.checkpoint(r5, bytes(5), LIVE);
        await b.release(r5);
        for (let i = 1; i < seen.length; i++) expect(seen[i]! > seen[i - 1]!, `${seen}`).toBe(true);

        const live = await b.acquire(wLive, 'e', LIVE);
        const expiredRec = await expiredLease(wExpired, 'x');
        await sleep(20);
        const pruned = await b.admin.prune({ olderThanMs: 0 });
        expect(pruned).toBeGreaterThanOrEqual(2);
        expect(await b.admin.get(w)).toBeNull();
        expect(await b.admin.get(wExpired)).toBeNull();
        expect(await b.admin.readState(w)).toBeNull();
        // A live lease is not ended, so prune keeps it.
        expect(await info(wLive)).toMatchObject({
          holderId: 'e',
          fencingToken: live.fencingToken,
          ended: null,
        });

        const r6 = await b.acquire(w, 'f', LIVE);
        expect(r6.fencingToken > seen[seen.length - 1]!).toBe(true);
        // The checkpoint went with the pruned item.
        expect((await b.readCheckpoint(r6)).state).toBeNull();
        // The tombstone keeps the last token: the next one is above it, and not from the clock alone.
        const t0 = await b.admin.serverTime();
        expectNextToken((await b.acquire(wExpired, 'y', LIVE)).fencingToken, expiredRec.fencingToken, t0);
      });
    });

    describe('tokens beyond what the API hands out', () => {
      it('stay exact integers across 2^53: acquire, force-release, fencing, audit and the change feed', {
        timeout: 60_000,
      }, async () => {
        const seeder = await tokenSeeder(target);
        try {
          const w = wid('big');
          const base = 2n ** 53n - 2n;
          const r0 = await seeder.backend.acquire(w, 'h0', LIVE);
          await seeder.backend.release(r0);
          await seeder.set(w, base);
          let sb = seeder.backend;
          const cursor = await sb.admin.changeCursor();

          const r1 = await sb.acquire(w, 'h1', LIVE);
          expect(r1.fencingToken).toBe(base + 1n); // 2^53 - 1: the last double-exact integer
          await sb.checkpoint(r1, bytes(1), LIVE);
          expect((await sb.renew(r1, LIVE)).fencingToken).toBe(base + 1n);
          expect(Array.from((await sb.readCheckpoint(r1)).state ?? [])).toEqual([1]);
          await sb.release(r1);
          const r2 = await sb.acquire(w, 'h2', LIVE);
          expect(r2.fencingToken).toBe(2n ** 53n);
          const forced = await sb.admin.forceRelease(w, {
            expectedToken: 2n ** 53n,
            operator: 'op',
            reason: 'boundary',
          });
          expect(forced.fencingToken).toBe(2n ** 53n + 1n); // not representable as a double
          const r3 = await sb.acquire(w, 'h3', LIVE);
          expect(r3.fencingToken).toBe(2n ** 53n + 2n);
          // Tokens one apart must not compare equal: the stale ones are fenced, the live one is not.
          for (const stale of [
            r2,
            { ...r3, fencingToken: 2n ** 53n + 1n },
            { ...r3, fencingToken: 2n ** 53n + 3n },
          ]) {
            await expectError(() => sb.renew(stale, LIVE), FencedError, ErrorCode.FENCED);
            await expectError(() => sb.checkpoint(stale, bytes(9), LIVE), FencedError, ErrorCode.FENCED);
          }
          await sb.checkpoint(r3, bytes(3), LIVE);
          expect(await sb.admin.get(w)).toMatchObject({ fencingToken: 2n ** 53n + 2n, checkpointSize: 1 });
          expect(await sb.admin.readState(w)).toMatchObject({ fencingToken: 2n ** 53n + 2n });
          const [entry] = await sb.admin.audit({ workId: w });
          expect(entry).toMatchObject({ oldToken: 2n ** 53n, newToken: 2n ** 53n + 1n });
          const batch = await sb.admin.changes({ cursor, limit: 1000 });
          const mine = batch.changes.filter((c) => c.workId === w);
          expect(mine.length).toBeGreaterThan(0);
          expect(mine[mine.length - 1]!.fencingToken).toBe(2n ** 53n + 2n);

          // Near the top of the range the +1 still holds exactly (PostgreSQL bigint ends at 2^63 - 1).
          await sb.release(r3);
          await seeder.set(w, 2n ** 62n);
          sb = seeder.backend;
          let live = await sb.acquire(w, 'h4', LIVE);
          expect(live.fencingToken).toBe(2n ** 62n + 1n);
          // The +1 carries over 9s, inside the number and into one more digit.
          for (const [seed, next] of [
            [5_000_000_000_000_009_999n, 5_000_000_000_000_010_000n],
            [999_999_999_999_999_999n, 1_000_000_000_000_000_000n],
          ] as const) {
            await sb.release(live);
            await seeder.set(w, seed);
            sb = seeder.backend;
            live = await sb.acquire(w, 'h5', LIVE);
            expect(live.fencingToken).toBe(next);
          }
        } finally {
          await seeder.close();
        }
      });

      it('after the backend lost its latest writes, a new token is still above every token handed out', {
        timeout: 60_000,
      }, async () => {
        // What a restored backup or a promoted asynchronous replica looks like to the next call: the
        // stored token is back where it was, or the work item is gone. The clock floor (token rule)
        // puts the next token above the lost ones (docs/durability.md).
        const seeder = await tokenSeeder(target);
        try {
          const w = wid('lost');
          const gone = wid('lost-item');
          const r1 = await seeder.backend.acquire(w, 'h1', LIVE);
          await seeder.backend.release(r1);
          const r2 = await seeder.backend.acquire(w, 'h2', LIVE);
          const g1 = await seeder.backend.acquire(gone, 'g', LIVE);
          await seeder.set(w, r1.fencingToken); // the write that handed out r2 was lost
          await seeder.set(gone, null); // the whole item was lost
          const sb = seeder.backend;
          // Only the stored token went back; let the lost lease run out as well.
          await sb.admin
            .forceRelease(w, { expectedToken: r1.fencingToken, operator: 'op', reason: 'lost' })
            .then((f) => expect(f.fencingToken > r2.fencingToken).toBe(true));
          const r3 = await sb.acquire(w, 'h3', LIVE);
          expect(r3.fencingToken > r2.fencingToken, `${r3.fencingToken} after ${r2.fencingToken}`).toBe(true);
          const g2 = await sb.acquire(gone, 'g2', LIVE);
          expect(g2.fencingToken > g1.fencingToken, `${g2.fencingToken} after ${g1.fencingToken}`).toBe(true);
          // The holder of the lost lease is fenced by the new token.
          await expectError(() => sb.renew(r2, LIVE), FencedError, ErrorCode.FENCED);
        } finally {
          await seeder.close();
        }
      });
    });

    describe('checkpoint', () => {
      it('stores binary state exactly and extends the expiry; the successor reads the last state', async () => {
        const w = wid('ckpt');
        const all = Uint8Array.from({ length: 256 }, (_, i) => i);
        const payload = new Uint8Array([0, 0, 255, 255, ...all, 0xff, 0x00]);
        const r1 = await b.acquire(w, 'h1', 1_000);
        await b.checkpoint(r1, payload, LIVE);
        const stored = await info(w);
        expect(stored.expiresAt.getTime()).toBeGreaterThan(r1.expiresAt.getTime() + 20_000);
        expect(stored.checkpointSize).toBe(payload.byteLength);
        expect(stored.checkpointedAt).toBeInstanceOf(Date);
        expect(stored.ttlMs).toBe(LIVE);
        const read = await b.readCheckpoint(r1);
        expect(read.state).toBeInstanceOf(Uint8Array);
        expect(Array.from(read.state!)).toEqual(Array.from(payload));

        // A view into a larger buffer: only the viewed bytes are the state.
        const backing = bytes(0xee, 0xee, 1, 0, 2, 0xee);
        await b.checkpoint(r1, backing.subarray(2, 5), LIVE);
        expect(Array.from((await b.readCheckpoint(r1)).state!)).toEqual([1, 0, 2]);
        await b.checkpoint(r1, Buffer.from([0xff, 0x00, 0x7f]), LIVE);

        await b.release(r1);
        const r2 = await b.acquire(w, 'h2', LIVE);
        expect(Array.from((await b.readCheckpoint(r2)).state!)).toEqual([0xff, 0x00, 0x7f]);
      });

      it('stores an empty Uint8Array as empty state, not as no state', async () => {
        const w = wid('empty');
        const r1 = await b.acquire(w, 'h1', LIVE);
        await b.checkpoint(r1, bytes(1, 2), LIVE);
        await b.checkpoint(r1, new Uint8Array(0), LIVE);
        const read = await b.readCheckpoint(r1);
        expect(read.state).toBeInstanceOf(Uint8Array);
        expect(read.state!.byteLength).toBe(0);
        expect((await info(w)).checkpointSize).toBe(0);
        await b.release(r1);
        const r2 = await b.acquire(w, 'h2', LIVE);
        const next = await b.readCheckpoint(r2);
        expect(next.state).toBeInstanceOf(Uint8Array);
        expect(next.state!.byteLength).toBe(0);
      });

      it('FENCED after someone else acquired; nothing is written', async () => {
        const w = wid('ckpt-fenced');
        const r1 = await expiredLease(w, 'h1', bytes(1));
        const r2 = await b.acquire(w, 'h2', LIVE);
        const before = await info(w);
        await expectError(() => b.checkpoint(r1, bytes(2), LIVE), FencedError, ErrorCode.FENCED);
        expect(await info(w)).toEqual(before);
        expect(Array.from((await b.readCheckpoint(r2)).state!)).toEqual([1]);
      });

      it('LEASE_EXPIRED when the token matches but the lease ran out; nothing is written', async () => {
        const w = wid('ckpt-expired');
        const r1 = await expiredLease(w, 'h1', bytes(1));
        const before = await info(w);
        await expectError(() => b.checkpoint(r1, bytes(2), LIVE), LeaseExpiredError, ErrorCode.LEASE_EXPIRED);
        expect(await info(w)).toEqual(before);
        expect(Array.from((await b.readCheckpoint(r1)).state!)).toEqual([1]);
      });
    });

    describe('renew', () => {
      it('returns the same token with a later expiry', async () => {
        const w = wid('renew');
        const r1 = await b.acquire(w, 'h1', 1_000);
        const r2 = await b.renew(r1, LIVE);
        expect(r2.workId).toBe(w);
        expect(r2.holderId).toBe('h1');
        expect(r2.fencingToken).toBe(r1.fencingToken);
        expect(r2.expiresAt.getTime()).toBeGreaterThan(r1.expiresAt.getTime());
        const stored = await info(w);
        expect(stored.expiresAt.getTime()).toBe(r2.expiresAt.getTime());
        expect(stored.ttlMs).toBe(LIVE);
        expect(stored.renewedAt).toBeInstanceOf(Date);
        // The record's expiresAt is informational: the token decides, so the first record still renews.
        const r3 = await b.renew(r1, LIVE + 1_000);
        expect(r3.fencingToken).toBe(r1.fencingToken);
        expect(r3.expiresAt.getTime()).toBeGreaterThan(r1.expiresAt.getTime());
      });

      it('FENCED after someone else acquired; nothing is written', async () => {
        const w = wid('renew-fenced');
        const r1 = await expiredLease(w, 'h1');
        await b.acquire(w, 'h2', LIVE);
        const before = await info(w);
        await expectError(() => b.renew(r1, LIVE), FencedError, ErrorCode.FENCED);
        expect(await info(w)).toEqual(before);
      });

      it('LEASE_EXPIRED when the lease ran out; it is not revived', async () => {
        const w = wid('renew-expired');
        const r1 = await expiredLease(w, 'h1');
        const before = await info(w);
        await expectError(() => b.renew(r1, LIVE), LeaseExpiredError, ErrorCode.LEASE_EXPIRED);
        expect(await info(w)).toEqual(before);
        const r2 = await b.acquire(w, 'h2', LIVE);
        expect(r2.fencingToken > r1.fencingToken).toBe(true);
      });
    });

    describe('release', () => {
      it('ends the lease 1 ms in the past, so another holder acquires at once, cleanly', async () => {
        const w = wid('release');
        const r1 = await b.acquire(w, 'h1', LIVE);
        await b.release(r1);
        const stored = await info(w);
        const now = await b.admin.serverTime();
        expect(stored.ended).toBe('released');
        expect(stored.releasedAt).toBeInstanceOf(Date);
        expect(stored.expiresAt.getTime()).toBeLessThan(now.getTime());
        const r2 = await b.acquire(w, 'h2', LIVE);
        expect(r2.fencingToken > r1.fencingToken).toBe(true);
        expect(await b.readCheckpoint(r2)).toEqual({ state: null, cleanHandoff: true });
      });

      it('FENCED after someone else acquired; the new lease is untouched', async () => {
        const w = wid('release-fenced');
        const r1 = await expiredLease(w, 'h1');
        await b.acquire(w, 'h2', LIVE);
        const before = await info(w);
        await expectError(() => b.release(r1), FencedError, ErrorCode.FENCED);
        expect(await info(w)).toEqual(before);
        await expectError(() => b.acquire(w, 'h3', LIVE), LeaseHeldError, ErrorCode.LEASE_HELD);
      });

      it('LEASE_EXPIRED on an expired lease: it cannot claim a clean handoff', async () => {
        const w = wid('release-expired');
        const r1 = await expiredLease(w, 'h1');
        const before = await info(w);
        await expectError(() => b.release(r1), LeaseExpiredError, ErrorCode.LEASE_EXPIRED);
        expect(await info(w)).toEqual(before);
        const r2 = await b.acquire(w, 'h2', LIVE);
        expect((await b.readCheckpoint(r2)).cleanHandoff).toBe(false);
        expect((await info(w)).predecessorEnd).toBe('expired');
      });

      it('a second release is LEASE_EXPIRED (the first set expires_at in the past) and changes nothing', async () => {
        const w = wid('release-twice');
        const r1 = await b.acquire(w, 'h1', LIVE);
        await b.release(r1);
        const before = await info(w);
        await expectError(() => b.release(r1), LeaseExpiredError, ErrorCode.LEASE_EXPIRED);
        expect(await info(w)).toEqual(before);
        const r2 = await b.acquire(w, 'h2', LIVE);
        expect((await b.readCheckpoint(r2)).cleanHandoff).toBe(true);
      });
    });

    describe('readCheckpoint', () => {
      it('returns the latest state and whether the lease began cleanly', async () => {
        const w = wid('read');
        const r1 = await b.acquire(w, 'h1', LIVE);
        expect(await b.readCheckpoint(r1)).toEqual({ state: null, cleanHandoff: true });
        await b.checkpoint(r1, bytes(4, 5), LIVE);
        const read = await b.readCheckpoint(r1);
        expect(read.cleanHandoff).toBe(true);
        expect(Array.from(read.state!)).toEqual([4, 5]);
      });

      it('FENCED for a stale record, and for a token the item never had', async () => {
        const w = wid('read-fenced');
        const r1 = await b.acquire(w, 'h1', LIVE);
        await b.release(r1);
        const r2 = await b.acquire(w, 'h2', LIVE);
        await expectError(() => b.readCheckpoint(r1), FencedError, ErrorCode.FENCED);
        await expectError(
          () => b.readCheckpoint({ ...r2, fencingToken: r2.fencingToken + 10n }),
          FencedError,
          ErrorCode.FENCED,
        );
      });

      it('works on an expired or released lease while the token still matches (it only reads)', async () => {
        const w = wid('read-expired');
        const r1 = await expiredLease(w, 'h1', bytes(4, 2));
        expect(Array.from((await b.readCheckpoint(r1)).state!)).toEqual([4, 2]);
        expect((await b.readCheckpoint(r1)).cleanHandoff).toBe(true);

        const w2 = wid('read-released');
        const r2 = await b.acquire(w2, 'h1', LIVE);
        await b.checkpoint(r2, bytes(7), LIVE);
        await b.release(r2);
        expect(Array.from((await b.readCheckpoint(r2)).state!)).toEqual([7]);
      });
    });

    describe('admin', () => {
      it('get returns every field, and (token, version) increases on every write', async () => {
        const w = wid('get');
        const t0 = (await b.admin.serverTime()).getTime();
        const r1 = await b.acquire(w, 'h1', 5_000, { stepId: 'step-1' });
        const t1 = (await b.admin.serverTime()).getTime();
        const afterAcquire = await info(w);
        expect(afterAcquire).toEqual({
          workId: w,
          holderId: 'h1',
          fencingToken: r1.fencingToken,
          expiresAt: r1.expiresAt,
          ttlMs: 5_000,
          stepId: 'step-1',
          acquiredAt: expect.any(Date),
          renewedAt: null,
          checkpointedAt: null,
          releasedAt: null,
          checkpointSize: null,
          cleanHandoff: true,
          predecessorEnd: 'none',
          ended: null,
          releaseRequest: null,
          version: expect.any(BigInt),
          // Backends whose feed coalesces writes count handoffs in the row (see LeaseInfo.handoffs).
          ...(afterAcquire.handoffs === undefined
            ? {}
            : { handoffs: { acquisitions: 1, releases: 0, forceReleases: 0 } }),
          // Backends with holds (docs/history.md) say a work item is not held.
          ...(afterAcquire.hold === undefined ? {} : { hold: null }),
        });
        const acquiredAt = afterAcquire.acquiredAt.getTime();
        expect(acquiredAt).toBeGreaterThanOrEqual(t0 - 1_000);
        expect(acquiredAt).toBeLessThanOrEqual(t1 + 1_000);
        expect(Math.abs(afterAcquire.expiresAt.getTime() - 5_000 - acquiredAt)).toBeLessThanOrEqual(5);

        const r2 = await b.renew(r1, 6_000);
        const afterRenew = await info(w);
        expect(afterRenew).toMatchObject({
          ttlMs: 6_000,
          expiresAt: r2.expiresAt,
          stepId: 'step-1',
          ended: null,
        });
        expect(afterRenew.renewedAt).toBeInstanceOf(Date);
        expect(
          Math.abs(afterRenew.expiresAt.getTime() - 6_000 - afterRenew.renewedAt!.getTime()),
        ).toBeLessThanOrEqual(5);
        expect(afterRenew.acquiredAt).toEqual(afterAcquire.acquiredAt);

        await b.checkpoint(r1, bytes(1, 2, 3), 7_000);
        const afterCheckpoint = await info(w);
        expect(afterCheckpoint).toMatchObject({ ttlMs: 7_000, checkpointSize: 3, ended: null });
        expect(afterCheckpoint.checkpointedAt).toBeInstanceOf(Date);
        expect(
          Math.abs(afterCheckpoint.expiresAt.getTime() - 7_000 - afterCheckpoint.checkpointedAt!.getTime()),
        ).toBeLessThanOrEqual(5);
        // A checkpoint extends the lease, so it is a heartbeat too: renewedAt moves with it.
        expect(afterCheckpoint.renewedAt).toEqual(afterCheckpoint.checkpointedAt);

        await b.release(r1);
        const afterRelease = await info(w);
        expect(afterRelease).toMatchObject({
          holderId: 'h1',
          fencingToken: r1.fencingToken,
          ended: 'released',
          checkpointSize: 3,
        });
        expect(afterRelease.releasedAt).toBeInstanceOf(Date);
        // release sets expires_at = now - 1 ms.
        expect(afterRelease.releasedAt!.getTime() - afterRelease.expiresAt.getTime()).toBeGreaterThanOrEqual(
          0,
        );
        expect(afterRelease.releasedAt!.getTime() - afterRelease.expiresAt.getTime()).toBeLessThanOrEqual(5);

        const r3 = await b.acquire(w, 'h2', LIVE);
        const afterReacquire = await info(w);
        expect(afterReacquire).toMatchObject({
          holderId: 'h2',
          fencingToken: r3.fencingToken,
          expiresAt: r3.expiresAt,
          ttlMs: LIVE,
          stepId: null,
          checkpointSize: 3,
          cleanHandoff: true,
          predecessorEnd: 'released',
          ended: null,
          renewedAt: null,
          releasedAt: null,
          // The checkpoint (and when it was written) passes to the successor with its bytes.
          checkpointedAt: afterCheckpoint.checkpointedAt,
        });

        const afterForce = await b.admin.forceRelease(w, {
          expectedToken: r3.fencingToken,
          operator: 'op',
          reason: 'test',
        });
        expect(await info(w)).toEqual(afterForce);
        if (afterAcquire.handoffs !== undefined) {
          // Every acquisition, release and force-release counted once; renew and checkpoint are not handoffs.
          expect(
            [afterRenew, afterCheckpoint, afterRelease, afterReacquire, afterForce].map((x) => x.handoffs),
          ).toEqual([
            { acquisitions: 1, releases: 0, forceReleases: 0 },
            { acquisitions: 1, releases: 0, forceReleases: 0 },
            { acquisitions: 1, releases: 1, forceReleases: 0 },
            { acquisitions: 2, releases: 1, forceReleases: 0 },
            { acquisitions: 2, releases: 1, forceReleases: 1 },
          ]);
        }
        expectIncreasing([
          afterAcquire,
          afterRenew,
          afterCheckpoint,
          afterRelease,
          afterReacquire,
          afterForce,
        ]);
        // Within one lease the version itself must move, not only the token.
        expect(afterRenew.version).toBeGreaterThan(afterAcquire.version);
        expect(afterCheckpoint.version).toBeGreaterThan(afterRenew.version);
        expect(afterRelease.version).toBeGreaterThan(afterCheckpoint.version);
      });

      it('get of an unknown work id is null', async () => {
        expect(await b.admin.get(wid('unknown'))).toBeNull();
      });

      it('list pages through every item exactly once, in work id order', async () => {
        const base = `${wid('list')}/`;
        const plain = Array.from({ length: 23 }, (_, i) => `${base}i${String(i).padStart(3, '0')}`);
        const odd = ['z-a', 'z_a', 'zA', 'z:é', 'z🙂', 'z{tag}x', 'z~', 'Z'].map((s) => base + s);
        const ids = [...plain, ...odd];
        const tokens = new Map(
          (await Promise.all(ids.map((id) => b.acquire(id, 'lister', LIVE)))).map((r) => [
            r.workId,
            r.fencingToken,
          ]),
        );
        await b.acquire(`${wid('listx')}/outside`, 'lister', LIVE);

        for (const limit of [1, 4, 10_000]) {
          const seen: string[] = [];
          let cursor: string | null = null;
          for (let page = 0; page < 200; page++) {
            const res: LeasePage = await b.admin.list({
              workIdPrefix: base,
              limit,
              cursor,
            });
            expect(res.items.length).toBeLessThanOrEqual(limit);
            for (const item of res.items) {
              expect(item).toMatchObject({ holderId: 'lister', fencingToken: tokens.get(item.workId) });
              seen.push(item.workId);
            }
            cursor = res.nextCursor;
            if (cursor === null) break;
          }
          expect(cursor, `the walk with limit ${limit} must end`).toBeNull();
          expect([...seen].sort()).toEqual([...ids].sort());
          expect(new Set(seen).size).toBe(seen.length);
          expect(seen.filter((id) => plain.includes(id))).toEqual(plain);
          if (limit === 10_000) expect(seen).toHaveLength(ids.length);
        }
      });

      it('list lists every item that exists for the whole walk exactly once while another task keeps writing', async () => {
        const base = `${wid('stable')}/`;
        const ids = Array.from({ length: 30 }, (_, i) => `${base}${String(i).padStart(3, '0')}`);
        const records = await Promise.all(ids.map((id) => b.acquire(id, 'stable', LIVE)));
        let stop = false;
        let writes = 0;
        const writer = (async () => {
          for (let k = 0; !stop; k++) {
            const rec = records[k % records.length]!;
            await b.renew(rec, LIVE);
            if (k % 3 === 0) await b.checkpoint(rec, bytes(k & 0xff), LIVE);
            if (k % 5 === 0) await b.acquire(`${base}${String(k).padStart(3, '0')}-new`, 'stable', LIVE);
            writes++;
            // An in-process backend may resolve without ever yielding to timers; let the walker run.
            await sleep(0);
          }
        })();
        const seen: string[] = [];
        let cursor: string | null = null;
        try {
          for (let page = 0; page < 500; page++) {
            const res: LeasePage = await b.admin.list({
              workIdPrefix: base,
              limit: 3,
              cursor,
            });
            seen.push(...res.items.map((i) => i.workId));
            cursor = res.nextCursor;
            if (cursor === null) break;
            // Give the writer a turn between pages even on an in-process backend.
            await sleep(1);
          }
        } finally {
          stop = true;
          await writer;
        }
        expect(cursor).toBeNull();
        expect(writes, 'the writer must have written during the walk').toBeGreaterThan(0);
        for (const id of ids)
          expect(
            seen.filter((s) => s === id),
            id,
          ).toHaveLength(1);
        expect(new Set(seen).size).toBe(seen.length);
      });

      it('list filters by holderId: the current or last holder', async () => {
        const base = `${wid('byholder')}/`;
        const hA = `${base}hA`;
        const hB = `${base}hB`;
        const a = await Promise.all(['a1', 'a2', 'a3'].map((s) => b.acquire(base + s, hA, LIVE)));
        await Promise.all(['b1', 'b2', 'b3'].map((s) => b.acquire(base + s, hB, LIVE)));
        await b.release(a[2]!);
        const moved = await b.acquire(`${base}x`, hB, LIVE);
        await b.release(moved);
        await b.acquire(`${base}x`, hA, LIVE);

        const names = async (holderId: string, workIdPrefix?: string): Promise<string[]> => {
          const res = await b.admin.list(
            workIdPrefix === undefined ? { holderId, limit: 100 } : { holderId, workIdPrefix, limit: 100 },
          );
          expect(res.nextCursor).toBeNull();
          return res.items.map((i) => i.workId.slice(base.length)).sort();
        };
        expect(await names(hA)).toEqual(['a1', 'a2', 'a3', 'x']);
        expect(await names(hB)).toEqual(['b1', 'b2', 'b3']);
        expect(await names(hA, `${base}a`)).toEqual(['a1', 'a2', 'a3']);
        expect(await names(`${base}nobody`)).toEqual([]);
      });

      it('list workIdPrefix is literal: % _ * ? [ \\ { match only themselves', async () => {
        const base = `${wid('lit')}/`;
        const suffixes = ['%a', '_b', 'xa', 'xb', '*c', '?d', '[e]', '\\f', '%_g', 'Ab', '{h}', 'ab'];
        await Promise.all(suffixes.map((s) => b.acquire(base + s, 'lit', LIVE)));
        const match = async (prefix: string): Promise<string[]> => {
          const res = await b.admin.list({ workIdPrefix: base + prefix, limit: 100 });
          expect(res.nextCursor).toBeNull();
          return res.items.map((i) => i.workId.slice(base.length)).sort();
        };
        expect(await match('%')).toEqual(['%_g', '%a']);
        expect(await match('%_')).toEqual(['%_g']);
        expect(await match('_')).toEqual(['_b']);
        expect(await match('*')).toEqual(['*c']);
        expect(await match('?')).toEqual(['?d']);
        expect(await match('[')).toEqual(['[e]']);
        expect(await match('\\')).toEqual(['\\f']);
        expect(await match('{')).toEqual(['{h}']);
        expect(await match('x')).toEqual(['xa', 'xb']);
        expect(await match('a')).toEqual(['ab']);
        expect(await match('A')).toEqual(['Ab']);
        expect(await match('')).toEqual([...suffixes].sort());
      });

      it('forceRelease bumps the token, fences the old holder, hands off uncleanly and is audited', async () => {
        const w = wid('force');
        const r1 = await b.acquire(w, 'h1', LIVE);
        await b.checkpoint(r1, bytes(3, 1), LIVE);
        const t0 = (await b.admin.serverTime()).getTime();
        const forced = await b.admin.forceRelease(w, {
          expectedToken: r1.fencingToken,
          operator: 'alice',
          reason: 'stuck — node 7 is gone',
        });
        const t1 = (await b.admin.serverTime()).getTime();
        expect(forced).toMatchObject({
          workId: w,
          holderId: 'h1',
          ended: 'force-released',
        });
        expectNextToken(forced.fencingToken, r1.fencingToken, new Date(t0));
        expect(forced.expiresAt.getTime()).toBeLessThanOrEqual(t1);
        expect(await info(w)).toEqual(forced);

        await expectError(() => b.checkpoint(r1, bytes(9), LIVE), FencedError, ErrorCode.FENCED);
        await expectError(() => b.renew(r1, LIVE), FencedError, ErrorCode.FENCED);
        await expectError(() => b.release(r1), FencedError, ErrorCode.FENCED);
        await expectError(() => b.readCheckpoint(r1), FencedError, ErrorCode.FENCED);
        expect(await info(w)).toEqual(forced);

        const r2 = await b.acquire(w, 'h2', LIVE);
        expect(r2.fencingToken > forced.fencingToken).toBe(true);
        const read = await b.readCheckpoint(r2);
        expect(read.cleanHandoff).toBe(false);
        expect(Array.from(read.state!)).toEqual([3, 1]);
        expect(await info(w)).toMatchObject({
          cleanHandoff: false,
          predecessorEnd: 'force-released',
          ended: null,
        });

        const entries = await b.admin.audit({ workId: w });
        expect(entries).toHaveLength(1);
        const entry = entries[0]!;
        expect(entry).toEqual({
          id: expect.any(String),
          at: expect.any(Date),
          action: 'force-release',
          workId: w,
          operator: 'alice',
          reason: 'stuck — node 7 is gone',
          oldHolderId: 'h1',
          oldToken: r1.fencingToken,
          newToken: forced.fencingToken,
          batchId: null,
        });
        expect(entry.id.length).toBeGreaterThan(0);
        expect(entry.at.getTime()).toBeGreaterThanOrEqual(t0 - 1_000);
        expect(entry.at.getTime()).toBeLessThanOrEqual(t1 + 1_000);

        // A second force-release: audit lists newest first, and the unfiltered audit holds both.
        const forced2 = await b.admin.forceRelease(w, {
          expectedToken: r2.fencingToken,
          operator: 'bob',
          reason: 'again',
        });
        const both = await b.admin.audit({ workId: w });
        expect(both.map((e) => [e.operator, e.oldHolderId, e.oldToken, e.newToken])).toEqual([
          ['bob', 'h2', r2.fencingToken, forced2.fencingToken],
          ['alice', 'h1', r1.fencingToken, forced.fencingToken],
        ]);
        expect(new Set(both.map((e) => e.id)).size).toBe(2);
        const everything = await b.admin.audit({ limit: 1000 });
        for (const e of both) expect(everything.find((x) => x.id === e.id)).toEqual(e);
        expect(await b.admin.audit({ workId: wid('no-audit') })).toEqual([]);
      });

      it("serverVersion reports the server's version", async () => {
        // PostgreSQL's server_version ("16.4", "15.20 (Debian …)"), PGlite's embedded one, Redis' "7.2.4".
        expect(await b.admin.serverVersion()).toMatch(/^\d+(\.\d+)+/);
      });

      it('forceRelease records the batch id on the audit entry', async () => {
        const a = wid('batch-a');
        const c = wid('batch-c');
        const ra = await b.acquire(a, 'h1', LIVE);
        const rc = await b.acquire(c, 'h2', LIVE);
        const batchId = `b_${wid('x')
          .replace(/[^A-Za-z0-9_-]/g, '_')
          .slice(-40)}`;
        await b.admin.forceRelease(a, {
          expectedToken: ra.fencingToken,
          operator: 'op',
          reason: 'bulk',
          batchId,
        });
        await b.admin.forceRelease(c, {
          expectedToken: rc.fencingToken,
          operator: 'op',
          reason: 'bulk',
          batchId,
        });
        const entries = [...(await b.admin.audit({ workId: a })), ...(await b.admin.audit({ workId: c }))];
        expect(entries.map((e) => [e.workId, e.batchId])).toEqual([
          [a, batchId],
          [c, batchId],
        ]);
        const everything = await b.admin.audit({ limit: 1000 });
        expect(
          everything
            .filter((e) => e.batchId === batchId)
            .map((e) => e.workId)
            .sort(),
        ).toEqual([a, c].sort());
      });

      it('forceRelease with a stale or unknown expectedToken is CONFLICT and changes nothing', async () => {
        const w = wid('conflict');
        const r1 = await b.acquire(w, 'h1', LIVE);
        await b.release(r1);
        const r2 = await b.acquire(w, 'h2', LIVE);
        const before = await info(w);
        for (const expectedToken of [r1.fencingToken, r2.fencingToken + 99n]) {
          const err = await expectError(
            () => b.admin.forceRelease(w, { expectedToken, operator: 'op', reason: 'stale view' }),
            ConflictError,
            ErrorCode.CONFLICT,
          );
          // The same details and words on every backend.
          expect(err.details).toEqual({
            workId: w,
            expectedToken,
            storedToken: r2.fencingToken,
            holderId: 'h2',
            ended: null,
          });
          expect(err.message).toBe(
            `force-release of work item '${w}' refused: its fencing token is now ${r2.fencingToken}, not ${expectedToken} (it changed hands)`,
          );
        }
        expect(await info(w)).toEqual(before);
        expect(await b.admin.audit({ workId: w })).toEqual([]);
        // The holder was not fenced.
        expect((await b.renew(r2, LIVE)).fencingToken).toBe(r2.fencingToken);
      });

      it('forceRelease of a lease that ended says how, with the stored token and holder', async () => {
        const w = wid('conflict-ended');
        const r1 = await b.acquire(w, 'h1', LIVE);
        const forced = await b.admin.forceRelease(w, {
          expectedToken: r1.fencingToken,
          operator: 'op',
          reason: 'stuck',
        });
        // A second operator who saw the lease before the first one force-released it.
        const late = await expectError(
          () => b.admin.forceRelease(w, { expectedToken: r1.fencingToken, operator: 'op2', reason: 'stuck' }),
          ConflictError,
          ErrorCode.CONFLICT,
        );
        expect(late.details).toEqual({
          workId: w,
          expectedToken: r1.fencingToken,
          storedToken: forced.fencingToken,
          holderId: 'h1',
          ended: 'force-released',
        });
        expect(late.message).toBe(
          `force-release of work item '${w}' refused: its fencing token is now ${forced.fencingToken}, not ${r1.fencingToken} (it was force-released since)`,
        );
        // The token of the force-released lease itself: it already ended.
        const again = await expectError(
          () => b.admin.forceRelease(w, { expectedToken: forced.fencingToken, operator: 'op2', reason: 'x' }),
          ConflictError,
          ErrorCode.CONFLICT,
        );
        expect(again.message).toBe(
          `force-release of work item '${w}' refused: its lease already ended (force-released)`,
        );
        const released = wid('conflict-released');
        const r2 = await b.acquire(released, 'h2', LIVE);
        await b.release(r2);
        const done = await expectError(
          () =>
            b.admin.forceRelease(released, { expectedToken: r2.fencingToken, operator: 'op', reason: 'x' }),
          ConflictError,
          ErrorCode.CONFLICT,
        );
        expect(done.details).toEqual({
          workId: released,
          expectedToken: r2.fencingToken,
          storedToken: r2.fencingToken,
          holderId: 'h2',
          ended: 'released',
        });
        expect(done.message).toBe(
          `force-release of work item '${released}' refused: its lease already ended (released)`,
        );
        // One audit entry: the first force-release.
        expect((await b.admin.audit({ workId: w })).map((e) => e.operator)).toEqual(['op']);
      });

      describe('requestRelease', () => {
        const ask = (w: string, expectedToken: bigint, reason = 'rebalance', operator = 'alice') =>
          b.admin.requestRelease(w, { expectedToken, operator, reason });

        it('marks the live lease; the next renew and checkpoint carry the request; token unchanged; audited', async () => {
          const w = wid('rr');
          const r1 = await b.acquire(w, 'h1', LIVE);
          // Nothing requested yet: the answers carry nothing.
          expect((await b.renew(r1, LIVE)).releaseRequested).toBeUndefined();
          expect((await b.checkpoint(r1, bytes(1), LIVE)).releaseRequested).toBeUndefined();
          const before = await info(w);
          const t0 = (await b.admin.serverTime()).getTime();
          const marked = await ask(w, r1.fencingToken, 'drain node 7\nthen upgrade');
          const t1 = (await b.admin.serverTime()).getTime();
          expect(marked).toMatchObject({
            workId: w,
            holderId: 'h1',
            fencingToken: r1.fencingToken,
            ended: null,
            expiresAt: before.expiresAt,
            releaseRequest: { operator: 'alice', reason: 'drain node 7\nthen upgrade', at: expect.any(Date) },
          });
          const at = marked.releaseRequest!.at.getTime();
          expect(at).toBeGreaterThanOrEqual(t0 - 5);
          expect(at).toBeLessThanOrEqual(t1 + 5);
          expect(await info(w)).toEqual(marked);
          expectIncreasing([before, marked]);
          expect(marked.version).toBeGreaterThan(before.version);

          const renewed = await b.renew(r1, LIVE);
          expect(renewed.releaseRequested).toEqual(marked.releaseRequest);
          expect(renewed.fencingToken).toBe(r1.fencingToken);
          const saved = await b.checkpoint(renewed, bytes(4, 2), LIVE);
          expect(saved.releaseRequested).toEqual(marked.releaseRequest);
          // The request survives the holder's own writes until the lease changes hands.
          expect((await info(w)).releaseRequest).toEqual(marked.releaseRequest);

          const entries = await b.admin.audit({ workId: w });
          expect(entries).toEqual([
            {
              id: expect.any(String),
              at: marked.releaseRequest!.at,
              action: 'request-release',
              workId: w,
              operator: 'alice',
              reason: 'drain node 7\nthen upgrade',
              oldHolderId: 'h1',
              oldToken: r1.fencingToken,
              newToken: r1.fencingToken,
              batchId: null,
            },
          ]);
        });

        it('asking again keeps the first request and writes nothing more', async () => {
          const w = wid('rr-again');
          const r1 = await b.acquire(w, 'h1', LIVE);
          const first = await ask(w, r1.fencingToken, 'first', 'alice');
          const again = await ask(w, r1.fencingToken, 'second', 'bob');
          expect(again).toEqual(first);
          expect(await info(w)).toEqual(first);
          expect((await b.admin.audit({ workId: w })).map((e) => e.reason)).toEqual(['first']);
        });

        it('a cooperating holder checkpoints and releases: the request is cleared and the next lease starts clean', async () => {
          const w = wid('rr-handoff');
          const r1 = await b.acquire(w, 'h1', LIVE);
          await ask(w, r1.fencingToken);
          const { releaseRequested } = await b.checkpoint(r1, bytes(7, 7), LIVE);
          expect(releaseRequested?.operator).toBe('alice');
          await b.release(r1);
          expect((await info(w)).releaseRequest).toBeNull();
          const r2 = await b.acquire(w, 'h2', LIVE);
          const read = await b.readCheckpoint(r2);
          expect(read.cleanHandoff).toBe(true);
          expect(Array.from(read.state!)).toEqual([7, 7]);
          expect(await info(w)).toMatchObject({ releaseRequest: null, predecessorEnd: 'released' });
          expect((await b.renew(r2, LIVE)).releaseRequested).toBeUndefined();
        });

        it('is cleared by a force-release and by an acquire after expiry', async () => {
          const forced = wid('rr-forced');
          const f1 = await b.acquire(forced, 'h1', LIVE);
          await ask(forced, f1.fencingToken);
          const after = await b.admin.forceRelease(forced, {
            expectedToken: f1.fencingToken,
            operator: 'bob',
            reason: 'escalated',
          });
          expect(after.releaseRequest).toBeNull();
          const f2 = await b.acquire(forced, 'h2', LIVE);
          expect((await b.renew(f2, LIVE)).releaseRequested).toBeUndefined();

          const ran = wid('rr-ran-out');
          const e1 = await b.acquire(ran, 'h1', LIVE);
          await ask(ran, e1.fencingToken);
          await b.renew(e1, SHORT);
          await waitPast((await info(ran)).expiresAt);
          const e2 = await b.acquire(ran, 'h2', LIVE);
          expect((await info(ran)).releaseRequest).toBeNull();
          expect((await b.renew(e2, LIVE)).releaseRequested).toBeUndefined();
          expect((await b.checkpoint(e2, bytes(1), LIVE)).releaseRequested).toBeUndefined();
        });

        it('a wrong token is CONFLICT and writes nothing', async () => {
          const w = wid('rr-conflict');
          const r1 = await b.acquire(w, 'h1', LIVE);
          await b.release(r1);
          const r2 = await b.acquire(w, 'h2', LIVE);
          const before = await info(w);
          for (const expectedToken of [r1.fencingToken, r2.fencingToken + 99n]) {
            const err = await expectError(() => ask(w, expectedToken), ConflictError, ErrorCode.CONFLICT);
            expect(err.details).toMatchObject({ why: 'token', storedToken: r2.fencingToken });
          }
          expect(await info(w)).toEqual(before);
          expect(await b.admin.audit({ workId: w })).toEqual([]);
          expect((await b.renew(r2, LIVE)).releaseRequested).toBeUndefined();
        });

        it('a lease that is not live (released, force-released, ran out) is CONFLICT; none at all is NOT_FOUND', async () => {
          const released = wid('rr-released');
          const r = await b.acquire(released, 'h1', LIVE);
          await b.release(r);
          const forced = wid('rr-was-forced');
          const f = await b.acquire(forced, 'h1', LIVE);
          const fi = await b.admin.forceRelease(forced, {
            expectedToken: f.fencingToken,
            operator: 'o',
            reason: 'r',
          });
          const ran = wid('rr-expired');
          const e = await expiredLease(ran, 'h1');
          for (const [w, token, why] of [
            [released, r.fencingToken, 'released'],
            [forced, fi.fencingToken, 'force-released'],
            [ran, e.fencingToken, 'expired'],
          ] as const) {
            const before = await info(w);
            const err = await expectError(() => ask(w, token), ConflictError, ErrorCode.CONFLICT);
            expect(err.details, w).toMatchObject({ why });
            expect(await info(w)).toEqual(before);
            expect(
              (await b.admin.audit({ workId: w })).filter((x) => x.action === 'request-release'),
            ).toEqual([]);
          }
          const none = wid('rr-none');
          await expectError(() => ask(none, 1n), NotFoundError, ErrorCode.NOT_FOUND);
          expect(await b.admin.get(none)).toBeNull();
        });

        it('shows in the change feed as release-requested', async () => {
          const w = wid('rr-feed');
          const r1 = await b.acquire(w, 'h1', LIVE);
          const cursor = await b.admin.changeCursor();
          const marked = await ask(w, r1.fencingToken);
          let found: LeaseChange | undefined;
          let c = cursor;
          for (let i = 0; i < 50 && found === undefined; i++) {
            const batch = await b.admin.changes({ cursor: c, limit: 1000 });
            found = batch.changes.find((x) => x.workId === w);
            c = batch.cursor;
            if (found === undefined) await sleep(20);
          }
          expect(found).toMatchObject({ kind: 'release-requested', version: marked.version });
          expect(found!.lease).toEqual(marked);
        });

        it('bad input is INVALID_ARGUMENT before any I/O and the lease is unchanged', async () => {
          const w = wid('rr-bad');
          const rec = await b.acquire(w, 'h1', LIVE);
          const t = rec.fencingToken;
          const before = await info(w);
          const calls: [string, () => Promise<unknown>][] = [
            ['no reason', () => b.admin.requestRelease(w, { expectedToken: t, operator: 'op' } as never)],
            [
              'empty reason',
              () => b.admin.requestRelease(w, { expectedToken: t, operator: 'op', reason: '' }),
            ],
            [
              'blank reason',
              () => b.admin.requestRelease(w, { expectedToken: t, operator: 'op', reason: ' \n ' }),
            ],
            [
              'reason too long',
              () => b.admin.requestRelease(w, { expectedToken: t, operator: 'op', reason: 'x'.repeat(2001) }),
            ],
            ['no operator', () => b.admin.requestRelease(w, { expectedToken: t, reason: 'r' } as never)],
            [
              'operator with a newline',
              () => b.admin.requestRelease(w, { expectedToken: t, operator: 'a\nb', reason: 'r' }),
            ],
            [
              'number token',
              () => b.admin.requestRelease(w, { expectedToken: 1 as never, operator: 'op', reason: 'r' }),
            ],
            [
              'string token',
              () =>
                b.admin.requestRelease(w, { expectedToken: String(t) as never, operator: 'op', reason: 'r' }),
            ],
            [
              'zero token',
              () => b.admin.requestRelease(w, { expectedToken: 0n, operator: 'op', reason: 'r' }),
            ],
            [
              'empty work id',
              () => b.admin.requestRelease('', { expectedToken: t, operator: 'op', reason: 'r' }),
            ],
            [
              'work id with a control character',
              () => b.admin.requestRelease('a\u0000', { expectedToken: t, operator: 'op', reason: 'r' }),
            ],
            ['no options', () => b.admin.requestRelease(w, undefined as never)],
            [
              'unknown option',
              () =>
                b.admin.requestRelease(w, {
                  expectedToken: t,
                  operator: 'op',
                  reason: 'r',
                  force: true,
                } as never),
            ],
          ];
          for (const [label, call] of calls) {
            try {
              await expectError(call, InvalidArgumentError, ErrorCode.INVALID_ARGUMENT);
            } catch (err) {
              throw new Error(`${label}: ${(err as Error).message}`, { cause: err });
            }
            expect(await info(w), `${label} must not write`).toEqual(before);
          }
          expect(await b.admin.audit({ workId: w })).toEqual([]);
        });
      });

      it('forceRelease of an unknown work id is NOT_FOUND and writes nothing', async () => {
        const w = wid('force-unknown');
        await expectError(
          () => b.admin.forceRelease(w, { expectedToken: 1n, operator: 'op', reason: 'gone' }),
          NotFoundError,
          ErrorCode.NOT_FOUND,
        );
        expect(await b.admin.get(w)).toBeNull();
        expect(await b.admin.audit({ workId: w })).toEqual([]);
      });

      it('serverTime is the server clock, close to this (NTP-synced) machine', async () => {
        const before = Date.now();
        const t = await b.admin.serverTime();
        const after = Date.now();
        expect(t).toBeInstanceOf(Date);
        expect(t.getTime()).toBeGreaterThanOrEqual(before - 5_000);
        expect(t.getTime()).toBeLessThanOrEqual(after + 5_000);
      });

      it('readState pages through the stored checkpoint bytes without a lease record', async () => {
        const w = wid('readstate');
        expect(await b.admin.readState(w)).toBeNull();
        const rec = await b.acquire(w, 'h1', LIVE);
        const none = await b.admin.readState(w);
        expect(none).toMatchObject({ fencingToken: rec.fencingToken, size: null });
        expect(none!.bytes.byteLength).toBe(0);
        const payload = Uint8Array.from({ length: 300 }, (_, i) => (i * 7) & 0xff);
        await b.checkpoint(rec, payload, LIVE);
        const whole = await b.admin.readState(w);
        expect(whole).toMatchObject({ fencingToken: rec.fencingToken, size: 300, offset: 0 });
        expect(Array.from(whole!.bytes)).toEqual(Array.from(payload));
        const parts: number[] = [];
        for (let offset = 0; offset < 300; offset += 128) {
          const page = await b.admin.readState(w, { offset, length: 128 });
          expect(page).toMatchObject({ size: 300, offset });
          expect(page!.bytes.byteLength).toBe(Math.min(128, 300 - offset));
          parts.push(...page!.bytes);
        }
        expect(parts).toEqual(Array.from(payload));
      });

      it('changes: each change of hands or end after a cursor appears with its kind and (token, version), without payload bytes; renew and checkpoint write none', async () => {
        const w = wid('changes');
        let cursor = await b.admin.changeCursor();
        const seen: LeaseChange[] = [];

        /** Reads the feed from `cursor` until the change for `w` at (token, version) shows up (bounded). */
        const expectChange = async (
          kind: ChangeKind,
          fencingToken: bigint,
          version: bigint,
        ): Promise<LeaseChange> => {
          const deadline = Date.now() + 10_000;
          for (;;) {
            const batch = await b.admin.changes({ cursor, limit: 1000 });
            expect(batch.gap).toBe(false);
            expect(holdsBytes(batch.changes), 'changes must not carry checkpoint bytes').toBe(false);
            for (const c of batch.changes) if (c.lease !== null) expect(c.lease).not.toHaveProperty('state');
            const mine = batch.changes.filter((c) => c.workId === w);
            // Oldest first: within one work item the feed never goes back in (token, version).
            expectIncreasing(mine.filter((c, i) => i === 0 || !samePoint(c, mine[i - 1]!)));
            seen.push(...mine);
            cursor = batch.cursor;
            const hit = mine.find((c) => c.fencingToken === fencingToken && c.version === version);
            if (hit !== undefined) {
              expect(hit.kind, `the change at (${fencingToken}, ${version})`).toBe(kind);
              return hit;
            }
            if (Date.now() > deadline)
              throw new Error(`no '${kind}' change for ${w} at (${fencingToken}, ${version})`);
            if (batch.changes.length === 0) await sleep(50);
          }
        };
        const expectLatest = async (kind: ChangeKind): Promise<LeaseChange> => {
          const stored = await info(w);
          const c = await expectChange(kind, stored.fencingToken, stored.version);
          expect(c.lease).toEqual(stored);
          return c;
        };

        const r1 = await b.acquire(w, 'h1', LIVE);
        const acquired = await expectLatest('acquired');
        // Renew and checkpoint are heartbeat-rate writes: they bump the version but add nothing to the
        // feed (readers that need heartbeats re-read live rows, as the console does). Checked from a
        // cursor that delivers nothing of w (test/support/feed.ts says why that takes a poll).
        cursor = await quietCursor(b.admin, (id) => id === w);
        await b.renew(r1, LIVE);
        await b.checkpoint(r1, bytes(0xca, 0xfe), LIVE);
        const afterHeartbeats = await info(w);
        expect(afterHeartbeats.version).toBe(acquired.version + 2n);
        const quiet = await b.admin.changes({ cursor, limit: 1000 });
        expect(quiet.changes.filter((c) => c.workId === w)).toEqual([]);
        cursor = quiet.cursor;
        await b.release(r1);
        // The next change carries the row as stored then: the checkpoint's size and the renews' version.
        const released = await expectLatest('released');
        expect(released.lease).toMatchObject({ ended: 'released', checkpointSize: 2 });
        expect(released.version).toBe(afterHeartbeats.version + 1n);
        const r2 = await b.acquire(w, 'h2', LIVE);
        await expectLatest('acquired');
        const forced = await b.admin.forceRelease(w, {
          expectedToken: r2.fencingToken,
          operator: 'op',
          reason: 'r',
        });
        expect((await expectLatest('force-released')).lease?.ended).toBe('force-released');
        await sleep(20);
        expect(await b.admin.prune({ olderThanMs: 0 })).toBeGreaterThanOrEqual(1);
        expect(await b.admin.get(w)).toBeNull();
        // After the prune the item is gone, so find its change by kind; it must sort after the force-release,
        // or a consumer applying by (token, version) would ignore it and keep the item.
        const deadline = Date.now() + 10_000;
        while (!seen.some((c) => c.kind === 'pruned') && Date.now() < deadline) {
          const batch = await b.admin.changes({ cursor, limit: 1000 });
          expect(holdsBytes(batch.changes)).toBe(false);
          seen.push(...batch.changes.filter((c) => c.workId === w));
          cursor = batch.cursor;
          if (batch.changes.length === 0) await sleep(50);
        }
        const pruned = seen.find((c) => c.kind === 'pruned');
        expect(pruned, 'a pruned change').toBeDefined();
        expect(pruned).toMatchObject({ workId: w, lease: null, fencingToken: forced.fencingToken });
        expect(pruned!.version).toBeGreaterThan(forced.version);

        // Delivery may repeat a change; applied by (token, version), the history is exactly the writes in order.
        const unique: LeaseChange[] = [];
        for (const c of seen) {
          if (!unique.some((u) => u.fencingToken === c.fencingToken && u.version === c.version))
            unique.push(c);
        }
        expect(unique.map((c) => c.kind)).toEqual([
          'acquired',
          'released',
          'acquired',
          'force-released',
          'pruned',
        ]);
        expectIncreasing(unique);
      });

      it('changes: a reader that falls behind still gets the latest state of every item it missed', async () => {
        const w1 = wid('behind');
        const w2 = wid('behind');
        const cursor = await b.admin.changeCursor();
        const r1 = await b.acquire(w1, 'h1', LIVE);
        await b.renew(r1, LIVE);
        await b.checkpoint(r1, bytes(1), LIVE);
        await b.admin.requestRelease(w1, {
          expectedToken: r1.fencingToken,
          operator: 'op',
          reason: 'behind',
        });
        const r2 = await b.acquire(w2, 'h2', LIVE);
        await b.release(r2);
        // Only heartbeats after its acquire: the reader still sees it as acquired, never as renewed.
        const w3 = wid('behind');
        const r3 = await b.acquire(w3, 'h3', LIVE);
        await b.renew(r3, LIVE);
        await b.checkpoint(r3, bytes(3), LIVE);
        const latest = new Map<string, LeaseChange>();
        let next = cursor;
        const deadline = Date.now() + 10_000;
        const want = [await info(w1), await info(w2)];
        const caughtUp = (): boolean =>
          latest.has(w3) &&
          want.every(
            (s) =>
              latest.get(s.workId)?.version === s.version &&
              latest.get(s.workId)?.fencingToken === s.fencingToken,
          );
        while (!caughtUp() && Date.now() < deadline) {
          const batch = await b.admin.changes({ cursor: next, limit: 2 });
          expect(batch.gap).toBe(false);
          expect(batch.changes.length).toBeLessThanOrEqual(2);
          for (const c of batch.changes) {
            expect(['renewed', 'checkpointed']).not.toContain(c.kind);
            const prev = latest.get(c.workId);
            if (
              prev === undefined ||
              c.fencingToken > prev.fencingToken ||
              (c.fencingToken === prev.fencingToken && c.version > prev.version)
            ) {
              latest.set(c.workId, c);
            }
          }
          next = batch.cursor;
          if (batch.changes.length === 0) await sleep(50);
        }
        expect(latest.get(w1)).toMatchObject({ kind: 'release-requested', lease: want[0] });
        expect(latest.get(w1)?.lease?.checkpointSize).toBe(1);
        expect(latest.get(w2)).toMatchObject({ kind: 'released', lease: want[1] });
        // A backend may deliver the row as stored at the write (Redis) or as stored now (PostgreSQL).
        const stored3 = await info(w3);
        expect(latest.get(w3)).toMatchObject({ workId: w3, kind: 'acquired', fencingToken: r3.fencingToken });
        expect(latest.get(w3)!.version).toBeLessThanOrEqual(stored3.version);
      });
    });

    describe('bad input is INVALID_ARGUMENT before any I/O, and nothing is written', () => {
      const badIds: unknown[] = [
        '',
        'x'.repeat(MAX_ID_LENGTH + 1),
        'a\nb',
        '\u0000',
        '\u007f',
        'a\u2028b',
        42,
        null,
      ];
      const badTtls: unknown[] = [
        0,
        -1,
        Number.NaN,
        Number.POSITIVE_INFINITY,
        '100',
        null,
        undefined,
        2 ** 40,
      ];

      /** Runs each refused call and checks after each one that the stored lease is exactly as before. */
      async function refuse(
        backend: LeaseBackend,
        workId: string,
        calls: [string, () => Promise<unknown>][],
      ): Promise<void> {
        const before = await backend.admin.get(workId);
        for (const [label, call] of calls) {
          try {
            await expectError(call, InvalidArgumentError, ErrorCode.INVALID_ARGUMENT);
          } catch (err) {
            throw new Error(`${label}: ${(err as Error).message}`, { cause: err });
          }
          expect(await backend.admin.get(workId), `${label} must not write`).toEqual(before);
        }
      }

      it('work ids and holder ids: empty, too long, control characters, not a string', async () => {
        const w = wid('bad-ids');
        const calls: [string, () => Promise<unknown>][] = [];
        for (const id of badIds) {
          calls.push([`acquire workId ${JSON.stringify(id)}`, () => b.acquire(id as never, 'h1', LIVE)]);
          calls.push([`acquire holderId ${JSON.stringify(id)}`, () => b.acquire(w, id as never, LIVE)]);
          calls.push([
            `acquire stepId ${JSON.stringify(id)}`,
            () => b.acquire(w, 'h1', LIVE, { stepId: id as never }),
          ]);
          calls.push([`get ${JSON.stringify(id)}`, () => b.admin.get(id as never)]);
        }
        calls.push([
          'acquire with an unknown option',
          () => b.acquire(w, 'h1', LIVE, { step: 'x' } as never),
        ]);
        await refuse(b, w, calls);
        expect(await b.admin.get(w)).toBeNull();
        // Refused on an existing lease too, which stays as it was.
        const rec = await b.acquire(w, 'h1', LIVE);
        await refuse(
          b,
          w,
          badIds.map((id) => [
            `record.holderId ${JSON.stringify(id)}`,
            () => b.renew({ ...rec, holderId: id as never }, LIVE),
          ]),
        );
      });

      it('ttl: 0, -1, NaN, Infinity, a string, null, undefined, over MAX_TTL_MS', async () => {
        const w = wid('bad-ttl');
        await refuse(
          b,
          w,
          badTtls.map((ttl) => [`acquire ttl ${String(ttl)}`, () => b.acquire(w, 'h1', ttl as never)]),
        );
        expect(await b.admin.get(w)).toBeNull();
        const rec = await b.acquire(w, 'h1', LIVE);
        const calls: [string, () => Promise<unknown>][] = [];
        for (const ttl of badTtls) {
          calls.push([`renew ttl ${String(ttl)}`, () => b.renew(rec, ttl as never)]);
          calls.push([`checkpoint ttl ${String(ttl)}`, () => b.checkpoint(rec, bytes(1), ttl as never)]);
        }
        await refuse(b, w, calls);
      });

      it('state: over maxStateBytes, a string, an array, null; exactly maxStateBytes is accepted', async () => {
        const w = wid('bad-state');
        const rec = await b.acquire(w, 'h1', LIVE);
        await b.checkpoint(rec, bytes(1), LIVE);
        await refuse(b, w, [
          [`${MAX_STATE + 1} bytes`, () => b.checkpoint(rec, new Uint8Array(MAX_STATE + 1), LIVE)],
          ['a string', () => b.checkpoint(rec, 'abc' as never, LIVE)],
          ['an array', () => b.checkpoint(rec, [1, 2, 3] as never, LIVE)],
          ['null', () => b.checkpoint(rec, null as never, LIVE)],
          ['an ArrayBuffer', () => b.checkpoint(rec, new ArrayBuffer(4) as never, LIVE)],
        ]);
        expect(Array.from((await b.readCheckpoint(rec)).state!)).toEqual([1]);
        await b.checkpoint(rec, new Uint8Array(MAX_STATE).fill(0xab), LIVE);
        expect((await b.admin.get(w))?.checkpointSize).toBe(MAX_STATE);
      });

      it('records: a number token, missing fields, bad dates, not an object', async () => {
        const w = wid('bad-record');
        const rec = await b.acquire(w, 'h1', LIVE);
        const forms: [string, unknown][] = [
          ['number token', { ...rec, fencingToken: 1 }],
          ['string token', { ...rec, fencingToken: '1' }],
          ['zero token', { ...rec, fencingToken: 0n }],
          ['no token', { workId: rec.workId, holderId: rec.holderId, expiresAt: rec.expiresAt }],
          ['no workId', { holderId: rec.holderId, fencingToken: rec.fencingToken, expiresAt: rec.expiresAt }],
          ['no holderId', { workId: rec.workId, fencingToken: rec.fencingToken, expiresAt: rec.expiresAt }],
          ['no expiresAt', { workId: rec.workId, holderId: rec.holderId, fencingToken: rec.fencingToken }],
          ['invalid date', { ...rec, expiresAt: new Date(Number.NaN) }],
          ['string date', { ...rec, expiresAt: rec.expiresAt.toISOString() }],
          ['empty workId', { ...rec, workId: '' }],
          ['null', null],
          ['a string', 'record'],
        ];
        const calls: [string, () => Promise<unknown>][] = [];
        for (const [label, r] of forms) {
          calls.push([`checkpoint(${label})`, () => b.checkpoint(r as never, bytes(1), LIVE)]);
          calls.push([`renew(${label})`, () => b.renew(r as never, LIVE)]);
          calls.push([`release(${label})`, () => b.release(r as never)]);
          calls.push([`readCheckpoint(${label})`, () => b.readCheckpoint(r as never)]);
        }
        await refuse(b, w, calls);
      });

      it('admin options: list limits, forceRelease without reason or operator, bad audit/prune/changes options', async () => {
        const w = wid('bad-admin');
        const rec = await b.acquire(w, 'h1', LIVE);
        const t = rec.fencingToken;
        await refuse(b, w, [
          ['list limit 0', () => b.admin.list({ limit: 0 })],
          ['list limit 1e9', () => b.admin.list({ limit: 1e9 })],
          ['list limit 1.5', () => b.admin.list({ limit: 1.5 })],
          ['list cursor 5', () => b.admin.list({ cursor: 5 as never })],
          ['list holderId ""', () => b.admin.list({ holderId: '' })],
          ['list prefix with a newline', () => b.admin.list({ workIdPrefix: 'a\nb' })],
          ['list unknown option', () => b.admin.list({ prefix: 'a' } as never)],
          [
            'forceRelease without reason',
            () => b.admin.forceRelease(w, { expectedToken: t, operator: 'op' } as never),
          ],
          [
            'forceRelease empty reason',
            () => b.admin.forceRelease(w, { expectedToken: t, operator: 'op', reason: '' }),
          ],
          [
            'forceRelease blank reason',
            () => b.admin.forceRelease(w, { expectedToken: t, operator: 'op', reason: '   ' }),
          ],
          [
            'forceRelease without operator',
            () => b.admin.forceRelease(w, { expectedToken: t, reason: 'r' } as never),
          ],
          [
            'forceRelease number token',
            () => b.admin.forceRelease(w, { expectedToken: 1 as never, operator: 'op', reason: 'r' }),
          ],
          [
            'forceRelease bad work id',
            () => b.admin.forceRelease('', { expectedToken: t, operator: 'op', reason: 'r' }),
          ],
          ['forceRelease no options', () => b.admin.forceRelease(w, undefined as never)],
          ...(['', 'x'.repeat(65), 'a b', 'a/b', 'é', 7] as unknown[]).map(
            (batchId): [string, () => Promise<unknown>] => [
              `forceRelease batchId ${JSON.stringify(batchId)}`,
              () =>
                b.admin.forceRelease(w, { expectedToken: t, operator: 'op', reason: 'r', batchId } as never),
            ],
          ),
          ['audit limit 0', () => b.admin.audit({ limit: 0 })],
          ['audit bad workId', () => b.admin.audit({ workId: 'a\u0000' })],
          ['prune without olderThanMs', () => b.admin.prune({} as never)],
          ['prune negative olderThanMs', () => b.admin.prune({ olderThanMs: -1 })],
          ['changes empty cursor', () => b.admin.changes({ cursor: '' })],
          ['changes limit 0', () => b.admin.changes({ cursor: 'x', limit: 0 })],
          ['readState negative offset', () => b.admin.readState(w, { offset: -1 })],
        ]);
        expect((await info(w)).ended).toBeNull();
      });
    });
    describe('concurrency', () => {
      async function race(workId: string, n: number): Promise<void> {
        const results = await Promise.allSettled(
          Array.from({ length: n }, (_, i) => b.acquire(workId, `racer-${i}`, LIVE)),
        );
        const winners = results.filter((r) => r.status === 'fulfilled');
        expect(winners, `exactly one winner on ${workId}`).toHaveLength(1);
        for (const r of results) {
          if (r.status === 'rejected') {
            expect(summarize(r.reason)).toMatchObject({ code: ErrorCode.LEASE_HELD });
            expect(r.reason).toBeInstanceOf(LeaseHeldError);
          }
        }
        const winner = (winners[0] as PromiseFulfilledResult<LeaseRecord>).value;
        expect(await info(workId)).toMatchObject({
          holderId: winner.holderId,
          fencingToken: winner.fencingToken,
        });
      }

      it('16 concurrent acquires of one fresh item: exactly one wins, the rest are LEASE_HELD', async () => {
        await race(wid('race'), 16);
      });

      it('the same race on 20 items at once', async () => {
        const base = wid('race20');
        await Promise.all(Array.from({ length: 20 }, (_, i) => race(`${base}-${i}`, 16)));
      });
    });

    if (hasServerConnections(target)) {
      it('two namespaces on one server are isolated', async () => {
        const other = await open(uniqueNamespace('conf_iso'));
        const w = wid('iso');
        const r1 = await b.acquire(w, 'h1', LIVE);
        await b.checkpoint(r1, bytes(1), LIVE);
        await b.release(r1);
        const r1b = await b.acquire(w, 'h1b', LIVE);
        expect(r1b.fencingToken > r1.fencingToken).toBe(true);
        expect(await other.admin.get(w)).toBeNull();

        const r2 = await other.acquire(w, 'h2', LIVE);
        expect(await other.readCheckpoint(r2)).toEqual({ state: null, cleanHandoff: true });
        await other.checkpoint(r2, bytes(2), LIVE);
        expect(await info(w)).toMatchObject({
          holderId: 'h1b',
          fencingToken: r1b.fencingToken,
          checkpointSize: 1,
        });
        expect(await info(w, other)).toMatchObject({
          holderId: 'h2',
          fencingToken: r2.fencingToken,
          checkpointSize: 1,
        });
        expect(Array.from((await b.readCheckpoint(r1b)).state!)).toEqual([1]);
        const listed = await other.admin.list({ workIdPrefix: 'iso-' });
        expect(listed.items.map((i) => i.workId)).toEqual([w]);
      });
    } else {
      // Each `pglite://memory` is a database of its own, so two namespaces never share a server to be
      // isolated on; opening a second one would only cost seconds of WASM start-up.
      console.info(
        `[conformance] ${target.kind}: namespace-isolation case not registered (each instance is its own database)`,
      );
    }

    if (hasServerConnections(target)) {
      it('after the server drops the connections, calls fail fast or succeed, then recover', {
        timeout: 90_000,
      }, async () => {
        const ns = uniqueNamespace('conf_fault');
        const fb = await open(ns);
        const w = wid('fault');
        const rec = await fb.acquire(w, 'h1', LIVE);
        // Several calls at once so a pool holds more than one connection when they are cut.
        await Promise.all(Array.from({ length: 4 }, () => fb.admin.get(w)));

        const settle = async <T>(what: string, call: () => Promise<T>): Promise<T | WorkleaseError> => {
          try {
            return await within(LIVENESS_MS, what, call());
          } catch (err) {
            expect(summarize(err), `${what} after a dropped connection`).toMatchObject({
              code: ErrorCode.BACKEND_UNAVAILABLE,
            });
            expect(err).toBeInstanceOf(BackendUnavailableError);
            return err as WorkleaseError;
          }
        };

        expect(
          await dropConnections(target, ns),
          'connections named worklease:<namespace> to cut',
        ).toBeGreaterThan(0);
        const first = await settle('renew', () => fb.renew(rec, LIVE));
        if (!(first instanceof WorkleaseError)) {
          expect(first).toMatchObject({ workId: w, holderId: 'h1', fencingToken: rec.fencingToken });
        }
        const second = await within(LIVENESS_MS, 'renew after recovery', fb.renew(rec, LIVE));
        expect(second).toMatchObject({ workId: w, holderId: 'h1', fencingToken: rec.fencingToken });

        // A write whose reply may be lost: either it happened once or not at all, never twice.
        const w2 = wid('fault-acquire');
        expect(await dropConnections(target, ns)).toBeGreaterThan(0);
        const acquired = await settle('acquire', () => fb.acquire(w2, 'h2', LIVE));
        let w2Token: bigint | undefined;
        if (acquired instanceof WorkleaseError) {
          const retry = await within(
            LIVENESS_MS,
            'acquire after recovery',
            fb.acquire(w2, 'h2', LIVE).then(
              (r) => r,
              (e: unknown) => e,
            ),
          );
          // Held by h2 itself when the first attempt did reach the server.
          if (retry instanceof Error) expect(summarize(retry)).toMatchObject({ code: ErrorCode.LEASE_HELD });
          else w2Token = (retry as LeaseRecord).fencingToken;
        } else {
          w2Token = acquired.fencingToken;
        }
        // Acquired once: version 1 (a second acquisition would have bumped it), with the token handed out.
        const got = await within(LIVENESS_MS, 'get', fb.admin.get(w2));
        expect(got).toMatchObject({ holderId: 'h2', predecessorEnd: 'none', version: 1n });
        if (w2Token !== undefined) expect(got?.fencingToken).toBe(w2Token);

        expect(await dropConnections(target, ns)).toBeGreaterThan(0);
        const read = await settle('readCheckpoint', () => fb.readCheckpoint(rec));
        if (!(read instanceof WorkleaseError)) expect(read).toEqual({ state: null, cleanHandoff: true });
        expect(await within(LIVENESS_MS, 'readCheckpoint after recovery', fb.readCheckpoint(rec))).toEqual({
          state: null,
          cleanHandoff: true,
        });
        expect(await within(LIVENESS_MS, 'get after recovery', fb.admin.get(w))).toMatchObject({
          holderId: 'h1',
          fencingToken: rec.fencingToken,
          ended: null,
        });
      });
    } else {
      // PGlite runs inside this process: there is no server connection that could be dropped.
      console.info(
        `[conformance] ${target.kind}: connection-drop case not registered (embedded, no server connection)`,
      );
    }

    describe('close()', () => {
      // Last in the file: these cases close the file's backend itself.
      let w: string;
      let rec: LeaseRecord;
      beforeAll(async () => {
        w = wid('closed');
        rec = await b.acquire(w, 'h1', LIVE);
        await b.close();
      });

      it('after close(), every call fails with BACKEND_UNAVAILABLE and close() may be repeated', async () => {
        const calls: [string, () => Promise<unknown>][] = [
          ['acquire', () => b.acquire(wid('closed2'), 'h1', LIVE)],
          ['checkpoint', () => b.checkpoint(rec, bytes(1), LIVE)],
          ['renew', () => b.renew(rec, LIVE)],
          ['release', () => b.release(rec)],
          ['readCheckpoint', () => b.readCheckpoint(rec)],
          ['get', () => b.admin.get(w)],
          ['list', () => b.admin.list()],
          ['forceRelease', () => b.admin.forceRelease(w, { expectedToken: 1n, operator: 'op', reason: 'r' })],
          [
            'requestRelease',
            () => b.admin.requestRelease(w, { expectedToken: 1n, operator: 'op', reason: 'r' }),
          ],
          ['audit', () => b.admin.audit()],
          ['prune', () => b.admin.prune({ olderThanMs: 0 })],
          ['readState', () => b.admin.readState(w)],
          ['serverTime', () => b.admin.serverTime()],
          ['changeCursor', () => b.admin.changeCursor()],
          ['changes', () => b.admin.changes({ cursor: 'x' })],
        ];
        for (const [label, call] of calls) {
          const err = await within(
            LIVENESS_MS,
            label,
            call().then(
              () => null,
              (e: unknown) => e,
            ),
          );
          expect(summarize(err), label).toMatchObject({ code: ErrorCode.BACKEND_UNAVAILABLE });
          expect(err).toBeInstanceOf(BackendUnavailableError);
        }
        await within(LIVENESS_MS, 'second close', b.close());
      });

      it('a refused call on a closed backend is still INVALID_ARGUMENT: validation runs before any I/O', async () => {
        const invalid: [string, () => Promise<unknown>][] = [
          ['acquire empty work id', () => b.acquire('', 'h1', LIVE)],
          ['acquire ttl 0', () => b.acquire(w, 'h1', 0)],
          ['checkpoint string state', () => b.checkpoint(rec, 'abc' as never, LIVE)],
          ['checkpoint over the size limit', () => b.checkpoint(rec, new Uint8Array(MAX_STATE + 1), LIVE)],
          ['renew number token', () => b.renew({ ...rec, fencingToken: 1 as never }, LIVE)],
          ['release null', () => b.release(null as never)],
          ['list limit 0', () => b.admin.list({ limit: 0 })],
          [
            'forceRelease without reason',
            () => b.admin.forceRelease(w, { expectedToken: 1n, operator: 'op' } as never),
          ],
        ];
        for (const [label, call] of invalid) {
          const err = await within(
            LIVENESS_MS,
            label,
            call().then(
              () => null,
              (e: unknown) => e,
            ),
          );
          expect(summarize(err), label).toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
          expect(err).toBeInstanceOf(InvalidArgumentError);
        }
        // The control: the same call with valid arguments reaches the closed check.
        await expectError(
          () => b.acquire(w, 'h1', LIVE),
          BackendUnavailableError,
          ErrorCode.BACKEND_UNAVAILABLE,
        );
      });
    });
  });
}

/** The URL query option that names a backend's namespace: `schema` (Postgres, PGlite) or `keyPrefix` (Redis). */
function namespaceOption(target: BackendTarget): 'schema' | 'keyPrefix' {
  return target.kind === 'postgres' || target.kind === 'pglite' ? 'schema' : 'keyPrefix';
}

function withQuery(url: string, query: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}${query}`;
}

/**
 * One URL grammar (src/backends/url.ts): the query options of a backend URL are
 * the open options of the same name, on every backend. A URL's namespace is
 * never silently dropped: the data goes where the URL says, and `backend.url`
 * says where that is.
 */
export function defineUrlGrammar(target: BackendTarget): void {
  describe(`backend URL query options on ${target.kind}`, () => {
    const option = namespaceOption(target);
    const other = option === 'schema' ? 'keyPrefix' : 'schema';
    const ns = uniqueNamespace(`url_${target.kind.replace('-', '_')}`);
    const missing = uniqueNamespace('url_missing');
    /** PGlite's memory databases are one per open: this test needs one that two opens share. */
    let dir: string | null = null;
    let base = target.url;

    beforeAll(async () => {
      if (target.kind === 'pglite') {
        dir = await mkdtemp(join(tmpdir(), 'wl-url-'));
        base = `pglite://${dir}`;
      }
    });

    afterAll(async () => {
      if (dir !== null) await rm(dir, { recursive: true, force: true });
      else await dropNamespace(target, ns);
    });

    it('stores under the namespace the URL names, and reports it in backend.url', async () => {
      const viaUrl = await openBackend(withQuery(base, `${option}=${ns}`), { maxStateBytes: 2048 });
      const w = 'url-namespace';
      let token = 0n;
      try {
        expect(viaUrl.url).toBe(`${base}?${option}=${ns}`);
        token = (await viaUrl.acquire(w, 'h1', LIVE)).fencingToken;
      } finally {
        await viaUrl.close();
      }
      // The same namespace given as an option (and, the same value, in the URL too) sees that lease.
      const viaOption = await openBackend(withQuery(base, `${option}=${ns}`), {
        [option]: ns,
        migrate: false,
      });
      try {
        expect(await viaOption.admin.get(w)).toMatchObject({
          workId: w,
          holderId: 'h1',
          fencingToken: token,
        });
      } finally {
        await viaOption.close();
      }
    });

    it('with migrate off, a URL naming a namespace without data is SCHEMA_MISMATCH about that namespace', async () => {
      const err = await openBackend(withQuery(base, `${option}=${missing}`), { migrate: false }).then(
        (b) => b.close().then(() => null),
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(SchemaMismatchError);
      expect((err as Error).message).toContain(missing);
    });

    it('takes the numeric open options from the URL', async () => {
      const b = await openBackend(withQuery(base, `${option}=${ns}&maxStateBytes=16&callTimeoutMs=5000`), {
        migrate: false,
      });
      try {
        expect(b.maxStateBytes).toBe(16);
        const rec = await b.acquire('url-numeric', 'h1', LIVE);
        await expect(b.checkpoint(rec, new Uint8Array(17), LIVE)).rejects.toMatchObject({
          code: ErrorCode.INVALID_ARGUMENT,
        });
      } finally {
        await b.close();
      }
    });

    it('refuses unknown, misplaced, repeated and conflicting options before any I/O', async () => {
      const before = dir === null ? null : await readdir(dir);
      const cases: Array<[string, string, OpenOptions, RegExp]> = [
        [
          'a typo',
          withQuery(base, `shema=${ns}`),
          {},
          new RegExp(`unknown option 'shema'.*known for ${target.kind}: .*${option}`),
        ],
        [
          'the other backend kind',
          withQuery(base, `${other}=${ns}`),
          {},
          new RegExp(`unknown option '${other}'`),
        ],
        ['given twice', withQuery(base, `${option}=${ns}&${option}=${ns}`), {}, /given twice/],
        [
          'URL and options differ',
          withQuery(base, `${option}=${ns}`),
          { [option]: missing },
          /in the backend URL but/,
        ],
        ['a bad number', withQuery(base, 'callTimeoutMs=soon'), {}, /callTimeoutMs must be a whole number/],
        ['migrate in the URL', withQuery(base, 'migrate=false'), {}, /unknown option 'migrate'/],
      ];
      for (const [label, url, options, message] of cases) {
        const err = await openBackend(url, options).then(
          (b) => b.close().then(() => null),
          (e: unknown) => e,
        );
        expect(summarize(err), label).toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
        expect(err, label).toBeInstanceOf(InvalidArgumentError);
        expect((err as Error).message, label).toMatch(message);
      }
      // Nothing was created for a refused URL.
      if (dir !== null) expect(await readdir(dir)).toEqual(before);
    });

    it('redacts a password in backend.url and in messages', async () => {
      if (target.kind === 'pglite') return expect(base).not.toContain('@');
      // A wrong password on a URL whose server needs none (or refuses it): whatever the outcome, no secret leaks.
      const url = target.url.replace('://', '://wl_nobody:s3cret-pw@');
      const result = await openBackend(withQuery(url, `${option}=${missing}`), {
        migrate: false,
        callTimeoutMs: 3000,
      }).then(
        async (b) => {
          const shown = b.url;
          await b.close();
          return shown;
        },
        (e: unknown) => (e as Error).message,
      );
      expect(result).not.toContain('s3cret-pw');
      expect(result).toContain(missing);
    });
  });
}

/**
 * `admin.count`: the total a `list` with the same filters pages through, on
 * every backend (what `worklease ls --limit` prints as "N of M").
 */
export function defineCount(target: BackendTarget): void {
  describe(`admin.count on ${target.kind}`, () => {
    const ns = uniqueNamespace(`cnt_${target.kind.replace('-', '_')}`);
    let b: LeaseBackend;

    beforeAll(async () => {
      b = await openIsolated(target, ns);
    });

    afterAll(async () => {
      await b?.close();
      await dropNamespace(target, ns);
    });

    async function listed(options: { workIdPrefix?: string; holderId?: string } = {}): Promise<number> {
      let n = 0;
      let cursor: string | null = null;
      do {
        const page: LeasePage = await b.admin.list({ ...options, cursor, limit: 2 });
        n += page.items.length;
        cursor = page.nextCursor;
      } while (cursor !== null);
      return n;
    }

    it('counts what list returns, with the same prefix and holder filters; pruned items are gone from both', async () => {
      expect(await b.admin.count()).toBe(0);
      await b.acquire('a/1', 'h1', LIVE);
      await b.acquire('a/2', 'h2', LIVE);
      await b.acquire('a/3', 'h1', LIVE);
      await b.acquire('ab', 'h1', LIVE);
      const ended = await b.acquire('b/1', 'h2', LIVE);
      await b.release(ended);
      const cases: Array<[{ workIdPrefix?: string; holderId?: string }, number]> = [
        [{}, 5],
        [{ workIdPrefix: 'a/' }, 3],
        [{ workIdPrefix: 'a' }, 4],
        [{ workIdPrefix: 'zzz' }, 0],
        [{ holderId: 'h1' }, 3],
        [{ holderId: 'h2', workIdPrefix: 'b/' }, 1],
        [{ workIdPrefix: '' }, 5],
      ];
      for (const [options, n] of cases) {
        expect(await b.admin.count(options), JSON.stringify(options)).toBe(n);
        expect(await listed(options), JSON.stringify(options)).toBe(n);
      }
      await waitPastServer(b);
      expect(await b.admin.prune({ olderThanMs: 0 })).toBe(1);
      expect(await b.admin.count()).toBe(4);
      expect(await b.admin.count({ workIdPrefix: 'b/' })).toBe(0);
    });

    it('refuses bad filters with INVALID_ARGUMENT', async () => {
      for (const options of [{ holderId: '' }, { workIdPrefix: 7 }, { limit: 3 }] as never[]) {
        await expect(b.admin.count(options), JSON.stringify(options)).rejects.toBeInstanceOf(
          InvalidArgumentError,
        );
      }
    });
  });
}

/** A little more than a millisecond of server time, so a lease that just ended is older than "0 ms ago". */
async function waitPastServer(b: LeaseBackend): Promise<void> {
  const start = (await b.admin.serverTime()).getTime();
  while ((await b.admin.serverTime()).getTime() <= start + 2) await sleep(5);
}
