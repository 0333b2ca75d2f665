/**
 * Fleet counts (by status, by holder) and activity rates per minute. Counts
 * are computed from the model on demand, because status changes with time
 * alone; rates come from the changes the console observed (plus, once, the
 * acquire/release times found in the first snapshot, so a freshly opened
 * console does not show an empty chart).
 */
import type { HandoffCounts } from '../lease/types.ts';
import type { Counts, LeaseRow, LeaseStatus, RatePoint, Thresholds } from './api.ts';
import { LEASE_STATUSES } from './api.ts';
import { leaseStatus } from './status.ts';

const MINUTE = 60_000;

/** How many most-active holders `countFleet` reports. */
export const TOP_HOLDERS = 20;

export function countFleet(
  rows: Iterable<LeaseRow>,
  serverNow: number,
  thresholds: Thresholds,
  topHolders = TOP_HOLDERS,
): Counts {
  const byStatus = Object.fromEntries(LEASE_STATUSES.map((s) => [s, 0])) as Record<LeaseStatus, number>;
  const holders = new Map<string, number>();
  let total = 0;
  for (const row of rows) {
    total++;
    byStatus[leaseStatus(row, serverNow, thresholds)]++;
    holders.set(row.holderId, (holders.get(row.holderId) ?? 0) + 1);
  }
  const byHolder = [...holders]
    .map(([holderId, count]) => ({ holderId, count }))
    .sort((a, b) => b.count - a.count || (a.holderId < b.holderId ? -1 : 1))
    .slice(0, topHolders);
  return { total, byStatus, byHolder };
}

type RateKind = 'acquires' | 'takeovers' | 'releases' | 'forceReleases';

/** How far back the activity counters reach: the console's longest chart window. */
export const RATE_RETENTION_MINUTES = 24 * 60;

/** Per-minute activity counters for the last `windowMinutes` minutes (backend clock). */
export class RateRecorder {
  private readonly buckets = new Map<number, RatePoint>();

  constructor(private readonly windowMinutes = RATE_RETENTION_MINUTES) {}

  /**
   * Counts what happened between two versions of a row. Feeds may collapse
   * several writes into the latest row version (an acquire followed by a
   * renew arrives as one `renewed` change), so the events are read from the
   * row's fields rather than from the change's kind: a new `acquiredAt` or holder is an
   * acquire, and so is an ended lease that is live again (a holder that releases and re-acquires
   * within one millisecond of the server clock keeps both; the new token alone would not do, since
   * a force-release changes it too); a newly set `ended` is a release or a force-release.
   */
  recordTransition(prev: LeaseRow | undefined, next: LeaseRow): void {
    if (
      prev === undefined ||
      next.acquiredAt !== prev.acquiredAt ||
      next.holderId !== prev.holderId ||
      (prev.ended !== null && next.ended === null)
    ) {
      this.add('acquires', next.acquiredAt);
      if (next.predecessorEnd === 'expired' || next.predecessorEnd === 'force-released') {
        this.add('takeovers', next.acquiredAt);
      }
      prev = undefined;
    }
    if (next.ended !== null && (prev === undefined || prev.ended === null)) {
      this.add(next.ended === 'released' ? 'releases' : 'forceReleases', next.releasedAt ?? next.acquiredAt);
    }
  }

  /**
   * Counts what happened between two versions of a row from the backend's handoff counters
   * (LeaseInfo.handoffs): exact however many writes the feed coalesced in between. `prev`
   * undefined with zero counts: a work item created since the snapshot.
   *
   * Takeovers: every acquisition but a work item's first ends the lease before it. The ends that
   * are releases make clean handoffs; the others (expiry, force-release) take over. Releases
   * consumed in the window = its releases, plus the previous version's release if it was taken
   * up, minus the newest version's own release if it still waits for a successor.
   */
  recordCounted(
    prev: LeaseRow | undefined,
    before: HandoffCounts,
    next: LeaseRow,
    after: HandoffCounts,
  ): void {
    const acquires = after.acquisitions - before.acquisitions;
    const releases = after.releases - before.releases;
    const forced = after.forceReleases - before.forceReleases;
    if (acquires > 0) {
      this.add('acquires', next.acquiredAt, acquires);
      const consumed = releases + (prev?.ended === 'released' ? 1 : 0) - (next.ended === 'released' ? 1 : 0);
      const first = before.acquisitions === 0 ? 1 : 0;
      const takeovers = acquires - first - consumed;
      if (takeovers > 0) this.add('takeovers', next.acquiredAt, takeovers);
    }
    const endedAt = next.releasedAt ?? next.acquiredAt;
    if (releases > 0) this.add('releases', endedAt, releases);
    if (forced > 0) this.add('forceReleases', endedAt, forced);
  }

  /** Seeds the chart from a snapshot row: its last acquire and (if ended) its end. */
  seedFromRow(row: LeaseRow): void {
    this.recordTransition(undefined, row);
  }

  /** {@link seedFromRow} from a row's fields alone (a snapshot builds no row object). */
  seed(
    acquiredAt: number,
    predecessorEnd: LeaseRow['predecessorEnd'],
    ended: LeaseRow['ended'],
    releasedAt: number | null,
  ): void {
    this.add('acquires', acquiredAt);
    if (predecessorEnd === 'expired' || predecessorEnd === 'force-released')
      this.add('takeovers', acquiredAt);
    if (ended !== null)
      this.add(ended === 'released' ? 'releases' : 'forceReleases', releasedAt ?? acquiredAt);
  }

  /**
   * One point per minute for the last `minutes` minutes (at most the retention), oldest first,
   * ending with the minute holding `serverNow`.
   */
  points(serverNow: number, minutes = 60): RatePoint[] {
    const last = Math.floor(serverNow / MINUTE) * MINUTE;
    this.dropBefore(last - (this.windowMinutes - 1) * MINUTE);
    const first = last - (Math.min(minutes, this.windowMinutes) - 1) * MINUTE;
    const out: RatePoint[] = [];
    for (let minute = first; minute <= last; minute += MINUTE) {
      out.push(
        this.buckets.get(minute) ?? { minute, acquires: 0, takeovers: 0, releases: 0, forceReleases: 0 },
      );
    }
    return out.map((p) => ({ ...p }));
  }

  /** Start of the oldest retained minute with any event (backend clock, ms); null when there is none. */
  oldest(serverNow: number): number | null {
    const last = Math.floor(serverNow / MINUTE) * MINUTE;
    this.dropBefore(last - (this.windowMinutes - 1) * MINUTE);
    let oldest: number | null = null;
    for (const [minute, p] of this.buckets) {
      if (minute > last || p.acquires + p.takeovers + p.releases + p.forceReleases === 0) continue;
      if (oldest === null || minute < oldest) oldest = minute;
    }
    return oldest;
  }

  private dropBefore(first: number): void {
    for (const minute of this.buckets.keys()) if (minute < first) this.buckets.delete(minute);
  }

  private add(kind: RateKind, at: number, n = 1): void {
    if (!Number.isFinite(at) || at < 0) return;
    const minute = Math.floor(at / MINUTE) * MINUTE;
    let bucket = this.buckets.get(minute);
    if (bucket === undefined) {
      // Anything older than the window would be dropped at the next read anyway;
      // bounding here keeps a long-running console's memory flat.
      if (this.buckets.size > this.windowMinutes * 2) this.prune(minute);
      bucket = { minute, acquires: 0, takeovers: 0, releases: 0, forceReleases: 0 };
      this.buckets.set(minute, bucket);
    }
    bucket[kind] += n;
  }

  private prune(latest: number): void {
    let newest = latest;
    for (const m of this.buckets.keys()) newest = Math.max(newest, m);
    const first = newest - (this.windowMinutes - 1) * MINUTE;
    for (const m of this.buckets.keys()) if (m < first) this.buckets.delete(m);
  }
}
