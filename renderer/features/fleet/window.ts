/**
 * The fleet table's data as the browser holds it: for each connection in scope, one window of
 * its view (src/console/common/view.ts) — the rows around what is on screen, plus the view's
 * total and the whole fleet's counts — never the fleet. Pure functions, kept out of React.
 *
 * "All connections" stacks the connections' views one after the other (grouped by connection,
 * each sorted by the chosen column on its own server): position i of the table is position
 * i - start(k) of the k-th connection's view. Every connection keeps a window (at least its
 * first rows) so its total and counts are always known.
 */
import {
  type ErrorDataWire,
  LEASE_STATUSES,
  type LeaseRow,
  type LeaseStatus,
  MAX_VIEW_LIMIT,
  type ViewFilter,
  type ViewResult,
  type ViewSort,
} from '../../../src/console/common/index.ts';
import type { FleetFilter, Sort, StatusCounts } from './model.ts';

/** One connection's part of the table. */
export interface Segment {
  connectionId: string;
  /** The latest window for the current filter and sort; null until the first arrives. */
  view: ViewResult | null;
  error: ErrorDataWire | null;
}

/** Rows fetched beyond the screen on each side: a wheel flick or a page key finds them there. */
export const MARGIN = 150;
/** A window is moved when the screen comes this close to an edge it does not end at. */
export const EDGE = 40;
/** The first window of a connection not on screen: enough for its totals and a first page. */
export const FIRST_ROWS = 100;

export interface Layout {
  /** Where each segment starts in the table, and how many rows it has (its view's total). */
  starts: number[];
  lengths: number[];
  total: number;
}

export function layoutOf(segments: readonly Segment[]): Layout {
  const starts: number[] = [];
  const lengths: number[] = [];
  let total = 0;
  for (const s of segments) {
    starts.push(total);
    const n = s.view?.total ?? 0;
    lengths.push(n);
    total += n;
  }
  return { starts, lengths, total };
}

/** Which segment a table position falls in, and where in it; null past the end. */
export function locate(layout: Layout, index: number): { k: number; local: number } | null {
  if (index < 0 || index >= layout.total) return null;
  let lo = 0;
  let hi = layout.starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if ((layout.starts[mid] as number) <= index) lo = mid;
    else hi = mid - 1;
  }
  // Empty segments share a start with the next one: step past them.
  while (lo < layout.lengths.length - 1 && (layout.lengths[lo] as number) === 0) lo++;
  return { k: lo, local: index - (layout.starts[lo] as number) };
}

/** A table position: the lease and its status (judged by the server with the counts), or not fetched yet. */
export type Slot =
  | { connectionId: string; row: LeaseRow; status: LeaseStatus; view: ViewResult }
  | { connectionId: string; row: null; status: null; view: ViewResult | null };

export function slotAt(segments: readonly Segment[], layout: Layout, index: number): Slot | null {
  const at = locate(layout, index);
  if (at === null) return null;
  const seg = segments[at.k] as Segment;
  const view = seg.view;
  if (view !== null) {
    const i = at.local - view.offset;
    const row = view.rows[i];
    const status = view.statuses[i];
    if (row !== undefined && status !== undefined)
      return { connectionId: seg.connectionId, row, status, view };
  }
  return { connectionId: seg.connectionId, row: null, status: null, view };
}

/** The part of table rows [from, to) that falls in segment k, in its own positions; null if none. */
export function localRange(layout: Layout, k: number, from: number, to: number): [number, number] | null {
  const start = layout.starts[k] as number;
  const a = Math.max(from, start) - start;
  const b = Math.min(to, start + (layout.lengths[k] as number)) - start;
  return a < b ? [a, b] : null;
}

export interface WindowAsk {
  offset: number;
  limit: number;
}

function covers(lo: number, hi: number, total: number, a: number, b: number): boolean {
  const needLo = Math.max(0, a - EDGE);
  const needHi = Math.min(total, b + EDGE);
  return lo <= needLo && hi >= needHi;
}

/**
 * The window a connection should be asked for, given what of it is on screen (`range`, its own
 * positions) and what it has (`view`) or was last asked (`asked`); null when that still serves.
 */
export function windowFor(
  range: [number, number] | null,
  view: ViewResult | null,
  asked: WindowAsk | null,
): WindowAsk | null {
  if (range === null) {
    if (view !== null || asked !== null) return null;
    return { offset: 0, limit: FIRST_ROWS };
  }
  const [a, b] = range;
  const total = view?.total ?? Number.POSITIVE_INFINITY;
  if (view !== null && covers(view.offset, view.offset + view.rows.length, total, a, b)) return null;
  if (asked !== null && covers(asked.offset, asked.offset + asked.limit, total, a, b)) return null;
  const offset = Math.max(0, a - MARGIN);
  return { offset, limit: Math.min(MAX_VIEW_LIMIT, b - offset + MARGIN) };
}

/** What the header says: rows matching, the whole fleet by status, and whether that is all of it. */
export interface Summary {
  /** Rows matching the filters (the table's length). */
  shown: number;
  /** Leases in the fleet in scope, whatever the filters. */
  fleet: number;
  counts: StatusCounts;
  /**
   * Some connection's index is still being read: every number above is what was read so far (a
   * lower bound), to be shown as loading, never as a total. `estimate`: about how many in all,
   * null when some connection cannot say.
   */
  loading: { read: number; estimate: number | null } | null;
  /** Some connection has not answered the current filters yet: its numbers are missing, not zero. */
  pending: boolean;
}

export function summarize(segments: readonly Segment[]): Summary {
  const counts = {} as StatusCounts;
  for (const s of LEASE_STATUSES) counts[s] = 0;
  let shown = 0;
  let fleet = 0;
  let read = 0;
  let estimate: number | null = 0;
  let loading = false;
  let pending = false;
  for (const seg of segments) {
    const v = seg.view;
    if (v === null) {
      if (seg.error === null) pending = true;
      continue;
    }
    shown += v.total;
    fleet += v.counts.total;
    for (const s of LEASE_STATUSES) counts[s] += v.counts.byStatus[s] ?? 0;
    if (v.loading !== null) {
      loading = true;
      read += v.loading.read;
      estimate = estimate === null || v.loading.estimate === null ? null : estimate + v.loading.estimate;
    } else {
      read += v.counts.total;
      if (estimate !== null) estimate += v.counts.total;
    }
  }
  return { shown, fleet, counts, loading: loading ? { read, estimate } : null, pending };
}

/** The filter as the server takes it (empty parts left out). */
export function toViewFilter(filter: FleetFilter): ViewFilter {
  const out: ViewFilter = {};
  const search = filter.search.trim();
  const holder = filter.holder.trim();
  const prefix = filter.workIdPrefix.trim();
  if (search !== '') out.search = search;
  if (holder !== '') out.holder = holder;
  if (prefix !== '') out.workIdPrefix = prefix;
  if (filter.statuses.size > 0) out.statuses = LEASE_STATUSES.filter((s) => filter.statuses.has(s));
  return out;
}

/** The sort as the server takes it: "by connection" is the stacking itself, work ids within each. */
export function toViewSort(sort: Sort): ViewSort {
  return sort.key === 'connection' ? { column: 'workId', dir: 'asc' } : { column: sort.key, dir: sort.dir };
}

/** The connections in the order the table stacks them. */
export function stackOrder(ids: readonly string[], sort: Sort): string[] {
  return sort.key === 'connection' && sort.dir === 'desc' ? [...ids].reverse() : [...ids];
}
