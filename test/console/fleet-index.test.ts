/**
 * The console's fleet index (src/console/fleet): columns, work-id order, statuses judged through
 * the timing wheel, counts, and view queries with keyset paging, each checked against a naive
 * reference (plain rows, status.ts, Array.sort) over random fleets and random changes.
 */
import { describe, expect, it } from 'vitest';
import type { LeaseRow, LeaseStatus } from '../../src/console/api.ts';
import {
  DEFAULT_VIEW_SORT,
  type ParsedViewQuery,
  VIEW_SORT_COLUMNS,
  type ViewFilter,
  type ViewSortColumn,
} from '../../src/console/common/view.ts';
import { ViewQueries } from '../../src/console/fleet/query.ts';
import { FleetStore } from '../../src/console/fleet/store.ts';
import { toLeaseRow } from '../../src/console/rows.ts';
import { leaseStatus, nextStatusChangeAt } from '../../src/console/status.ts';
import type { LeaseInfo } from '../../src/lease/types.ts';

const T = { expiringFraction: 0.25, stuckAfterMs: 60_000 };
const T0 = 1_800_000_000_000;

/** A small deterministic PRNG (mulberry32), so a failure repeats with its seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomInfo(r: () => number, workId: string, at: number, version: bigint): LeaseInfo {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const ttl = pick([5_000, 30_000, 120_000]);
  const acquired = at - Math.floor(r() * 200_000);
  const renewed = r() < 0.7 ? at - Math.floor(r() * 40_000) : null;
  const ckpt = r() < 0.5 ? acquired + Math.floor(r() * 100_000) : null;
  const ended = r() < 0.15 ? pick(['released', 'force-released'] as const) : null;
  return {
    workId,
    holderId: pick(['w-1', 'w-2', 'W-3', 'worker-10', 'x']),
    fencingToken: BigInt(1 + Math.floor(r() * 1e6)),
    expiresAt: new Date((renewed ?? acquired) + ttl + Math.floor(r() * 20_000) - 10_000),
    ttlMs: ttl,
    stepId: r() < 0.3 ? pick(['s1', 's2']) : null,
    acquiredAt: new Date(acquired),
    renewedAt: renewed === null ? null : new Date(renewed),
    checkpointedAt: ckpt === null ? null : new Date(ckpt),
    releasedAt: ended === null ? null : new Date(at),
    checkpointSize: ckpt === null ? null : Math.floor(r() * 5000),
    cleanHandoff: r() < 0.5,
    predecessorEnd: pick(['none', 'released', 'expired', 'force-released'] as const),
    ended,
    releaseRequest: r() < 0.1 ? { at: new Date(at), operator: 'op', reason: 'why' } : null,
    version,
  };
}

function randomId(r: () => number): string {
  const parts = ['a', 'b', 'B', 'tenant-1', 'tenant-2', 'Ω', 'p/', 'group:g:member:w-1', '0', '9'];
  let id = '';
  const n = 1 + Math.floor(r() * 3);
  for (let i = 0; i < n; i++) id += parts[Math.floor(r() * parts.length)];
  return `${id}${Math.floor(r() * 50)}`;
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const nn = (v: number | null): number => v ?? -1;

function refKey(row: LeaseRow, status: LeaseStatus, column: ViewSortColumn): string | number | bigint {
  switch (column) {
    case 'workId':
      return 0;
    case 'holderId':
      return row.holderId;
    case 'status':
      return (['live', 'expiring', 'expired', 'released', 'stuck', 'force-released'] as const).indexOf(
        status,
      );
    case 'fencingToken':
      return BigInt(row.fencingToken);
    case 'renewedAt':
    case 'checkpointedAt':
    case 'checkpointSize':
      return nn(row[column]);
    default:
      return row[column];
  }
}

function reference(
  rows: Map<string, LeaseRow>,
  at: number,
  filter: ViewFilter,
  column: ViewSortColumn,
  dir: 'asc' | 'desc',
): LeaseRow[] {
  const search = (filter.search ?? '').toLowerCase();
  const out = [...rows.values()].filter((row) => {
    const st = leaseStatus(row, at, T);
    if (filter.statuses !== undefined && filter.statuses.length > 0 && !filter.statuses.includes(st))
      return false;
    if (filter.workIdPrefix !== undefined && !row.workId.startsWith(filter.workIdPrefix)) return false;
    if (filter.holder !== undefined && !row.holderId.startsWith(filter.holder)) return false;
    if (
      search !== '' &&
      !row.workId.toLowerCase().includes(search) &&
      !row.holderId.toLowerCase().includes(search)
    )
      return false;
    return true;
  });
  out.sort((a, b) => {
    const ka = refKey(a, leaseStatus(a, at, T), column);
    const kb = refKey(b, leaseStatus(b, at, T), column);
    const c = ka < kb ? -1 : ka > kb ? 1 : 0;
    return c || cmp(a.workId, b.workId);
  });
  if (dir === 'desc') out.reverse();
  return out;
}

function randomFilter(r: () => number): ViewFilter {
  const f: ViewFilter = {};
  if (r() < 0.4)
    f.statuses = (['live', 'expiring', 'expired', 'released', 'stuck', 'force-released'] as const).filter(
      () => r() < 0.4,
    );
  if (r() < 0.3) f.workIdPrefix = ['a', 'tenant-', 'B', 'p/', 'zz', 'group:'][Math.floor(r() * 6)]!;
  if (r() < 0.3) f.holder = ['w-', 'W', 'worker', 'x', 'q'][Math.floor(r() * 5)]!;
  if (r() < 0.3) f.search = ['b', 'T', 'ω', '1', 'w-3', 'nothing'][Math.floor(r() * 6)]!;
  return f;
}

function query(
  filter: ViewFilter,
  column: ViewSortColumn,
  dir: 'asc' | 'desc',
  cursor: string | null,
  limit: number,
  offset?: number,
): ParsedViewQuery {
  return {
    connectionId: 'c',
    filter,
    sort: { column, dir },
    cursor,
    limit,
    ...(offset === undefined ? {} : { offset }),
  };
}

describe('fleet index against a naive reference', () => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    it(`random fleet and changes, seed ${seed}`, () => {
      const r = rng(seed);
      let at = T0;
      const store = new FleetStore(T, at);
      const views = new ViewQueries(store);
      const rows = new Map<string, LeaseRow>();
      let version = 1n;
      for (let round = 0; round < 12; round++) {
        // Random changes: inserts, updates, deletes; then time moves on.
        const changes = round === 0 ? 400 : 60;
        for (let i = 0; i < changes; i++) {
          const roll = r();
          const ids = [...rows.keys()];
          if (roll < 0.15 && ids.length > 0) {
            const id = ids[Math.floor(r() * ids.length)]!;
            expect(store.delete(id)).toBe(true);
            rows.delete(id);
          } else {
            const id = roll < 0.5 && ids.length > 0 ? ids[Math.floor(r() * ids.length)]! : randomId(r);
            const info = randomInfo(r, id, at, version++);
            store.set(info);
            rows.set(id, toLeaseRow(info));
          }
        }
        at += Math.floor(r() * 30_000);
        store.judge(at);
        expect(store.size).toBe(rows.size);
        // Counts and every status agree with status.ts.
        const counts: Record<string, number> = {};
        for (const row of rows.values()) {
          const st = leaseStatus(row, at, T);
          counts[st] = (counts[st] ?? 0) + 1;
          const slot = store.find(row.workId);
          expect(store.cols.row(slot)).toEqual(row);
          expect(store.statusName(slot)).toBe(st);
        }
        for (const [st, n] of Object.entries(store.countsByStatus())) expect(n).toBe(counts[st] ?? 0);
        // Views: every page forward, then backward from the end, equal the reference.
        for (let v = 0; v < 6; v++) {
          const filter = v === 0 ? {} : randomFilter(r);
          const column = VIEW_SORT_COLUMNS[Math.floor(r() * VIEW_SORT_COLUMNS.length)]!;
          const dir = r() < 0.5 ? 'asc' : 'desc';
          const expected = reference(rows, at, filter, column, dir).map((row) => row.workId);
          const limit = 1 + Math.floor(r() * 40);
          const seen: string[] = [];
          let cursor: string | null = null;
          let last: ReturnType<ViewQueries['query']> | null = null;
          for (let guard = 0; guard < 1000; guard++) {
            const page = views.query(query(filter, column, dir, cursor, limit));
            expect(page.total).toBe(expected.length);
            expect(page.offset).toBe(seen.length);
            expect(page.prevCursor === null).toBe(seen.length === 0 || page.slots.length === 0);
            seen.push(...page.slots.map((s) => store.cols.workId[s]!));
            last = page;
            if (page.nextCursor === null) break;
            cursor = page.nextCursor;
          }
          expect(seen).toEqual(expected);
          // Backward from the last page.
          const back: string[] = [];
          let prev = last?.prevCursor ?? null;
          if (last !== null) back.unshift(...last.slots.map((s) => store.cols.workId[s]!));
          while (prev !== null) {
            const page = views.query(query(filter, column, dir, prev, limit));
            back.unshift(...page.slots.map((s) => store.cols.workId[s]!));
            prev = page.prevCursor;
          }
          expect(back).toEqual(expected);
          // A jump by offset.
          const offset = Math.floor(r() * (expected.length + 2));
          const jump = views.query(query(filter, column, dir, null, limit, offset));
          expect(jump.slots.map((s) => store.cols.workId[s]!)).toEqual(
            expected.slice(offset, offset + limit),
          );
          if (jump.slots.length > 0) expect(jump.offset).toBe(offset);
        }
      }
    });
  }

  it('due(): a row left out can not change status before the next check', () => {
    const r = rng(42);
    let at = T0;
    const store = new FleetStore(T, at);
    const rows = new Map<string, LeaseRow>();
    for (let i = 0; i < 2000; i++) {
      const info = randomInfo(r, `w${i}`, at, 1n);
      store.set(info);
      rows.set(info.workId, toLeaseRow(info));
    }
    for (let round = 0; round < 20; round++) {
      const next = at + 500 + Math.floor(r() * 3000);
      const due = new Set(store.due(next).map((s) => store.cols.workId[s]!));
      for (const row of rows.values()) {
        const change = nextStatusChangeAt(row, at, T);
        const changes = leaseStatus(row, at, T) !== leaseStatus(row, next, T);
        if (changes) expect(due.has(row.workId)).toBe(true);
        if (due.has(row.workId)) expect(change !== null && change <= next).toBe(true);
      }
      at = next;
      store.judge(at);
    }
  });

  it('refuses cursors it did not make, or of another sort, with INVALID_ARGUMENT', () => {
    const store = new FleetStore(T, T0);
    const views = new ViewQueries(store);
    for (let i = 0; i < 10; i++) store.set(randomInfo(rng(i), `w${i}`, T0, 1n));
    const page = views.query(query({}, 'expiresAt', 'asc', null, 3));
    expect(page.nextCursor).not.toBeNull();
    for (const bad of ['x', 'eyJ9', Buffer.from('[1,"nope","asc",1,"a","a"]').toString('base64url')]) {
      expect(() => views.query(query({}, 'expiresAt', 'asc', bad, 3))).toThrow(/invalid cursor/);
    }
    expect(() => views.query(query({}, 'workId', 'asc', page.nextCursor, 3))).toThrow(
      /belongs to the sort expiresAt asc/,
    );
    expect(() => views.query(query({}, 'expiresAt', 'desc', page.nextCursor, 3))).toThrow(
      /INVALID|invalid cursor/,
    );
    expect(DEFAULT_VIEW_SORT.column).toBe('workId');
  });
});
