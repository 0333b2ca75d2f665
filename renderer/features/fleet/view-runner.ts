/**
 * Keeps a derived view (the fleet's filtered, sorted ids and counts) current without ever holding
 * the main thread: each recomputation is a sliced job (lib/slices.ts); the last finished one is
 * shown meanwhile.
 *
 * - `restart` (filter, sort, scope or a new snapshot): drop the running job, start at once.
 * - `refresh` (the clock ticked, rows came or went): start one if none runs and the last started
 *   at least {@link refreshGapMs} ago; if one runs, run again after it.
 *
 * The gap is what the last job cost, times {@link COST_FACTOR}, at most {@link REFRESH_MAX_GAP_MS}:
 * refreshes take at most a tenth of the main thread, and a row that came in shows as soon as that
 * allows. A fixed 500 ms gap held a new row of a 15-lease fleet off the screen for up to 500 ms
 * after its event was applied, for a pass that took about a millisecond (e2e, Chromium: the event
 * applied at 110 ms, the row drawn at 110–640 ms). A pass over 100 000 leases took 36 ms sorted
 * by work id and 53 ms by expiry (Node, run to completion; in a page it yields between slices and
 * takes longer), so a big fleet waits 360–500 ms, about the 500 ms it did; 1 000 leases took
 * 0.25–0.66 ms, a gap of under 7 ms.
 */
import { runSliced } from '../../lib/slices.ts';

/** Longest gap between two refreshes that nothing urgent asked for, ms. */
export const REFRESH_MAX_GAP_MS = 500;
/** A refresh waits this many times what the last job cost since the last one started. */
export const COST_FACTOR = 10;

/** The gap after a job that took `lastJobMs` (wall time from its start to its result). */
export function refreshGapMs(lastJobMs: number): number {
  return Math.min(REFRESH_MAX_GAP_MS, COST_FACTOR * lastJobMs);
}

/** A finished view and what it was computed from: the inputs' key and the connections it covers. */
export interface ComputedView<V> {
  view: V;
  key: string;
  /** The ids of the connections in scope when it was computed, joined by `|`. */
  scope: string;
}

/**
 * What the table shows while a new view is computed: the last one while only filters, sort or
 * snapshots moved (the same connections; `computing` says a newer one is coming), nothing from a
 * view computed for other connections. After a switch from all connections to one, the old view
 * still held the other connections' rows, drawn under the new tab (for one slice on a small fleet,
 * longer on a big one).
 */
export function shownView<V>(
  computed: ComputedView<V> | null,
  key: string,
  scope: string,
  empty: V,
): { view: V; computing: boolean } {
  if (computed === null || computed.scope !== scope) return { view: empty, computing: true };
  return { view: computed.view, computing: computed.key !== key };
}

/** What one recomputation is: the key of its inputs and its job (which may reuse the last view). */
export type PlanJob<V> = (last: { key: string; view: V } | null) => { key: string; job: Generator<void, V> };

export class ViewRunner<V> {
  private cancel: (() => void) | null = null;
  private dirty = false;
  private lastStart = Number.NEGATIVE_INFINITY;
  private lastJobMs = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private last: { key: string; view: V } | null = null;

  constructor(
    private readonly plan: PlanJob<V>,
    private readonly publish: (view: V) => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  restart(): void {
    this.stop();
    this.start();
  }

  refresh(): void {
    if (this.cancel !== null) {
      this.dirty = true;
      return;
    }
    if (this.timer !== null) return;
    const wait = this.lastStart + refreshGapMs(this.lastJobMs) - this.now();
    if (wait <= 0) {
      this.start();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      this.start();
    }, wait);
  }

  stop(): void {
    this.cancel?.();
    this.cancel = null;
    this.dirty = false;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private start(): void {
    this.dirty = false;
    const startedAt = this.now();
    this.lastStart = startedAt;
    const { key, job } = this.plan(this.last);
    this.cancel = runSliced(job, (view) => {
      this.cancel = null;
      this.lastJobMs = this.now() - startedAt;
      this.last = { key, view };
      this.publish(view);
      if (this.dirty) this.refresh();
    });
  }
}
