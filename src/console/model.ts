/**
 * The fleet model of one connection: every lease row the backend holds, kept
 * current by following the backend's change feed.
 *
 * Correctness rests on three rules:
 * 1. The feed cursor is taken BEFORE the snapshot is listed. Every write is
 *    either in the snapshot or after the cursor (or both), so none is missed.
 * 2. Changes are applied by (fencing token, version), which strictly increases
 *    per work item: a change that is older than the row (already in the
 *    snapshot, or delivered twice) is dropped, so the model never regresses.
 *    A `pruned` change removes the row only if the row's token is not newer,
 *    and leaves a tombstone so a late duplicate cannot resurrect it.
 * 3. On a backend error the loop keeps its last cursor and resumes from it
 *    with backoff; only a `gap` (the backend trimmed changes we had not read)
 *    forces a new snapshot, announced with a `resync` event.
 *
 * Polling is adaptive: right after a batch with changes the next poll comes
 * after `pollMinMs` (at once when the batch was full); each empty poll doubles
 * the wait up to `pollMaxMs`. An idle fleet therefore costs at most one
 * `changes` call per `pollMaxMs`, while a busy one sees changes within
 * `pollMinMs` + the coalescing window.
 *
 * When the backend can push wake-ups (`admin.watchChanges`), an idle model
 * waits for them instead: a wake-up ends an idle wait at once, and the idle
 * wait grows to 60 s by default (a slow safety poll, since a wake-up can be
 * lost). One that arrives while a poll is in flight makes the next wait at
 * most `pollMinMs`, so a write racing a poll is not left for the safety poll.
 *
 * Freshness: the model confirms the feed at least every `heartbeatMs` (1 s):
 * an idle wait never lasts longer, and where the backend pushes wake-ups the
 * confirmation between safety polls is one `serverTime` call (one command even
 * on a cluster, where a poll is 32) — the push channel carries the news, the
 * call proves the link. `syncedAt` is the backend time at which the last
 * confirmed poll or heartbeat started. When no confirmation came for
 * `staleAfterMs` (1.5 s: a heartbeat plus 0.5 s margin) the state turns
 * `stale` at once, without waiting for the hanging call's 10 s timeout, so a
 * console shows "as of" within 2 s of losing its backend.
 *
 * Heartbeat checks: the feed carries ownership changes only (acquired, released,
 * force-released, release-requested, pruned); a renew or checkpoint bumps the
 * row's version without a feed entry (issue 14: no heartbeat-rate side writes
 * on the lease calls' hot path). So the model re-reads the whole fleet itself —
 * a sweep: one `serverTime` call, then `admin.list` pages — and applies each
 * row that is a heartbeat-rate change of the lease it holds (same token, same
 * end: a renew, a checkpoint, a release request) by the same (token, version)
 * order, emitting the rows that moved as a `leases` event like feed changes.
 * Ownership changes stay the feed's (see `applyHeartbeat`). A sweep starts
 * every `heartbeatCheckMs` (2 s), but never sooner than `sweepCostFactor` (5)
 * times the last sweep's duration after the last one started, so sweeping
 * occupies at most a fifth of the console's time on the backend however large
 * the fleet. Measured by bench/console.ts (medians of two runs, 2 shared
 * cores at load average 3.5–13): 1 000 leases sweep in 4–23 ms (checked every
 * 2 s, ≤ 1 % of the time); 100 000 in 0.27–0.41 s on Redis (every 2 s) and
 * 0.6–1.9 s on PostgreSQL, whose interval then grows to 3–10 s. `heartbeatsAsOf` is the backend's time read by the first
 * call of the last complete sweep: every lease the model holds is at least as
 * new as that moment (or changed hands since, which the feed brings within a
 * poll), so one whose `expiresAt` is before it has really run out (renewing an
 * expired lease fails; only an acquire, which the feed carries, can bring it
 * back), and one whose `expiresAt` is after it may have been renewed since.
 * Statuses are therefore judged at min(backend now, heartbeatsAsOf) (see
 * status.ts `judgedAt`): a healthy lease is never shown expired between two
 * checks. The first snapshot and every resync count as a sweep. A failing
 * sweep puts the connection in `reconnecting`/`error` until one succeeds; one
 * that hangs turns it `stale`; rows are never dropped by a sweep (only a
 * `pruned` change removes them).
 */
import { hasCode, WorkleaseError } from '../lease/errors.ts';
import type { HandoffCounts, LeaseAdmin, LeaseChange, LeaseInfo } from '../lease/types.ts';
import type { ConnectionState, LeaseRow } from './api.ts';
import type { ServerClock } from './clock.ts';
import { toLeaseRow } from './rows.ts';
import { RateRecorder } from './stats.ts';

export interface FleetModelOptions {
  /** Poll delay right after a batch with changes, ms. Default 50. */
  pollMinMs?: number;
  /**
   * Poll delay when idle (reached by doubling), ms. Default 1000, or 60 000 when the backend pushes
   * wake-ups (`admin.watchChanges`).
   */
  pollMaxMs?: number;
  /** Changes are coalesced into one `leases` event per this window, ms. Default 50. */
  batchMs?: number;
  /** Page size for the snapshot's `list` calls (the contract's maximum: fewest round trips). Default 10 000. */
  pageSize?: number;
  /** Most changes read per `changes` call. Default 2000. */
  changeLimit?: number;
  /** First retry delay after a backend error, ms (doubles). Default 100. */
  retryMinMs?: number;
  /** Longest retry delay, ms. Default 5000. */
  retryMaxMs?: number;
  /** Longest time between two confirmations of the feed (a poll or a heartbeat), ms. Default 1000. */
  heartbeatMs?: number;
  /** The state turns `stale` when no confirmation came for this long, ms. Default 1500. */
  staleAfterMs?: number;
  /** Heartbeat freshness: a sweep of the whole fleet starts this often, ms. Default 2000. */
  heartbeatCheckMs?: number;
  /** A sweep starts no sooner than this many times the last sweep's duration after the last one started. Default 5. */
  sweepCostFactor?: number;
}

/** The model's heartbeat checks, as ConnectionInfo shows them. */
export interface HeartbeatCheck {
  /** Backend time at the start of the last complete sweep (or snapshot); null before the first. */
  asOf: number | null;
  /** The interval sweeps run at now: the configured one, or longer where the fleet's size makes a sweep slow, ms. */
  intervalMs: number;
  /** How long the last sweep took, ms; null before the first. */
  lastMs: number | null;
  /** Rows the last sweep read. */
  lastRows: number;
}

export type ModelEvent =
  | {
      type: 'leases';
      seq: number;
      upserts: LeaseRow[];
      removed: string[];
      serverTime: number;
      /** {@link HeartbeatCheck.asOf} once this event is applied (rows and check time travel together). */
      heartbeatsAsOf: number | null;
    }
  | { type: 'resync'; seq: number }
  | { type: 'state'; state: ConnectionState; error: unknown; syncedAt: number | null };

interface Entry {
  row: LeaseRow;
  token: bigint;
  version: bigint;
  /** The backend's handoff counters at this version, where it keeps them (see LeaseInfo.handoffs). */
  handoffs: HandoffCounts | undefined;
}

const NO_HANDOFFS: HandoffCounts = { acquisitions: 0, releases: 0, forceReleases: 0 };

export interface ModelSnapshot {
  rows: LeaseRow[];
  seq: number;
  serverTime: number;
  /** The backend time these rows' heartbeats were last checked at (see the file comment). */
  heartbeatsAsOf: number | null;
}

const sleepResolved = Promise.resolve();

/** Some counter went down: the work item was pruned (which resets them) in between. */
export function lower(a: HandoffCounts, b: HandoffCounts): boolean {
  return a.acquisitions < b.acquisitions || a.releases < b.releases || a.forceReleases < b.forceReleases;
}

/** Versions of a work item are ordered by (token, version). */
function newer(info: LeaseInfo, than: { token: bigint; version: bigint }): boolean {
  return info.fencingToken > than.token || (info.fencingToken === than.token && info.version > than.version);
}

export class FleetModel {
  private readonly pollMinMs: number;
  private pollMaxMs: number;
  private readonly pollMaxMsSet: boolean;
  private readonly batchMs: number;
  private readonly pageSize: number;
  private readonly changeLimit: number;
  private readonly retryMinMs: number;
  private readonly retryMaxMs: number;
  private readonly heartbeatMs: number;
  private readonly staleAfterMs: number;
  private readonly heartbeatCheckMs: number;
  private readonly sweepCostFactor: number;

  private entries = new Map<string, Entry>();
  private readonly tombstones = new Map<string, bigint>();
  private readonly listeners = new Set<(event: ModelEvent) => void>();
  readonly rates = new RateRecorder();

  private seqNo = 0;
  private cursor: string | null = null;
  private stateValue: ConnectionState = 'connecting';
  private errorValue: unknown = null;
  private syncedAtValue: number | null = null;

  private pendingUpserts = new Map<string, LeaseRow>();
  private pendingRemoved = new Set<string>();
  private flushTimer: NodeJS.Timeout | null = null;

  private running = false;
  private closed = false;
  private wakeUp: (() => void) | null = null;
  /** Stops the backend's wake-ups; null when the backend has none. */
  private unwatch: (() => void) | null = null;
  /** A wake-up arrived since the current poll started. */
  private watchWoke = false;
  /** The current wait is an idle one (longer than pollMinMs), which a wake-up may end. */
  private idleWait = false;
  private loopDone: Promise<void> = sleepResolved;
  /** Number of polls started; waiters of `caughtUp` wait for one started after they asked. */
  private pollsStarted = 0;
  private caughtUpWaiters: Array<{ after: number; resolve: () => void }> = [];
  /** Local time (performance.now) at which the next `changes` poll is due; heartbeats fill the wait. */
  private nextPollAt = 0;
  /** A wake-up or `wake()` asked for a poll: the next turn polls even if a heartbeat was due. */
  private pollRequested = false;
  private staleTimer: NodeJS.Timeout | null = null;

  // Health, combined by refreshState(): the feed's last call and the last sweep each fail or not.
  private feedFailure: unknown = null;
  /** No feed confirmation for staleAfterMs. */
  private feedSilent = false;
  private sweepFailure: unknown = null;
  /** A sweep runs far longer than the last one did. */
  private sweepSilent = false;

  // Heartbeat checks (sweeps).
  private heartbeatsAsOfValue: number | null = null;
  private sweepIntervalMs: number;
  private lastSweepMs: number | null = null;
  private lastSweepRows = 0;
  /** Local time (performance.now) the last sweep started. */
  private lastSweepStart = Number.NEGATIVE_INFINITY;
  private sweepDone: Promise<void> = sleepResolved;
  private sweepWakeUp: (() => void) | null = null;
  private sweepOverdueTimer: NodeJS.Timeout | null = null;
  /** A snapshot is being read: it is a sweep itself, so sweeps wait. */
  private loadingSnapshot = false;
  /** Sweeps (and snapshots) started / completed; waiters of `swept` wait for one started after they asked. */
  private sweepsStarted = 0;
  private sweptWaiters: Array<{ after: number; resolve: () => void }> = [];

  constructor(
    private readonly admin: LeaseAdmin,
    private readonly clock: ServerClock,
    options: FleetModelOptions = {},
  ) {
    this.pollMinMs = options.pollMinMs ?? 50;
    this.pollMaxMs = options.pollMaxMs ?? 1000;
    this.pollMaxMsSet = options.pollMaxMs !== undefined;
    this.batchMs = options.batchMs ?? 50;
    this.pageSize = options.pageSize ?? 10_000;
    this.changeLimit = options.changeLimit ?? 2000;
    this.retryMinMs = options.retryMinMs ?? 100;
    this.retryMaxMs = options.retryMaxMs ?? 5000;
    this.heartbeatMs = options.heartbeatMs ?? 1000;
    this.staleAfterMs = options.staleAfterMs ?? 1500;
    this.heartbeatCheckMs = options.heartbeatCheckMs ?? 2000;
    this.sweepCostFactor = options.sweepCostFactor ?? 5;
    this.sweepIntervalMs = this.heartbeatCheckMs;
  }

  get state(): ConnectionState {
    return this.stateValue;
  }
  /** The last error (a WorkleaseError or anything thrown), null while healthy. */
  get error(): unknown {
    return this.errorValue;
  }
  /** Backend time at which the model was last known to match the backend; null before the first sync. */
  get syncedAt(): number | null {
    return this.syncedAtValue;
  }
  get seq(): number {
    return this.seqNo;
  }
  /** Backend time at the start of the last complete sweep; statuses are judged no later than this. */
  get heartbeatsAsOf(): number | null {
    return this.heartbeatsAsOfValue;
  }
  get heartbeatCheck(): HeartbeatCheck {
    return {
      asOf: this.heartbeatsAsOfValue,
      intervalMs: this.sweepIntervalMs,
      lastMs: this.lastSweepMs,
      lastRows: this.lastSweepRows,
    };
  }
  get size(): number {
    return this.entries.size;
  }

  subscribe(listener: (event: ModelEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Starts snapshot + feed in the background. Errors surface as states, never as rejections. */
  start(): void {
    if (this.running || this.closed) return;
    this.running = true;
    try {
      this.unwatch = this.admin.watchChanges?.(() => this.onWatchWake()) ?? null;
      // A safety poll on a Redis Cluster is 32 commands (one per bucket): about 0.5 a second at 60 s.
      if (this.unwatch !== null && !this.pollMaxMsSet) this.pollMaxMs = 60_000;
    } catch {
      // No push channel (e.g. the backend was closed): polling alone still works.
      this.unwatch = null;
    }
    this.loopDone = this.loop();
    this.sweepDone = this.sweepLoop();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unwatch?.();
    this.unwatch = null;
    this.wake();
    this.sweepWakeUp?.();
    await Promise.all([this.loopDone, this.sweepDone]);
    if (this.staleTimer !== null) clearTimeout(this.staleTimer);
    this.staleTimer = null;
    if (this.sweepOverdueTimer !== null) clearTimeout(this.sweepOverdueTimer);
    this.sweepOverdueTimer = null;
    for (const w of this.sweptWaiters) w.resolve();
    this.sweptWaiters = [];
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    for (const w of this.caughtUpWaiters) w.resolve();
    this.caughtUpWaiters = [];
    this.setState('closed', null);
  }

  /** The current rows (never checkpoint bytes) and the seq of the last event they include. */
  snapshot(): ModelSnapshot {
    this.flush();
    const rows: LeaseRow[] = new Array(this.entries.size);
    let i = 0;
    for (const e of this.entries.values()) rows[i++] = e.row;
    return {
      rows,
      seq: this.seqNo,
      serverTime: this.clock.serverNow(),
      heartbeatsAsOf: this.heartbeatsAsOfValue,
    };
  }

  rows(): IterableIterator<LeaseRow> {
    const it = this.entries.values();
    return (function* () {
      for (const e of it) yield e.row;
    })();
  }

  get(workId: string): LeaseRow | undefined {
    return this.entries.get(workId)?.row;
  }

  /**
   * Resolves once a poll that started after this call has finished and found
   * the feed drained (fewer changes than the limit), i.e. the model reflects
   * every write that completed before the call. Pending rows are flushed.
   */
  caughtUp(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      this.caughtUpWaiters.push({ after: this.pollsStarted, resolve });
      this.wake();
    });
  }

  /**
   * Resolves once a sweep (or snapshot) that started after this call has completed, i.e. the model
   * holds every renew and checkpoint that completed before the call. Does not hurry the sweep: it
   * comes at the interval {@link heartbeatCheck} names.
   */
  swept(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => this.sweptWaiters.push({ after: this.sweepsStarted, resolve }));
  }

  /** Applies a row read outside the feed (a fresh `get`, a force-release result). Same ordering rules. */
  applyInfo(info: LeaseInfo): void {
    this.applyLease(info);
    this.scheduleFlush();
  }

  /** Asks the loop to poll now (e.g. after the console itself wrote). */
  wake(): void {
    this.pollRequested = true;
    const w = this.wakeUp;
    this.wakeUp = null;
    w?.();
  }

  private onWatchWake(): void {
    this.pollRequested = true;
    if (this.wakeUp !== null && this.idleWait) this.wake();
    else this.watchWoke = true;
  }

  // ---- the loop ------------------------------------------------------------

  private async loop(): Promise<void> {
    let needSnapshot = true;
    let firstSnapshot = true;
    let idleDelay = this.pollMinMs;
    let retryDelay = this.retryMinMs;
    while (!this.closed) {
      let delay: number;
      // Only a wait for news may be cut short by a wake-up, not a retry backoff.
      let idle = false;
      try {
        if (needSnapshot) {
          await this.loadSnapshot(firstSnapshot);
          firstSnapshot = false;
          needSnapshot = false;
          idleDelay = this.pollMinMs;
        }
        if (this.unwatch !== null && !this.pollRequested && performance.now() < this.nextPollAt) {
          // Between safety polls of a pushing backend: one cheap call proves the link.
          const startedAt = this.clock.serverNow();
          await this.admin.serverTime();
          if (this.closed) break;
          this.confirm(startedAt);
          retryDelay = this.retryMinMs;
          // A wake-up that came during the call: poll now rather than after the next wait.
          if (this.pollRequested) continue;
          this.idleWait = true;
          await this.sleep(Math.max(0, Math.min(this.heartbeatMs, this.nextPollAt - performance.now())));
          this.idleWait = false;
          continue;
        }
        this.pollRequested = false;
        const cursor = this.cursor;
        if (cursor === null) throw new Error('feed cursor missing after snapshot');
        const pollNo = ++this.pollsStarted;
        // This poll sees every write a wake-up so far announced.
        this.watchWoke = false;
        const startedAt = this.clock.serverNow();
        const batch = await this.admin.changes({ cursor, limit: this.changeLimit });
        if (this.closed) break;
        if (batch.gap) {
          // Changes we never saw were trimmed: only a new snapshot is trustworthy.
          needSnapshot = true;
          continue;
        }
        const applied = this.applyChanges(batch.changes);
        this.cursor = batch.cursor;
        this.confirm(startedAt);
        retryDelay = this.retryMinMs;
        const full = batch.changes.length >= this.changeLimit;
        if (!full) {
          this.flush();
          this.resolveCaughtUp(pollNo);
        }
        if (full) delay = 0;
        // Only changes that moved the model count as activity: a feed that
        // re-delivers rows (the Postgres feed does while another transaction
        // holds back the xmin horizon) must not keep the poll rate high.
        else if (applied > 0) delay = idleDelay = this.pollMinMs;
        else delay = idleDelay = Math.min(this.pollMaxMs, idleDelay * 2);
        if (this.watchWoke) delay = Math.min(delay, this.pollMinMs);
        if (this.caughtUpWaiters.length > 0) delay = 0;
        idle = delay > this.pollMinMs;
        this.nextPollAt = performance.now() + delay;
        // An idle wait longer than a heartbeat is cut into heartbeats (or, without push, shorter polls).
        delay = Math.min(delay, this.heartbeatMs);
      } catch (err) {
        if (this.closed) break;
        const unavailable = hasCode(err, 'BACKEND_UNAVAILABLE');
        // A final error (schema mismatch, a cursor the backend no longer
        // understands, a bug) is not cured by retrying the same cursor: the next
        // attempt starts from a fresh snapshot.
        if (!unavailable && !firstSnapshot) needSnapshot = true;
        this.feedFailure = err;
        this.refreshState();
        delay = retryDelay;
        retryDelay = Math.min(this.retryMaxMs, retryDelay * 2);
      }
      this.idleWait = idle;
      await this.sleep(delay);
      this.idleWait = false;
    }
  }

  private async loadSnapshot(first: boolean): Promise<void> {
    this.loadingSnapshot = true;
    try {
      await this.readSnapshot(first);
    } finally {
      this.loadingSnapshot = false;
      // Sweeps waited for it; the next one is due an interval after it started.
      this.sweepWakeUp?.();
    }
  }

  private async readSnapshot(first: boolean): Promise<void> {
    const sweepNo = ++this.sweepsStarted;
    const t0 = performance.now();
    // Cursor first: see rule 1 in the file comment.
    const cursor = await this.admin.changeCursor();
    // The snapshot is a sweep too: every row below is read after this backend time.
    const asOf = (await this.admin.serverTime()).getTime();
    const entries = new Map<string, Entry>();
    let page: string | null = null;
    let rows = 0;
    do {
      const res = await this.admin.list({ cursor: page, limit: this.pageSize });
      rows += res.items.length;
      for (const info of res.items) {
        const row = toLeaseRow(info);
        entries.set(info.workId, {
          row,
          token: info.fencingToken,
          version: info.version,
          handoffs: info.handoffs,
        });
        // A rebuild after a gap: the counters still tell what happened meanwhile.
        const old = first ? undefined : this.entries.get(info.workId);
        if (!first && info.handoffs !== undefined && (old === undefined || newer(info, old))) {
          const before =
            old?.handoffs !== undefined && !lower(info.handoffs, old.handoffs) ? old.handoffs : NO_HANDOFFS;
          this.rates.recordCounted(before === NO_HANDOFFS ? undefined : old?.row, before, row, info.handoffs);
        }
      }
      page = res.nextCursor;
    } while (page !== null && !this.closed);
    if (this.closed) return;
    this.cursor = cursor;
    this.entries = entries;
    this.pendingUpserts.clear();
    this.pendingRemoved.clear();
    if (first) for (const e of entries.values()) this.rates.seedFromRow(e.row);
    this.sweepCompleted(sweepNo, t0, asOf, rows);
    // Also after the first load: a subscriber that fetched the (empty) snapshot
    // while the model was still connecting learns to fetch it again.
    this.seqNo++;
    this.emit({ type: 'resync', seq: this.seqNo });
  }

  // ---- heartbeat checks (sweeps) --------------------------------------------

  private async sweepLoop(): Promise<void> {
    let retryDelay = this.retryMinMs;
    let failed = false;
    while (!this.closed) {
      const due = this.lastSweepStart + this.sweepIntervalMs - performance.now();
      await this.sweepSleep(failed ? Math.max(due, retryDelay) : due);
      if (this.closed) break;
      // Before the first snapshot and while one is read there is nothing to check: it wakes us.
      if (this.heartbeatsAsOfValue === null || this.loadingSnapshot) {
        await this.sweepSleep(this.heartbeatCheckMs);
        continue;
      }
      if (performance.now() < this.lastSweepStart + this.sweepIntervalMs) continue;
      try {
        await this.sweep();
        failed = false;
        retryDelay = this.retryMinMs;
      } catch (err) {
        if (this.closed) break;
        failed = true;
        retryDelay = Math.min(this.retryMaxMs, retryDelay * 2);
        // Rows stay as they are; the connection is not current until a sweep succeeds.
        this.sweepFailure = err;
        this.refreshState();
      } finally {
        if (this.sweepOverdueTimer !== null) clearTimeout(this.sweepOverdueTimer);
        this.sweepOverdueTimer = null;
        this.sweepSilent = false;
      }
    }
  }

  /** One heartbeat check: the backend's time, then every row, each applied by (token, version). */
  private async sweep(): Promise<void> {
    const sweepNo = ++this.sweepsStarted;
    const t0 = performance.now();
    this.lastSweepStart = t0;
    // A sweep that takes far longer than the last one (a hanging call) turns the connection stale
    // long before the call's own timeout: 1.5 s plus three times the last sweep.
    this.sweepOverdueTimer = setTimeout(
      () => {
        this.sweepOverdueTimer = null;
        this.sweepSilent = true;
        this.refreshState();
      },
      this.staleAfterMs + 3 * (this.lastSweepMs ?? 0),
    );
    this.sweepOverdueTimer.unref?.();
    const asOf = (await this.admin.serverTime()).getTime();
    let page: string | null = null;
    let rows = 0;
    do {
      if (this.closed) return;
      const res = await this.admin.list({ cursor: page, limit: this.pageSize });
      if (this.closed) return;
      let moved = 0;
      for (const info of res.items) if (this.applyHeartbeat(info)) moved++;
      if (moved > 0) this.scheduleFlush();
      rows += res.items.length;
      page = res.nextCursor;
    } while (page !== null);
    if (this.sweepOverdueTimer !== null) clearTimeout(this.sweepOverdueTimer);
    this.sweepOverdueTimer = null;
    this.sweepSilent = false;
    this.sweepCompleted(sweepNo, t0, asOf, rows);
    // Rows and the new check time go out together, also when no row moved.
    this.flush(true);
    this.refreshState();
  }

  /**
   * A swept row, applied only where it is a heartbeat-rate change of the lease the model holds:
   * same token, same end (a renew, a checkpoint, a release request). A new token or a release is an
   * ownership change, which the feed carries: applied from a sweep that raced ahead of the feed, it
   * would make the feed's own entries look old and hide the transition from the activity counts
   * (a release followed by an acquire read by one sweep looks like a lone acquire on a backend
   * without handoff counters). The feed brings it within a poll.
   */
  private applyHeartbeat(info: LeaseInfo): boolean {
    const existing = this.entries.get(info.workId);
    if (existing === undefined || info.fencingToken !== existing.token || info.ended !== existing.row.ended) {
      return false;
    }
    return this.applyLease(info);
  }

  private sweepCompleted(sweepNo: number, t0: number, asOf: number, rows: number): void {
    const took = performance.now() - t0;
    this.lastSweepStart = Math.max(this.lastSweepStart, t0);
    this.lastSweepMs = Math.round(took);
    this.lastSweepRows = rows;
    this.sweepIntervalMs = Math.max(this.heartbeatCheckMs, Math.ceil(this.sweepCostFactor * took));
    if (this.heartbeatsAsOfValue === null || asOf > this.heartbeatsAsOfValue) this.heartbeatsAsOfValue = asOf;
    this.sweepFailure = null;
    const still: typeof this.sweptWaiters = [];
    for (const w of this.sweptWaiters) {
      if (sweepNo > w.after) w.resolve();
      else still.push(w);
    }
    this.sweptWaiters = still;
  }

  private sweepSleep(ms: number): Promise<void> {
    if (this.closed || ms <= 0) return sleepResolved;
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done(): void {
        clearTimeout(timer);
        if (self.sweepWakeUp === done) self.sweepWakeUp = null;
        resolve();
      }
      this.sweepWakeUp = done;
    });
  }

  /** Returns how many changes were newer than the model. */
  private applyChanges(changes: LeaseChange[]): number {
    let applied = 0;
    for (const change of changes) {
      const moved =
        change.kind === 'pruned' || change.lease === null
          ? this.applyPrune(change.workId, change.fencingToken)
          : this.applyLease(change.lease);
      if (moved) applied++;
    }
    if (applied > 0) this.scheduleFlush();
    return applied;
  }

  private applyPrune(workId: string, token: bigint): boolean {
    const prev = this.tombstones.get(workId);
    if (prev === undefined || token > prev) this.tombstones.set(workId, token);
    const existing = this.entries.get(workId);
    if (existing !== undefined && existing.token <= token) {
      this.entries.delete(workId);
      this.pendingUpserts.delete(workId);
      this.pendingRemoved.add(workId);
      return true;
    }
    return false;
  }

  private applyLease(info: LeaseInfo): boolean {
    const tomb = this.tombstones.get(info.workId);
    if (tomb !== undefined) {
      if (info.fencingToken <= tomb) return false;
      this.tombstones.delete(info.workId);
    }
    const existing = this.entries.get(info.workId);
    if (existing !== undefined && !newer(info, existing)) return false;
    const row = toLeaseRow(info);
    this.entries.set(info.workId, {
      row,
      token: info.fencingToken,
      version: info.version,
      handoffs: info.handoffs,
    });
    this.pendingUpserts.set(info.workId, row);
    this.pendingRemoved.delete(info.workId);
    // Counters make the chart exact on a coalescing feed. They count since the work item was
    // created or last pruned, so a row the model does not hold (new since the snapshot, or back
    // after a prune) and a row whose counters went down (pruned in between) start from zero.
    if (info.handoffs !== undefined) {
      const before =
        existing?.handoffs !== undefined && !lower(info.handoffs, existing.handoffs)
          ? existing.handoffs
          : NO_HANDOFFS;
      this.rates.recordCounted(
        before === NO_HANDOFFS ? undefined : existing?.row,
        before,
        row,
        info.handoffs,
      );
    } else {
      this.rates.recordTransition(existing?.row, row);
    }
    return true;
  }

  private scheduleFlush(): void {
    if (this.flushTimer !== null || this.closed) return;
    if (this.pendingUpserts.size === 0 && this.pendingRemoved.size === 0) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null;
      this.flush();
    }, this.batchMs);
  }

  /** Emits the pending rows as one `leases` event (seq + 1); `always`: also when none are pending. */
  private flush(always = false): void {
    if (this.flushTimer !== null) {
      clearTimeout(this.flushTimer);
      this.flushTimer = null;
    }
    if (!always && this.pendingUpserts.size === 0 && this.pendingRemoved.size === 0) return;
    const upserts = [...this.pendingUpserts.values()];
    const removed = [...this.pendingRemoved];
    this.pendingUpserts = new Map();
    this.pendingRemoved = new Set();
    this.seqNo++;
    this.emit({
      type: 'leases',
      seq: this.seqNo,
      upserts,
      removed,
      serverTime: this.clock.serverNow(),
      heartbeatsAsOf: this.heartbeatsAsOfValue,
    });
  }

  /** The backend answered a poll or heartbeat that started at `startedAt` (backend clock). */
  private confirm(startedAt: number): void {
    this.syncedAtValue = startedAt;
    if (this.staleTimer !== null) clearTimeout(this.staleTimer);
    this.staleTimer = setTimeout(() => {
      this.staleTimer = null;
      // A failed call already set reconnecting/error; only a silent (hanging) link turns stale here.
      this.feedSilent = true;
      this.refreshState();
    }, this.staleAfterMs);
    this.staleTimer.unref?.();
    this.feedFailure = null;
    this.feedSilent = false;
    this.refreshState();
  }

  /**
   * The state from the feed's and the sweeps' health: a failure of either (the feed's first),
   * then silence of either, else live. Live only after the first confirmation.
   */
  private refreshState(): void {
    if (this.closed) return;
    const failure = this.feedFailure ?? this.sweepFailure;
    if (failure !== null) {
      this.setState(hasCode(failure, 'BACKEND_UNAVAILABLE') ? 'reconnecting' : 'error', failure);
    } else if (this.syncedAtValue === null) {
      return;
    } else if (this.feedSilent || this.sweepSilent) {
      this.setState('stale', null);
    } else {
      this.setState('live', null);
    }
  }

  private resolveCaughtUp(pollNo: number): void {
    if (this.caughtUpWaiters.length === 0) return;
    const still: typeof this.caughtUpWaiters = [];
    for (const w of this.caughtUpWaiters) {
      if (pollNo > w.after) w.resolve();
      else still.push(w);
    }
    this.caughtUpWaiters = still;
  }

  private setState(state: ConnectionState, error: unknown): void {
    const sameError =
      error === this.errorValue ||
      (error instanceof WorkleaseError &&
        this.errorValue instanceof WorkleaseError &&
        error.code === this.errorValue.code &&
        error.message === this.errorValue.message);
    if (state === this.stateValue && sameError) return;
    this.stateValue = state;
    this.errorValue = error;
    this.emit({ type: 'state', state, error, syncedAt: this.syncedAtValue });
  }

  private emit(event: ModelEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A failing subscriber must not stop the feed for the others.
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    if (this.closed) return sleepResolved;
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = done;
    });
  }
}
