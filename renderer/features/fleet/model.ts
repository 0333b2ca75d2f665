/**
 * The fleet table's data model, kept out of React so it is cheap and testable.
 *
 * Per connection the query cache holds a {@link FleetData}: rows in a Map by
 * work id plus the ids in work-id order, maintained incrementally. Pushed
 * `leases` events are applied in place and the wrapper is replaced (new
 * `rev`), so a 100 000-row fleet with thousands of changes a second never
 * copies the whole Map: a batch costs O(batch). This keeps the design rule
 * (pushed changes reach the query cache through `setQueryData`) without a
 * separate `useSyncExternalStore` store: the cached value is the mutable
 * store, its new wrapper is the version bump that re-renders subscribers,
 * and visible rows read the Map at render time, so values shown are always
 * the latest.
 *
 * The visible list (filters, counts, sort) is derived by {@link viewJob}, a
 * pass over every row that runs in slices of a few milliseconds (see
 * renderer/lib/slices.ts): restarted when filters, sort or the snapshot
 * change, refreshed at most every half second for membership and the clock
 * (statuses move with time alone). Time columns sort by the stored instant,
 * which time does not move.
 */
import type { ConsoleEvent, LeaseRow, LeaseStatus, Thresholds } from '../../../src/console/common/index.ts';
import { judgedAt, LEASE_STATUSES, leaseStatus } from '../../../src/console/common/index.ts';
import { drain, sortIndices } from '../../lib/slices.ts';

export interface FleetData {
  connectionId: string;
  rows: Map<string, LeaseRow>;
  /** Every work id, ascending by UTF-16 code units (the stable base order for every sort). */
  sortedIds: string[];
  /** Seq of the last event applied. */
  seq: number;
  serverTime: number;
  /**
   * When these rows' heartbeats were last checked (backend time; null before the first check, or
   * from a server that does not say). Rows and this time travel together (snapshot, then events),
   * so statuses are judged no later than it (src/console/status.ts `judgedAt`).
   */
  heartbeatsAsOf: number | null;
  /** Bumped by every applied batch. */
  rev: number;
  /** Bumped when ids were added or removed. */
  membershipRev: number;
  /** Set while the snapshot is still arriving page by page: rows so far and in the whole snapshot. */
  loading?: { loaded: number; total: number } | undefined;
}

export interface Snapshot {
  connectionId: string;
  rows: LeaseRow[];
  seq: number;
  serverTime: number;
  heartbeatsAsOf?: number | null | undefined;
}

export type LeasesEvent = Extract<ConsoleEvent, { type: 'leases' }>;

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function fromSnapshot(snapshot: Snapshot): FleetData {
  const rows = new Map<string, LeaseRow>();
  for (const row of snapshot.rows) rows.set(row.workId, row);
  const sortedIds = [...rows.keys()].sort(cmp);
  return {
    connectionId: snapshot.connectionId,
    rows,
    sortedIds,
    seq: snapshot.seq,
    serverTime: snapshot.serverTime,
    heartbeatsAsOf: snapshot.heartbeatsAsOf ?? null,
    rev: 0,
    membershipRev: 0,
  };
}

/**
 * Builds a {@link FleetData} from a snapshot read in pages (one page per
 * task, so no single task parses or inserts 100 000 rows). Pages come in
 * work-id order; if one ever does not, the ids are sorted once at the end.
 */
export class SnapshotBuilder {
  private readonly rows = new Map<string, LeaseRow>();
  private readonly ids: string[] = [];
  private ordered = true;

  constructor(private readonly head: Omit<Snapshot, 'rows'>) {}

  add(rows: readonly LeaseRow[]): void {
    const { ids } = this;
    for (const row of rows) {
      if (this.rows.has(row.workId)) continue;
      this.rows.set(row.workId, row);
      const last = ids[ids.length - 1];
      if (last !== undefined && !(last < row.workId)) this.ordered = false;
      ids.push(row.workId);
    }
  }

  /**
   * What has arrived so far, to show while later pages load: the first rows need not wait for
   * 100 000 (the view refreshes as membershipRev moves). Shares the builder's Map and id list.
   */
  partial(page: number, total: number): FleetData {
    if (!this.ordered) this.ids.sort(cmp);
    this.ordered = true;
    return {
      connectionId: this.head.connectionId,
      rows: this.rows,
      sortedIds: this.ids,
      seq: this.head.seq,
      serverTime: this.head.serverTime,
      heartbeatsAsOf: this.head.heartbeatsAsOf ?? null,
      rev: page,
      membershipRev: page,
      loading: { loaded: this.ids.length, total },
    };
  }

  finish(): FleetData {
    if (!this.ordered) this.ids.sort(cmp);
    return {
      connectionId: this.head.connectionId,
      rows: this.rows,
      sortedIds: this.ids,
      seq: this.head.seq,
      serverTime: this.head.serverTime,
      heartbeatsAsOf: this.head.heartbeatsAsOf ?? null,
      rev: 0,
      membershipRev: 0,
    };
  }
}

function lowerBound(ids: string[], id: string): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((ids[mid] as string) < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export interface ApplyResult {
  data: FleetData;
  /** An event's seq skipped ahead: events were lost, fetch a new snapshot. */
  gap: boolean;
  /** Events at or after the gap, not applied. */
  unapplied: LeasesEvent[];
}

/**
 * Applies events in seq order. Events already covered (seq <= data.seq) are
 * dropped; a skipped seq stops at the gap.
 */
export function applyLeaseEvents(data: FleetData, events: readonly LeasesEvent[]): ApplyResult {
  let seq = data.seq;
  let serverTime = data.serverTime;
  let heartbeatsAsOf = data.heartbeatsAsOf;
  let added = 0;
  let removed = 0;
  let applied = 0;
  const { rows, sortedIds } = data;
  const newIds: string[] = [];
  const goneIds = new Set<string>();
  for (let i = 0; i < events.length; i++) {
    const ev = events[i] as LeasesEvent;
    if (ev.seq <= seq) continue;
    if (ev.seq !== seq + 1) {
      return finish(true, events.slice(i));
    }
    seq = ev.seq;
    serverTime = Math.max(serverTime, ev.serverTime);
    if (ev.heartbeatsAsOf != null && (heartbeatsAsOf === null || ev.heartbeatsAsOf > heartbeatsAsOf)) {
      heartbeatsAsOf = ev.heartbeatsAsOf;
    }
    applied++;
    for (const row of ev.upserts) {
      const old = rows.get(row.workId);
      // Versions only grow; a late duplicate of an older version must not win.
      if (old !== undefined && isOlder(row, old)) continue;
      if (old === undefined) {
        if (goneIds.has(row.workId)) goneIds.delete(row.workId);
        else newIds.push(row.workId);
        added++;
      }
      rows.set(row.workId, row);
    }
    for (const id of ev.removed) {
      if (rows.delete(id)) {
        removed++;
        goneIds.add(id);
      }
    }
  }
  return finish(false, []);

  function finish(gap: boolean, unapplied: LeasesEvent[]): ApplyResult {
    if (applied === 0 && !gap) return { data, gap, unapplied };
    if (added > 0 || removed > 0) patchOrder(sortedIds, newIds, goneIds, rows);
    return {
      data: {
        ...data,
        seq,
        serverTime,
        heartbeatsAsOf,
        rev: data.rev + (applied > 0 ? 1 : 0),
        membershipRev: data.membershipRev + (added > 0 || removed > 0 ? 1 : 0),
      },
      gap,
      unapplied,
    };
  }
}

function isOlder(row: LeaseRow, old: LeaseRow): boolean {
  const t = cmpDecimal(row.fencingToken, old.fencingToken);
  if (t !== 0) return t < 0;
  return cmpDecimal(row.version, old.version) < 0;
}

/** Compares non-negative decimal strings without losing precision past 2^53. */
export function cmpDecimal(a: string, b: string): number {
  return a.length - b.length || cmp(a, b);
}

function patchOrder(
  sortedIds: string[],
  newIds: string[],
  goneIds: Set<string>,
  rows: Map<string, LeaseRow>,
): void {
  // A few changes: binary insert/splice. Many: rebuild, which is O(n log n) once instead of O(n) per id.
  if (newIds.length + goneIds.size > 256) {
    const all = [...rows.keys()].sort(cmp);
    sortedIds.length = 0;
    for (const id of all) sortedIds.push(id);
    return;
  }
  for (const id of goneIds) {
    const at = lowerBound(sortedIds, id);
    if (sortedIds[at] === id) sortedIds.splice(at, 1);
  }
  for (const id of newIds) {
    if (!rows.has(id)) continue;
    const at = lowerBound(sortedIds, id);
    if (sortedIds[at] !== id) sortedIds.splice(at, 0, id);
  }
}

/** Replaces one row (e.g. the result of a force-release) as if an event had brought it. */
export function upsertRow(data: FleetData, row: LeaseRow): FleetData {
  const old = data.rows.get(row.workId);
  if (old !== undefined && isOlder(row, old)) return data;
  data.rows.set(row.workId, row);
  if (old === undefined) patchOrder(data.sortedIds, [row.workId], new Set(), data.rows);
  return {
    ...data,
    rev: data.rev + 1,
    membershipRev: data.membershipRev + (old === undefined ? 1 : 0),
  };
}

// ---------------------------------------------------------------------------
// The derived view: filters, counts, sort.

export interface FleetFilter {
  /** Substring of work id or holder, case-insensitive. */
  search: string;
  /** Empty: every status. */
  statuses: ReadonlySet<LeaseStatus>;
  /** Holder id prefix. */
  holder: string;
  /** Work id prefix. */
  workIdPrefix: string;
}

export const EMPTY_FILTER: FleetFilter = { search: '', statuses: new Set(), holder: '', workIdPrefix: '' };

export const SORT_KEYS = [
  'connection',
  'workId',
  'holderId',
  'fencingToken',
  'status',
  'expiresAt',
  'renewedAt',
  'checkpointedAt',
  'checkpointSize',
] as const;
export type SortKey = (typeof SORT_KEYS)[number];
export interface Sort {
  key: SortKey;
  dir: 'asc' | 'desc';
}

export interface FleetSource {
  connectionId: string;
  data: FleetData;
  thresholds: Thresholds;
  clockOffsetMs: number;
  /**
   * Set while the connection is stale: the backend time statuses are computed at (its last
   * confirmed one) instead of the local clock plus offset. Absent or null: live.
   */
  frozenAt?: number | null | undefined;
}

/** The backend's clock as this source shows it: its last confirmed time while stale, else local clock + offset. */
export function sourceClock(src: FleetSource, localNow: number): number {
  return src.frozenAt ?? localNow + src.clockOffsetMs;
}

/**
 * The backend time a source's statuses are judged at: {@link sourceClock}, but no later than its
 * rows' last heartbeat check (`data.heartbeatsAsOf`), so a lease renewed since is never shown expired.
 */
export function sourceNow(src: FleetSource, localNow: number): number {
  return judgedAt(sourceClock(src, localNow), src.data.heartbeatsAsOf);
}

export type StatusCounts = Record<LeaseStatus, number>;

export function emptyCounts(): StatusCounts {
  const counts = {} as StatusCounts;
  for (const s of LEASE_STATUSES) counts[s] = 0;
  return counts;
}

/** The instant a view judged one connection's rows at. */
export interface SourceInstant {
  /** The backend clock it read ({@link sourceClock}): what countdowns count from. */
  clock: number;
  /** The backend time statuses were judged at ({@link sourceNow}). */
  judged: number;
}

export interface FleetView {
  /** Parallel arrays: the i-th visible row is `connIds[i]` / `workIds[i]`. */
  connIds: string[];
  workIds: string[];
  /**
   * By connection id, the instant this view judged the connection's rows at. The table draws
   * each row's status and countdowns at it, not at the newest tick: a view is published a few
   * milliseconds (at 100 000 leases up to half a second) after the tick it was computed for, and
   * rows drawn at the tick meanwhile disagreed with the view's count chips and status filter
   * (a chip read "expiring 0" beside a row marked expiring).
   */
  instants: ReadonlyMap<string, SourceInstant>;
  /**
   * Counts of the whole fleet in scope, by status, whatever the filters: one meaning for the
   * chips, so an operator who filtered never reads "expired 0" while expired leases exist.
   */
  counts: StatusCounts;
  /** Rows before any filter. */
  total: number;
}

/** Attention first: what an on-call operator looks for. */
const STATUS_RANK: Record<LeaseStatus, number> = {
  stuck: 0,
  expired: 1,
  expiring: 2,
  live: 3,
  'force-released': 4,
  released: 5,
};

/** The text filters (work-id prefix, holder prefix, search) as one predicate, used by every pass. */
function textFilter(filter: FleetFilter): (row: LeaseRow) => boolean {
  const search = filter.search.trim().toLowerCase();
  const holder = filter.holder.trim();
  const prefix = filter.workIdPrefix.trim();
  return (row) =>
    (prefix === '' || row.workId.startsWith(prefix)) &&
    (holder === '' || row.holderId.startsWith(holder)) &&
    (search === '' ||
      row.workId.toLowerCase().includes(search) ||
      row.holderId.toLowerCase().includes(search));
}

/** Rows filtered between yields of a view job. */
const PASS_STEP = 1024;

/**
 * One pass over every row of the given connections: status (by each
 * connection's server clock, or its last confirmed time while stale), counts
 * of the whole fleet, filters; then, unless the base order is
 * the answer, a stable sort of what passed (ties keep connection then work-id
 * order). A sliceable job (see renderer/lib/slices.ts): it yields every
 * thousand rows and through the sort, so no single task holds the page.
 *
 * Sorts by a time column use the stored instant (expiresAt, renewedAt…),
 * which does not move as time passes: the order changes only with the data.
 *
 * The id lists are copied first, so events applied between slices (they
 * mutate the Map and the id list in place) cannot make the pass skip or
 * repeat a row; a row changed meanwhile is read as it is when reached.
 */
export function* viewJob(
  sources: readonly FleetSource[],
  filter: FleetFilter,
  sort: Sort,
  localNow: number,
  /**
   * The previous view, when the caller knows its order still holds (same rows, filters
   * and a sort that neither time nor values move): only the counts are recomputed, and
   * no 100 000-element arrays are allocated (they would be old-generation garbage
   * every second, and major GC pauses are long tasks).
   */
  keep: FleetView | null = null,
): Generator<void, FleetView> {
  const counts = emptyCounts();
  const passes = textFilter(filter);
  const statusFilter = filter.statuses.size > 0 ? filter.statuses : null;
  const instants = new Map<string, SourceInstant>();
  const judge = (src: FleetSource): number => {
    const at = { clock: sourceClock(src, localNow), judged: sourceNow(src, localNow) };
    instants.set(src.connectionId, at);
    return at.judged;
  };
  if (keep !== null) {
    let total = 0;
    for (const src of sources) {
      const now = judge(src);
      const { thresholds } = src;
      total += src.data.rows.size;
      let i = 0;
      // Map iteration stays well-defined when events change the Map between slices.
      for (const row of src.data.rows.values()) {
        if ((++i & (PASS_STEP - 1)) === 0) yield;
        counts[leaseStatus(row, now, thresholds)]++;
      }
    }
    return { connIds: keep.connIds, workIds: keep.workIds, instants, counts, total };
  }
  const connIds: string[] = [];
  const workIds: string[] = [];
  const picked: LeaseRow[] = [];
  const statuses: LeaseStatus[] = [];
  let total = 0;
  const lists = sources.map((src) => src.data.sortedIds.slice());
  yield;
  for (let k = 0; k < sources.length; k++) {
    const src = sources[k] as FleetSource;
    const ids = lists[k] as string[];
    const now = judge(src);
    const { rows } = src.data;
    const { thresholds, connectionId } = src;
    total += ids.length;
    for (let i = 0; i < ids.length; i++) {
      if ((i & (PASS_STEP - 1)) === PASS_STEP - 1) yield;
      const id = ids[i] as string;
      const row = rows.get(id);
      if (row === undefined) continue;
      const status = leaseStatus(row, now, thresholds);
      counts[status]++;
      if (!passes(row)) continue;
      if (statusFilter !== null && !statusFilter.has(status)) continue;
      connIds.push(connectionId);
      workIds.push(id);
      picked.push(row);
      statuses.push(status);
    }
  }
  const n = workIds.length;
  let compare: ((i: number, j: number) => number) | null = null;
  if (sort.key === 'workId' || sort.key === 'connection') {
    // The pass already produced connection-then-work-id order.
    if (sort.key === 'workId' && sources.length > 1) {
      compare = (i, j) => cmp(workIds[i] as string, workIds[j] as string);
    } else if (sort.dir === 'desc') {
      connIds.reverse();
      workIds.reverse();
      return { connIds, workIds, instants, counts, total };
    } else {
      return { connIds, workIds, instants, counts, total };
    }
  } else if (sort.key === 'holderId' || sort.key === 'fencingToken') {
    const keys: string[] = new Array(n);
    for (let i = 0; i < n; i++) keys[i] = (picked[i] as LeaseRow)[sort.key];
    compare =
      sort.key === 'holderId'
        ? (i, j) => cmp(keys[i] as string, keys[j] as string)
        : (i, j) => cmpDecimal(keys[i] as string, keys[j] as string);
  } else {
    const keys = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      if (sort.key === 'status') keys[i] = STATUS_RANK[statuses[i] as LeaseStatus];
      else keys[i] = (picked[i] as LeaseRow)[sort.key] ?? Number.NEGATIVE_INFINITY;
    }
    compare = (i, j) => {
      const a = keys[i] as number;
      const b = keys[j] as number;
      return a < b ? -1 : a > b ? 1 : 0;
    };
  }
  yield;
  const by = compare;
  const order = yield* sortIndices(n, sort.dir === 'asc' ? by : (i, j) => by(j, i));
  const c: string[] = new Array(n);
  const w: string[] = new Array(n);
  for (let k = 0; k < n; k++) {
    const from = order[k] as number;
    c[k] = connIds[from] as string;
    w[k] = workIds[from] as string;
  }
  return { connIds: c, workIds: w, instants, counts, total };
}

/** Whether a view's order depends only on membership, filters and sort (not on time or row values). */
export function orderIsStatic(filter: FleetFilter, sort: Sort): boolean {
  return filter.statuses.size === 0 && (sort.key === 'workId' || sort.key === 'connection');
}

/** {@link viewJob} run to completion at once. */
export function computeView(
  sources: readonly FleetSource[],
  filter: FleetFilter,
  sort: Sort,
  localNow: number,
): FleetView {
  return drain(viewJob(sources, filter, sort, localNow));
}

/** Counts and stuck ids of one connection, for the header and notifications. */
export function summarize(
  src: FleetSource,
  localNow: number,
): { counts: StatusCounts; stuck: string[]; expired: number } {
  return drain(summarizeJob(src, localNow));
}

/** {@link summarize} as a sliceable job (see renderer/lib/slices.ts). */
export function* summarizeJob(
  src: FleetSource,
  localNow: number,
): Generator<void, { counts: StatusCounts; stuck: string[]; expired: number }> {
  const counts = emptyCounts();
  const stuck: string[] = [];
  const now = sourceNow(src, localNow);
  const rows = [...src.data.rows.values()];
  for (let i = 0; i < rows.length; i++) {
    if ((i & (PASS_STEP - 1)) === PASS_STEP - 1) yield;
    const row = rows[i] as LeaseRow;
    const s = leaseStatus(row, now, src.thresholds);
    counts[s]++;
    if (s === 'stuck') stuck.push(row.workId);
  }
  return { counts, stuck, expired: counts.expired };
}
