/**
 * Fleet view queries over the index (issue 43): a filter, a sort, and keyset paging by opaque
 * cursors that name the sort key and the work id of the row they continue from. Statuses are the
 * store's, judged at its `judgedAt` (the caller judges first).
 *
 * Costs at n leases: a window without a filter (or by a work-id prefix in work-id order) is
 * O(log n + limit); its total and offset are O(1). A filter by statuses alone takes its total from
 * the counts. Holder and search filters walk the order until the window is full and count their
 * total by one pass over the columns (cached until the index changes).
 */
import { InvalidArgumentError } from '../../lease/errors.ts';
import type { ParsedViewQuery, ViewFilter, ViewSortColumn } from '../common/view.ts';
import { VIEW_SORT_COLUMNS } from '../common/view.ts';
import { F_LOWER } from './columns.ts';
import type { SortedSlots } from './sorted.ts';
import { type FleetStore, STATUS_NAMES } from './store.ts';

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export interface CompiledFilter {
  /** Nothing but (maybe) a work-id prefix. */
  readonly trivial: boolean;
  /** Statuses only (bit per status code), 0: any. */
  readonly statusMask: number;
  readonly prefix: string;
  /** Only statuses (no text part). */
  readonly statusOnly: boolean;
  test(slot: number): boolean;
}

export function compileFilter(store: FleetStore, filter: ViewFilter): CompiledFilter {
  const cols = store.cols;
  let statusMask = 0;
  for (const s of filter.statuses ?? []) statusMask |= 1 << STATUS_NAMES.indexOf(s);
  if (statusMask === (1 << STATUS_NAMES.length) - 1) statusMask = 0;
  const prefix = filter.workIdPrefix ?? '';
  const holder = filter.holder ?? '';
  const search = (filter.search ?? '').toLowerCase();
  // Per interned holder: 0 unknown, 1 no, 2 yes (holders interned later are judged when met).
  const holderOk = holder === '' && search === '' ? null : new Uint8Array(cols.holders.values.length + 64);
  const holderMatch = (h: number): number => {
    const name = cols.holders.values[h]!;
    const ok = name.startsWith(holder);
    const found = search !== '' && name.toLowerCase().includes(search);
    return (ok ? 2 : 1) | (found ? 4 : 0);
  };
  const status = store.status;
  const test = (slot: number): boolean => {
    if (statusMask !== 0 && (statusMask & (1 << status[slot]!)) === 0) return false;
    const id = cols.workId[slot]!;
    if (prefix !== '' && !id.startsWith(prefix)) return false;
    if (holderOk === null) return true;
    const h = cols.holder[slot]!;
    let m = h < holderOk.length ? holderOk[h]! : 0;
    if (m === 0) {
      m = holderMatch(h);
      if (h < holderOk.length) holderOk[h] = m;
    }
    if ((m & 2) === 0) return false;
    if (search === '' || (m & 4) !== 0) return true;
    return ((cols.flags[slot]! & F_LOWER) !== 0 ? id : id.toLowerCase()).includes(search);
  };
  const textless = holder === '' && search === '';
  return {
    trivial: textless && statusMask === 0,
    statusMask,
    prefix,
    statusOnly: textless && prefix === '',
    test,
  };
}

interface Cursor {
  column: ViewSortColumn;
  dir: 'asc' | 'desc';
  key: string | number;
  workId: string;
  /** Continue after the row (a next page) or before it (a previous page). */
  after: boolean;
}

export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify([1, c.column, c.dir, c.key, c.workId, c.after ? 'a' : 'b'])).toString(
    'base64url',
  );
}

/** A cursor from a client: INVALID_ARGUMENT unless it is one of ours for this sort. */
export function decodeCursor(text: string, column: ViewSortColumn, dir: 'asc' | 'desc'): Cursor {
  const bad = (why: string): InvalidArgumentError =>
    new InvalidArgumentError(`invalid cursor: ${why}`, { details: { option: 'cursor' } });
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw bad('not a cursor this console made');
  }
  if (!Array.isArray(v) || v.length !== 6 || v[0] !== 1) throw bad('not a cursor this console made');
  const [, col, d, key, workId, side] = v as unknown[];
  if (!VIEW_SORT_COLUMNS.includes(col as ViewSortColumn) || (d !== 'asc' && d !== 'desc'))
    throw bad('not a cursor this console made');
  if (col !== column || d !== dir)
    throw bad(`it belongs to the sort ${String(col)} ${String(d)}, not ${column} ${dir}`);
  if (typeof workId !== 'string' || workId.length > 512 || (side !== 'a' && side !== 'b'))
    throw bad('not a cursor this console made');
  const numeric = column !== 'workId' && column !== 'holderId' && column !== 'fencingToken';
  const keyOk = numeric
    ? typeof key === 'number' && Number.isFinite(key)
    : typeof key === 'string' &&
      key.length <= 512 &&
      (column !== 'fencingToken' || /^[0-9]{1,20}$/.test(key));
  if (!keyOk) throw bad('its sort key does not fit the column');
  return { column, dir, key: key as string | number, workId, after: side === 'a' };
}

export interface ViewWindow {
  slots: number[];
  offset: number;
  nextCursor: string | null;
  prevCursor: string | null;
  total: number;
}

/** Positions [lo, hi) of the order a view walks, and the view's direction over them. */
class ViewOrder {
  readonly lo: number;
  readonly hi: number;
  constructor(
    readonly list: SortedSlots,
    readonly asc: boolean,
    store: FleetStore,
    prefix: string,
    byWorkId: boolean,
  ) {
    if (byWorkId && prefix !== '') {
      const ids = store.cols.workId;
      this.lo = list.lowerBound((s) => byString(ids[s]!, prefix));
      this.hi = list.lowerBound((s) => (ids[s]!.startsWith(prefix) ? -1 : byString(ids[s]!, prefix)));
    } else {
      this.lo = 0;
      this.hi = list.size;
    }
  }
  get length(): number {
    return this.hi - this.lo;
  }
  listPos(v: number): number {
    return this.asc ? this.lo + v : this.hi - 1 - v;
  }
  viewPos(p: number): number {
    return this.asc ? p - this.lo : this.hi - 1 - p;
  }
  /** Visits slots from view position `v` on, forward or backward in view order. */
  walk(v: number, forward: boolean, visit: (slot: number, v: number) => boolean): void {
    if (v < 0 || v >= this.length) return;
    let at = v;
    const step = forward ? 1 : -1;
    this.list.walk(this.listPos(v), forward !== this.asc, (slot) => {
      if (at < 0 || at >= this.length) return false;
      const go = visit(slot, at);
      at += step;
      return go;
    });
  }
}

export class ViewQueries {
  private readonly totals = new Map<string, { seq: number; total: number }>();

  constructor(private readonly store: FleetStore) {}

  query(q: ParsedViewQuery): ViewWindow {
    const { store } = this;
    const { column, dir } = q.sort;
    const filter = compileFilter(store, q.filter);
    const order = new ViewOrder(
      store.order(column),
      dir === 'asc',
      store,
      filter.prefix,
      column === 'workId',
    );
    const prefixed = filter.prefix !== '' && column !== 'workId';
    const exactPositions = filter.trivial && !prefixed;
    let start = 0;
    let forward = true;
    if (q.cursor !== null) {
      const c = decodeCursor(q.cursor, column, dir);
      const ids = store.cols.workId;
      const probe = (s: number): number => store.compareKey(column, s, c.key) || byString(ids[s]!, c.workId);
      const lower = order.list.lowerBound(probe);
      const upper = order.list.upperBound(probe);
      // The first view position past the cursor row in the direction asked.
      if (order.asc) start = c.after ? upper - order.lo : lower - 1 - order.lo;
      else start = c.after ? order.viewPos(lower - 1) : order.viewPos(upper);
      forward = c.after;
    } else if (q.offset !== undefined) {
      start = exactPositions ? q.offset : this.skipMatches(order, filter, q.offset);
    }
    const slots: number[] = [];
    const views: number[] = [];
    let more = false;
    order.walk(start, forward, (slot, v) => {
      if (!filter.test(slot)) return true;
      if (slots.length === q.limit) {
        more = true;
        return false;
      }
      slots.push(slot);
      views.push(v);
      return true;
    });
    if (!forward) {
      slots.reverse();
      views.reverse();
    }
    const first = views[0];
    const last = views[views.length - 1];
    const hasBefore =
      first === undefined ? false : forward ? this.anyMatch(order, filter, first - 1, false) : more;
    const hasAfter =
      last === undefined ? false : forward ? more : this.anyMatch(order, filter, last + 1, true);
    const cursorAt = (slot: number, after: boolean): string =>
      encodeCursor({ column, dir, key: store.key(column, slot), workId: store.cols.workId[slot]!, after });
    return {
      slots,
      offset: first === undefined ? 0 : exactPositions ? first : this.countMatches(order, filter, first),
      nextCursor: hasAfter ? cursorAt(slots[slots.length - 1]!, true) : null,
      prevCursor: hasBefore ? cursorAt(slots[0]!, false) : null,
      total: this.total(q.filter, filter, order),
    };
  }

  /** Rows matching a filter in the whole fleet. */
  total(raw: ViewFilter, filter: CompiledFilter, order?: ViewOrder): number {
    const { store } = this;
    if (filter.trivial && filter.prefix === '') return store.size;
    if (filter.statusOnly) {
      let n = 0;
      for (let i = 0; i < STATUS_NAMES.length; i++)
        if ((filter.statusMask & (1 << i)) !== 0) n += store.counts[i]!;
      return n;
    }
    if (filter.trivial && order !== undefined && order.length !== store.size) return order.length;
    const key = JSON.stringify(raw);
    const cached = this.totals.get(key);
    if (cached !== undefined && cached.seq === store.seq) return cached.total;
    let n = 0;
    const range = order !== undefined && order.length !== store.size ? order : null;
    if (range !== null) {
      range.walk(0, true, (slot) => {
        if (filter.test(slot)) n++;
        return true;
      });
    } else for (const slot of store.byWorkId) if (filter.test(slot)) n++;
    if (this.totals.size > 32) this.totals.clear();
    this.totals.set(key, { seq: store.seq, total: n });
    return n;
  }

  /** Every slot matching a filter, in a sort's order (a job's snapshot). */
  matching(filter: ViewFilter, column: ViewSortColumn = 'workId', dir: 'asc' | 'desc' = 'asc'): number[] {
    const compiled = compileFilter(this.store, filter);
    const order = new ViewOrder(
      this.store.order(column),
      dir === 'asc',
      this.store,
      compiled.prefix,
      column === 'workId',
    );
    const out: number[] = [];
    order.walk(0, true, (slot) => {
      if (compiled.test(slot)) out.push(slot);
      return true;
    });
    return out;
  }

  private skipMatches(order: ViewOrder, filter: CompiledFilter, skip: number): number {
    let seen = 0;
    let at = order.length;
    order.walk(0, true, (slot, v) => {
      if (!filter.test(slot)) return true;
      if (seen === skip) {
        at = v;
        return false;
      }
      seen++;
      return true;
    });
    return at;
  }

  private countMatches(order: ViewOrder, filter: CompiledFilter, before: number): number {
    let n = 0;
    order.walk(0, true, (slot, v) => {
      if (v >= before) return false;
      if (filter.test(slot)) n++;
      return true;
    });
    return n;
  }

  private anyMatch(order: ViewOrder, filter: CompiledFilter, from: number, forward: boolean): boolean {
    let found = false;
    order.walk(from, forward, (slot) => {
      found = filter.test(slot);
      return !found;
    });
    return found;
  }
}
