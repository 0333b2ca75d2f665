/**
 * Keeps the fleet table's windows (./window.ts) subscribed: one {@link ViewWatch} per connection
 * in scope, re-asked when the filter or sort changes (a new question) or when the rows on screen
 * come near the edge of what was fetched (the same question, another offset).
 *
 * Scroll positions arrive every frame; windows are re-asked at most every {@link RANGE_EVERY_MS}
 * (with a trailing call, so where the scroll stops is always asked), and only when what was
 * fetched or asked no longer covers the screen plus a margin.
 */
import type { ViewFilter, ViewResult, ViewSort } from '../../../src/console/common/index.ts';
import type { ViewWatch, WatchHub, WatchState } from '../../api/watches.ts';
import { layoutOf, localRange, type Segment, type WindowAsk, windowFor } from './window.ts';

export const RANGE_EVERY_MS = 80;

/** Names what a table shows: its connections, filter and sort. */
export function questionKey(ids: readonly string[], filter: ViewFilter, sort: ViewSort): string {
  return JSON.stringify([ids, filter, sort]);
}

interface Entry {
  connectionId: string;
  watch: ViewWatch;
  asked: WindowAsk | null;
  /** The latest window of the current question. */
  view: ViewResult | null;
  /** The last window of an earlier question, shown (marked pending) until the new one comes. */
  previous: ViewResult | null;
  error: WatchState['error'];
}

export interface FleetWindowState {
  /** What the windows were last configured for: {@link questionKey} of the ids, filter and sort. */
  question: string;
  segments: Segment[];
  /** Some connection's rows are those of the previous filters or sort (the new answer is on its way). */
  pending: boolean;
}

export class FleetWindow {
  private entries: Entry[] = [];
  private filter: ViewFilter = {};
  private sort: ViewSort = { column: 'workId', dir: 'asc' };
  private range: [number, number] = [0, 0];
  private lastRangeAt = Number.NEGATIVE_INFINITY;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private snapshot: FleetWindowState = { question: '', segments: [], pending: false };
  private questionKey = '';
  private closed = false;

  constructor(
    private readonly hub: WatchHub,
    private readonly onChange: () => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get state(): FleetWindowState {
    return this.snapshot;
  }

  /** The connections (in table order), filter and sort. Unchanged parts ask nothing again. */
  configure(ids: readonly string[], filter: ViewFilter, sort: ViewSort): void {
    if (this.closed) return;
    const question = JSON.stringify([filter, sort]);
    const same = question === JSON.stringify([this.filter, this.sort]);
    this.filter = filter;
    this.sort = sort;
    this.questionKey = questionKey(ids, filter, sort);
    const keep = new Map(this.entries.map((e) => [e.connectionId, e]));
    const next: Entry[] = [];
    for (const id of ids) {
      let e = keep.get(id);
      keep.delete(id);
      if (e === undefined) {
        const entry: Omit<Entry, 'watch'> & { watch?: ViewWatch } = {
          connectionId: id,
          asked: null,
          view: null,
          previous: null,
          error: null,
        };
        entry.watch = this.hub.open((s) => this.onWatch(entry as Entry, s));
        e = entry as Entry;
      } else if (!same) {
        // A new question: what was fetched is kept on screen, marked pending, until its answer.
        e.previous = e.view ?? e.previous;
        e.view = null;
        e.asked = null;
        e.error = null;
      }
      next.push(e);
    }
    for (const gone of keep.values()) gone.watch.close();
    this.entries = next;
    if (!same) this.range = [0, Math.max(0, this.range[1] - this.range[0])];
    this.publish();
    this.ask();
  }

  /** Table rows [from, to) are on screen (or about to be). */
  setRange(from: number, to: number): void {
    this.range = [from, to];
    const wait = this.lastRangeAt + RANGE_EVERY_MS - this.now();
    if (wait <= 0) this.ask();
    else
      this.timer ??= setTimeout(() => {
        this.timer = null;
        this.ask();
      }, wait);
  }

  close(): void {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    for (const e of this.entries) e.watch.close();
    this.entries = [];
  }

  private ask(): void {
    if (this.closed) return;
    this.lastRangeAt = this.now();
    const layout = layoutOf(
      this.entries.map((e) => ({ connectionId: e.connectionId, view: e.view, error: null })),
    );
    const [from, to] = this.range;
    for (let k = 0; k < this.entries.length; k++) {
      const e = this.entries[k] as Entry;
      // A connection whose total is not known yet is asked for its first rows; then where it is.
      const range = e.view === null ? null : localRange(layout, k, from, to);
      const w = windowFor(range, e.view, e.asked);
      if (w === null) continue;
      e.asked = w;
      e.watch.set({
        connectionId: e.connectionId,
        filter: this.filter,
        sort: this.sort,
        offset: w.offset,
        limit: w.limit,
      });
    }
  }

  private onWatch(e: Entry, s: WatchState): void {
    if (!this.entries.includes(e)) return;
    const hadTotal = e.view?.total;
    e.view = s.view;
    e.error = s.error;
    if (s.view !== null) e.previous = null;
    this.publish();
    // A total that moved shifts the connections after it: their windows may need moving.
    if (s.view !== null && s.view.total !== hadTotal) this.ask();
  }

  private publish(): void {
    let pending = false;
    const segments = this.entries.map((e) => {
      if (e.view === null && e.previous !== null) pending = true;
      return { connectionId: e.connectionId, view: e.view ?? e.previous, error: e.error };
    });
    this.snapshot = { question: this.questionKey, segments, pending };
    this.onChange();
  }
}
