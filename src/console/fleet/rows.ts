/**
 * The fleet model's rows: the {@link FleetStore} and the rules by which writes reach it (see
 * model.ts, rules 2 and 3): a change applies only when newer by (fencing token, version); a prune
 * removes a row whose token is not newer and leaves a tombstone so a late duplicate cannot bring
 * it back. Rows that moved wait in `pending` for the model's next `leases` event, and handoffs
 * are counted into the activity rates.
 */
import type { HandoffCounts, LeaseInfo } from '../../lease/types.ts';
import type { LeaseRow, Thresholds } from '../api.ts';
import { toLeaseRow } from '../rows.ts';
import { RateRecorder } from '../stats.ts';
import { FleetStore } from './store.ts';

const NO_HANDOFFS: HandoffCounts = { acquisitions: 0, releases: 0, forceReleases: 0 };

/** Some counter went down: the work item was pruned (which resets them) in between. */
export function lower(a: HandoffCounts, b: HandoffCounts): boolean {
  return a.acquisitions < b.acquisitions || a.releases < b.releases || a.forceReleases < b.forceReleases;
}

export class FleetRows {
  store: FleetStore;
  /** Bumped whenever the store is replaced (a new snapshot, a data loss). */
  generation = 0;
  readonly rates = new RateRecorder();
  private readonly tombstones = new Map<string, bigint>();
  pendingUpserts = new Map<string, LeaseRow>();
  pendingRemoved = new Set<string>();

  constructor(
    private thresholds: Thresholds,
    at: number,
  ) {
    this.store = new FleetStore(thresholds, at);
  }

  /** Starts a new store (a snapshot being read, or an empty fleet after a data loss); returns the old one. */
  replace(at: number): FleetStore {
    const old = this.store;
    this.store = new FleetStore(this.thresholds, Math.max(at, old.judgedAt));
    this.generation++;
    this.pendingUpserts.clear();
    this.pendingRemoved.clear();
    return old;
  }

  get thresholdsNow(): Thresholds {
    return this.thresholds;
  }

  setThresholds(thresholds: Thresholds): void {
    this.thresholds = thresholds;
    this.store.setThresholds(thresholds);
  }

  get hasPending(): boolean {
    return this.pendingUpserts.size > 0 || this.pendingRemoved.size > 0;
  }

  takePending(): { upserts: LeaseRow[]; removed: string[] } {
    const upserts = [...this.pendingUpserts.values()];
    const removed = [...this.pendingRemoved];
    this.pendingUpserts = new Map();
    this.pendingRemoved = new Set();
    return { upserts, removed };
  }

  /**
   * A row of a snapshot being read into the (new) store. `old`: the store it replaces, whose rows
   * tell, by the handoff counters, what happened in between (a rebuild after a gap).
   */
  applySnapshotRow(info: LeaseInfo, old: FleetStore | null): void {
    const store = this.store;
    const slot = store.find(info.workId);
    if (slot >= 0 && !this.newer(info, slot, store)) return;
    store.set(info, slot);
    if (old === null) {
      const released = info.releasedAt === null ? null : info.releasedAt.getTime();
      this.rates.seed(info.acquiredAt.getTime(), info.predecessorEnd, info.ended, released);
      return;
    }
    const prev = old.find(info.workId);
    if (info.handoffs === undefined || (prev >= 0 && !this.newer(info, prev, old))) return;
    const prevCounts = prev >= 0 ? old.cols.handoffsOf(prev) : undefined;
    const before = prevCounts !== undefined && !lower(info.handoffs, prevCounts) ? prevCounts : NO_HANDOFFS;
    this.rates.recordCounted(
      before === NO_HANDOFFS || prev < 0 ? undefined : old.cols.row(prev),
      before,
      toLeaseRow(info),
      info.handoffs,
    );
  }

  applyPrune(workId: string, token: bigint): boolean {
    const prev = this.tombstones.get(workId);
    if (prev === undefined || token > prev) this.tombstones.set(workId, token);
    const slot = this.store.find(workId);
    if (slot >= 0 && this.store.cols.token[slot]! <= token) {
      this.store.delete(workId);
      this.pendingUpserts.delete(workId);
      this.pendingRemoved.add(workId);
      return true;
    }
    return false;
  }

  /**
   * A row read by a heartbeat check, applied only where it is a heartbeat-rate change of the
   * lease held (same token, same end: a renew, a checkpoint, a release request); ownership changes
   * are the feed's (model.ts).
   */
  applyHeartbeat(info: LeaseInfo): boolean {
    const slot = this.store.find(info.workId);
    if (slot < 0) return false;
    const cols = this.store.cols;
    if (info.fencingToken !== cols.token[slot] || info.ended !== cols.endedOf(slot)) return false;
    return this.applyLease(info);
  }

  applyLease(info: LeaseInfo): boolean {
    const tomb = this.tombstones.get(info.workId);
    if (tomb !== undefined) {
      if (info.fencingToken <= tomb) return false;
      this.tombstones.delete(info.workId);
    }
    const store = this.store;
    const slot = store.find(info.workId);
    if (slot >= 0 && !this.newer(info, slot, store)) return false;
    const prevRow = slot >= 0 ? store.cols.row(slot) : undefined;
    const prevCounts = slot >= 0 ? store.cols.handoffsOf(slot) : undefined;
    store.set(info, slot);
    const row = toLeaseRow(info);
    this.pendingUpserts.set(info.workId, row);
    this.pendingRemoved.delete(info.workId);
    // Counters make the chart exact on a coalescing feed. They count since the work item was
    // created or last pruned, so a row the model does not hold (new since the snapshot, or back
    // after a prune) and a row whose counters went down (pruned in between) start from zero.
    if (info.handoffs !== undefined) {
      const before = prevCounts !== undefined && !lower(info.handoffs, prevCounts) ? prevCounts : NO_HANDOFFS;
      this.rates.recordCounted(before === NO_HANDOFFS ? undefined : prevRow, before, row, info.handoffs);
    } else {
      this.rates.recordTransition(prevRow, row);
    }
    return true;
  }

  /** Versions of a work item are ordered by (token, version). */
  private newer(info: LeaseInfo, slot: number, store: FleetStore): boolean {
    const token = store.cols.token[slot]!;
    return (
      info.fencingToken > token || (info.fencingToken === token && info.version > store.cols.version[slot]!)
    );
  }
}
