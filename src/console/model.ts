/**
 * The fleet model of one connection: an index of every lease the backend holds (fleet/store.ts:
 * columns, work-id order, statuses and counts), built by reading the fleet once in work-id pages
 * and kept current by following the backend's change feed. The console server answers views,
 * counts, bulk actions and exports from it (issue 43, docs/console-scale.md); the browser holds
 * only what it shows.
 *
 * Correctness rests on three rules:
 * 1. The feed cursor is taken BEFORE the snapshot is listed. Every write is
 *    either in the snapshot or after the cursor (or both), so none is missed.
 * 2. Changes are applied by (fencing token, version), which strictly increases
 *    per work item: a change that is older than the row (already in the
 *    snapshot, or delivered twice) is dropped, so the model never regresses.
 *    A `pruned` change removes the row only if the row's token is not newer,
 *    and leaves a tombstone so a late duplicate cannot resurrect it (fleet/rows.ts).
 * 3. On a backend error the loop keeps its last cursor and resumes from it
 *    with backoff; only a `gap` (the backend trimmed changes we had not read)
 *    forces a new snapshot, announced with a `resync` event. DATASET_LOST (the
 *    backend lost its data) empties the index at once, so vanished leases are
 *    never shown as current; `connections.reopen` opens the backend again.
 *
 * While a snapshot is read, the index already answers with the rows read so far and says so
 * (`loading`: read so far, and the backend's count as the estimate): never a smaller total
 * shown as final.
 *
 * Polling is adaptive: right after a batch with changes the next poll comes
 * after `pollMinMs` (at once when the batch was full); each empty poll doubles
 * the wait up to `pollMaxMs`. Where the backend pushes wake-ups
 * (`admin.watchChanges`), an idle model waits for them instead (a safety poll
 * every 60 s); a wake-up during a poll makes the next wait at most `pollMinMs`.
 *
 * Freshness: the model confirms the feed at least every `heartbeatMs` (1 s): an
 * idle wait never lasts longer, and where the backend pushes wake-ups the
 * confirmation between safety polls is one `serverTime` call. `syncedAt` is the
 * backend time at which the last confirmed poll or heartbeat started. When no
 * confirmation came for `staleAfterMs` (1.5 s) the state turns `stale` at once,
 * without waiting for the hanging call's timeout.
 *
 * Heartbeat checks (fleet/checks.ts): renews and checkpoints write no feed entry, so every
 * `heartbeatCheckMs` (2 s, at every fleet size) the model re-reads the leases whose status may
 * have changed by then (the store's timing wheel) and the rows in subscribed views, and applies
 * each one that is a heartbeat-rate change of the lease it holds (same token, same end); the
 * ownership changes stay the feed's. `heartbeatsAsOf` is the backend time the last complete check
 * (or snapshot) began at; statuses are judged at min(backend now, heartbeatsAsOf) (status.ts
 * `judgedAt`), so a healthy lease is never shown expired between two checks, and one that ran out
 * is shown expired after the first check that began after its expiry. A failing check puts the
 * connection in `reconnecting`/`error` until one succeeds; one that hangs turns it `stale`.
 */

import { hasCode, WorkleaseError } from '../lease/errors.ts';
import type { LeaseAdmin, LeaseChange, LeaseInfo, LeasePage } from '../lease/types.ts';
import type { ConnectionState, LeaseRow, LeaseStatus, Thresholds } from './api.ts';
import { DEFAULT_THRESHOLDS } from './api.ts';
import type { ServerClock } from './clock.ts';
import { runCheck } from './fleet/checks.ts';
import { FleetRows } from './fleet/rows.ts';
import type { FleetStore } from './fleet/store.ts';
import type { RateRecorder } from './stats.ts';

export { lower } from './fleet/rows.ts';

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
  /** Longest retry delay of the feed, ms. Default 2000. */
  retryMaxMs?: number;
  /** Longest time between two confirmations of the feed (a poll or a heartbeat), ms. Default 1000. */
  heartbeatMs?: number;
  /** The state turns `stale` when no confirmation came for this long, ms. Default 1500. */
  staleAfterMs?: number;
  /** Heartbeat checks start this often, ms (also the longest retry delay of a failing one). Default 2000. */
  heartbeatCheckMs?: number;
  /** Accepted for older callers; checks no longer grow with the fleet, so it is not used. */
  sweepCostFactor?: number;
  /** Rows of subscribed views re-read by each check, at most. Default 4000. */
  maxVisibleChecked?: number;
  /** Status thresholds of the connection. Default DEFAULT_THRESHOLDS. */
  thresholds?: Thresholds;
}

/** The model's heartbeat checks, as ConnectionInfo shows them. */
export interface HeartbeatCheck {
  /** Backend time at the start of the last complete check (or snapshot); null before the first. */
  asOf: number | null;
  /** The interval checks run at, ms. */
  intervalMs: number;
  /** How long the last check took, ms; null before the first. */
  lastMs: number | null;
  /** Rows the last check read (due + visible; a snapshot: every row). */
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

export interface ModelSnapshot {
  rows: LeaseRow[];
  seq: number;
  serverTime: number;
  /** The backend time these rows' heartbeats were last checked at (see the file comment). */
  heartbeatsAsOf: number | null;
}

/** A snapshot being read: rows so far, and the backend's count (null until it answered, or without one). */
export interface Loading {
  read: number;
  estimate: number | null;
  /** The backend's counts by status from one aggregate read, exact at backend time `at` (when it has one). */
  counted?: { at: number; total: number; byStatus: Record<LeaseStatus, number> };
}

const sleepResolved = Promise.resolve();

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
  private readonly maxVisibleChecked: number;

  private readonly fleet: FleetRows;
  private readonly listeners = new Set<(event: ModelEvent) => void>();
  private visibleSource: () => Iterable<string> = () => [];

  private seqNo = 0;
  private cursor: string | null = null;
  private stateValue: ConnectionState = 'connecting';
  private errorValue: unknown = null;
  private syncedAtValue: number | null = null;
  private loadingValue: Loading | null = { read: 0, estimate: null };

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

  // Health, combined by refreshState(): the feed's last call and the last check each fail or not.
  private feedFailure: unknown = null;
  /** No feed confirmation for staleAfterMs. */
  private feedSilent = false;
  private checkFailure: unknown = null;
  /** A check runs far longer than the last one did. */
  private checkSilent = false;

  // Heartbeat checks.
  private heartbeatsAsOfValue: number | null = null;
  private lastCheckMs: number | null = null;
  private lastCheckRows = 0;
  /** Local time (performance.now) the last check started. */
  private lastCheckStart = Number.NEGATIVE_INFINITY;
  private checkDone: Promise<void> = sleepResolved;
  private checkWakeUp: (() => void) | null = null;
  private checkOverdueTimer: NodeJS.Timeout | null = null;
  /** A snapshot is being read: it is a check itself, so checks wait. */
  private loadingSnapshot = false;
  /** Checks (and snapshots) started; waiters of `swept` wait for one started after they asked. */
  private checksStarted = 0;
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
    this.retryMaxMs = options.retryMaxMs ?? 2000;
    this.heartbeatMs = options.heartbeatMs ?? 1000;
    this.staleAfterMs = options.staleAfterMs ?? 1500;
    this.heartbeatCheckMs = options.heartbeatCheckMs ?? 2000;
    this.maxVisibleChecked = options.maxVisibleChecked ?? 4000;
    this.fleet = new FleetRows(options.thresholds ?? DEFAULT_THRESHOLDS, clock.serverNow());
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
  /** Backend time at the start of the last complete check; statuses are judged no later than this. */
  get heartbeatsAsOf(): number | null {
    return this.heartbeatsAsOfValue;
  }
  get heartbeatCheck(): HeartbeatCheck {
    return {
      asOf: this.heartbeatsAsOfValue,
      intervalMs: this.heartbeatCheckMs,
      lastMs: this.lastCheckMs,
      lastRows: this.lastCheckRows,
    };
  }
  get size(): number {
    return this.fleet.store.size;
  }
  /** The snapshot being read (rows so far, estimate), or null once the index is complete. */
  get loading(): Loading | null {
    const l = this.loadingValue;
    if (l === null) return null;
    return l.counted === undefined ? { read: l.read, estimate: l.estimate } : { ...l };
  }
  /** Changes whenever the index is replaced (a new snapshot, a data loss). */
  get generation(): number {
    return this.fleet.generation;
  }
  get rates(): RateRecorder {
    return this.fleet.rates;
  }

  /** The index with its statuses judged at `at` (backend ms: the connection's statusNow). */
  judged(at: number): FleetStore {
    this.fleet.store.judge(at);
    return this.fleet.store;
  }

  setThresholds(thresholds: Thresholds): void {
    this.fleet.setThresholds(thresholds);
  }

  /** Where checks learn which rows subscribed views show (re-read every check). */
  setVisible(source: () => Iterable<string>): void {
    this.visibleSource = source;
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
    this.checkDone = this.checkLoop();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unwatch?.();
    this.unwatch = null;
    this.wake();
    this.checkWakeUp?.();
    await Promise.all([this.loopDone, this.checkDone]);
    if (this.staleTimer !== null) clearTimeout(this.staleTimer);
    this.staleTimer = null;
    if (this.checkOverdueTimer !== null) clearTimeout(this.checkOverdueTimer);
    this.checkOverdueTimer = null;
    for (const w of this.sweptWaiters) w.resolve();
    this.sweptWaiters = [];
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    for (const w of this.caughtUpWaiters) w.resolve();
    this.caughtUpWaiters = [];
    this.setState('closed', null);
  }

  /**
   * Every row (never checkpoint bytes) and the seq of the last event they include. Builds one
   * object per lease: for the paged `fleet.snapshot` of small fleets and tests; views use the index.
   */
  snapshot(): ModelSnapshot {
    this.flush();
    return {
      rows: [...this.rows()],
      seq: this.seqNo,
      serverTime: this.clock.serverNow(),
      heartbeatsAsOf: this.heartbeatsAsOfValue,
    };
  }

  /** Every row, in work-id order. */
  *rows(): IterableIterator<LeaseRow> {
    const store = this.fleet.store;
    for (const slot of store.byWorkId) yield store.cols.row(slot);
  }

  get(workId: string): LeaseRow | undefined {
    const store = this.fleet.store;
    const slot = store.find(workId);
    return slot < 0 ? undefined : store.cols.row(slot);
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
   * Resolves once a check (or snapshot) that started after this call has completed, i.e. the
   * model holds every renew and checkpoint of the rows it had to re-read (see the file comment).
   */
  swept(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => this.sweptWaiters.push({ after: this.checksStarted, resolve }));
  }

  /** Applies a row read outside the feed (a fresh `get`, a force-release result). Same ordering rules. */
  applyInfo(info: LeaseInfo): void {
    this.fleet.applyLease(info);
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
        if (hasCode(err, 'DATASET_LOST')) this.datasetLost(err);
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
      // Checks waited for it; the next one is due an interval after it started.
      this.checkWakeUp?.();
    }
  }

  /**
   * Reads the fleet into a new index, page by page in work-id order. The new index answers at
   * once (`loading` says how far it got); the old one only tells the rates what happened meanwhile.
   */
  private async readSnapshot(first: boolean): Promise<void> {
    const checkNo = ++this.checksStarted;
    const t0 = performance.now();
    // Cursor first: see rule 1 in the file comment.
    const cursor = await this.admin.changeCursor();
    // The snapshot is a check too: every row below is read after this backend time.
    const asOf = (await this.admin.serverTime()).getTime();
    const old = this.fleet.replace(asOf);
    const loading: Loading = { read: 0, estimate: null };
    this.loadingValue = loading;
    const generation = this.fleet.generation;
    this.seqNo++;
    this.emit({ type: 'resync', seq: this.seqNo });
    // The estimate comes when the backend answers; a failure leaves it unknown.
    this.admin.count().then(
      (n) => {
        if (this.loadingValue === loading) loading.estimate = n;
      },
      () => {},
    );
    // Where the backend counts by status in one statement, the counts come at once, with their time.
    this.admin.countByStatus?.(this.fleet.thresholdsNow).then(
      (c) => {
        if (this.loadingValue !== loading) return;
        loading.counted = { at: c.at.getTime(), total: c.total, byStatus: { ...c.byStatus } };
      },
      () => {},
    );
    // A small first page: the first rows answer views within one short round trip. Each next
    // page is asked for before the current one goes into the index, so the backend reads while
    // the index builds (the load takes the longer of the two, not their sum).
    let next = this.prefetch(null, Math.min(1000, this.pageSize));
    let page: string | null;
    do {
      const res = await next;
      if (this.closed || this.fleet.generation !== generation) return;
      page = res.nextCursor;
      if (page !== null) next = this.prefetch(page, this.pageSize);
      for (const info of res.items) this.fleet.applySnapshotRow(info, first ? null : old);
      loading.read += res.items.length;
    } while (page !== null && !this.closed);
    if (this.closed) return;
    this.cursor = cursor;
    this.loadingValue = null;
    this.fleet.pendingUpserts.clear();
    this.fleet.pendingRemoved.clear();
    this.checkCompleted(checkNo, t0, asOf, loading.read);
    // Also after the first load: a subscriber that fetched the (partial) snapshot while the
    // model was loading learns to fetch it again.
    this.seqNo++;
    this.emit({ type: 'resync', seq: this.seqNo });
  }

  /** A snapshot page asked for ahead; a rejection left unawaited (the load stopped) is dropped. */
  private prefetch(cursor: string | null, limit: number): Promise<LeasePage> {
    const page = this.admin.list({ cursor, limit });
    page.catch(() => {});
    return page;
  }

  /** The backend lost its data: nothing the index holds is current any more. */
  private datasetLost(err: unknown): void {
    if (this.loadingValue !== null && this.fleet.store.size === 0) return;
    // A Redis key prefix that lost some of its buckets (a Cluster shard back empty) keeps the rows:
    // the connection shows the error and which shown items the lost buckets take, until recovered.
    // A call's own refusal names one bucket; the next check (fleet/checks.ts) says whether all went.
    const d = (
      err as { details?: { bucket?: unknown; lost?: unknown; buckets?: unknown; metaLost?: unknown } }
    ).details;
    if (typeof d?.bucket === 'number') return;
    if (
      Array.isArray(d?.lost) &&
      typeof d.buckets === 'number' &&
      d.lost.length < d.buckets &&
      d.metaLost !== true
    )
      return;
    this.fleet.replace(this.clock.serverNow());
    this.loadingValue = { read: 0, estimate: null };
    this.heartbeatsAsOfValue = null;
    this.seqNo++;
    this.emit({ type: 'resync', seq: this.seqNo });
  }

  // ---- heartbeat checks -------------------------------------------------------

  private async checkLoop(): Promise<void> {
    let retryDelay = this.retryMinMs;
    let failed = false;
    while (!this.closed) {
      const due = this.lastCheckStart + this.heartbeatCheckMs - performance.now();
      await this.checkSleep(failed ? Math.min(Math.max(due, retryDelay), this.heartbeatCheckMs) : due);
      if (this.closed) break;
      // Before the first snapshot and while one is read there is nothing to check: it wakes us.
      if (this.heartbeatsAsOfValue === null || this.loadingSnapshot) {
        await this.checkSleep(this.heartbeatCheckMs);
        continue;
      }
      if (!failed && performance.now() < this.lastCheckStart + this.heartbeatCheckMs) continue;
      try {
        await this.check();
        failed = false;
        retryDelay = this.retryMinMs;
      } catch (err) {
        if (this.closed) break;
        failed = true;
        retryDelay = Math.min(this.heartbeatCheckMs, retryDelay * 2);
        if (hasCode(err, 'DATASET_LOST')) this.datasetLost(err);
        // Rows stay as they are; the connection is not current until a check succeeds.
        this.checkFailure = err;
        this.refreshState();
      } finally {
        if (this.checkOverdueTimer !== null) clearTimeout(this.checkOverdueTimer);
        this.checkOverdueTimer = null;
        this.checkSilent = false;
      }
    }
  }

  /** One heartbeat check: the backend's time, then the due and visible rows (fleet/checks.ts). */
  private async check(): Promise<void> {
    const checkNo = ++this.checksStarted;
    const t0 = performance.now();
    this.lastCheckStart = t0;
    // A check that takes far longer than the last one (a hanging call) turns the connection stale
    // long before the call's own timeout: 1.5 s plus three times the last check.
    this.checkOverdueTimer = setTimeout(
      () => {
        this.checkOverdueTimer = null;
        this.checkSilent = true;
        this.refreshState();
      },
      this.staleAfterMs + 3 * (this.lastCheckMs ?? 0),
    );
    this.checkOverdueTimer.unref?.();
    const fleet = this.fleet;
    const model = this;
    const result = await runCheck(
      {
        admin: this.admin,
        get closed() {
          return model.closed;
        },
        get generation() {
          return fleet.generation;
        },
        due: (at) => {
          const store = fleet.store;
          return store.due(at).map((slot) => store.cols.workId[slot]!);
        },
        visible: () => this.visibleSource(),
        apply: (info, generation) => {
          if (generation !== fleet.generation || !fleet.applyHeartbeat(info)) return false;
          this.scheduleFlush();
          return true;
        },
      },
      this.maxVisibleChecked,
    );
    if (result === null) return;
    if (this.checkOverdueTimer !== null) clearTimeout(this.checkOverdueTimer);
    this.checkOverdueTimer = null;
    this.checkSilent = false;
    this.checkCompleted(checkNo, t0, result.asOf, result.rows);
    // Rows and the new check time go out together, also when no row moved.
    this.flush(true);
    this.refreshState();
  }

  private checkCompleted(checkNo: number, t0: number, asOf: number, rows: number): void {
    const took = performance.now() - t0;
    this.lastCheckStart = Math.max(this.lastCheckStart, t0);
    this.lastCheckMs = Math.round(took);
    this.lastCheckRows = rows;
    if (this.heartbeatsAsOfValue === null || asOf > this.heartbeatsAsOfValue) this.heartbeatsAsOfValue = asOf;
    this.checkFailure = null;
    const still: typeof this.sweptWaiters = [];
    for (const w of this.sweptWaiters) {
      if (checkNo > w.after) w.resolve();
      else still.push(w);
    }
    this.sweptWaiters = still;
  }

  private checkSleep(ms: number): Promise<void> {
    if (this.closed || ms <= 0) return sleepResolved;
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done(): void {
        clearTimeout(timer);
        if (self.checkWakeUp === done) self.checkWakeUp = null;
        resolve();
      }
      this.checkWakeUp = done;
    });
  }

  /** Returns how many changes were newer than the model. */
  private applyChanges(changes: LeaseChange[]): number {
    let applied = 0;
    for (const change of changes) {
      const moved =
        change.kind === 'pruned' || change.lease === null
          ? this.fleet.applyPrune(change.workId, change.fencingToken)
          : this.fleet.applyLease(change.lease);
      if (moved) applied++;
    }
    if (applied > 0) this.scheduleFlush();
    return applied;
  }

  private scheduleFlush(): void {
    if (this.flushTimer !== null || this.closed) return;
    if (!this.fleet.hasPending) return;
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
    if (!always && !this.fleet.hasPending) return;
    const { upserts, removed } = this.fleet.takePending();
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
    const failure = this.feedFailure ?? this.checkFailure;
    if (failure !== null) {
      this.setState(hasCode(failure, 'BACKEND_UNAVAILABLE') ? 'reconnecting' : 'error', failure);
    } else if (this.syncedAtValue === null) {
      return;
    } else if (this.feedSilent || this.checkSilent) {
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
