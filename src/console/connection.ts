/**
 * One connection of the console service: its backend (opened with `migrate: false`, retried
 * until it opens), the server clock, the fleet model, and the console's own call rate on it.
 * A connection can be reopened (after a data loss, or to retry at once) without being removed.
 */
import { parseBackendUrl, redactUrl } from '../backends/url.ts';
import { BackendUnavailableError, ErrorCode, errorToData, hasCode, WorkleaseError } from '../lease/errors.ts';
import type { LeaseAdmin, LeaseBackend, OpenOptions } from '../lease/types.ts';
import {
  type ConnectionInfo,
  type ConnectionState,
  type ConsoleEvent,
  DEFAULT_THRESHOLDS,
  type LeaseRow,
  type Thresholds,
} from './api.ts';
import { ServerClock } from './clock.ts';
import { FleetModel, type FleetModelOptions, type ModelEvent } from './model.ts';
import type { ThresholdOverrides } from './profiles.ts';
import type { LossTarget } from './recovery.ts';
import { judgedAt } from './status.ts';

/** A connection as given to the service (from a profile, the CLI or `connections.add`). */
export interface ConnectionInput {
  name: string;
  url: string;
  /** Default false. */
  readOnly?: boolean;
  /** Default ''. */
  environment?: string;
  thresholds?: ThresholdOverrides | undefined;
}

/** What a connection needs of the service. */
export interface ConnectionHost {
  readonly now: () => number;
  readonly readOnly: boolean;
  readonly openBackendFn: (url: string, options: OpenOptions) => Promise<LeaseBackend>;
  readonly backendOptions: Omit<OpenOptions, 'migrate'>;
  readonly feedOptions: FleetModelOptions;
  readonly clockRefreshMs: number;
  emit(event: ConsoleEvent): void;
  emitConnection(conn: Connection): void;
}

const CONNECT_RETRY_MIN_MS = 250;
/** How long a paged snapshot is held after its last page was read. */
const PAGED_SNAPSHOT_HOLD_MS = 30_000;
const CONNECT_RETRY_MAX_MS = 10_000;

export interface ResolvedInput {
  name: string;
  url: string;
  readOnly: boolean;
  environment: string;
  thresholds: Thresholds;
  thresholdOverrides: ThresholdOverrides | undefined;
}

export class Connection {
  backend: LeaseBackend | null = null;
  /** `backend.admin` with every call counted: what the model and the service call. */
  admin: LeaseAdmin | null = null;
  /** The console's own load on this backend. */
  readonly calls: CallMeter;
  model: FleetModel | null = null;
  clock: ServerClock | null = null;
  private ownState: ConnectionState = 'connecting';
  private ownError: unknown = null;
  private closed = false;
  private retryTimer: NodeJS.Timeout | null = null;
  /** Open attempts started: a reopen makes an attempt still in flight give up. */
  private attempts = 0;
  private unsubscribe: (() => void) | null = null;
  lastAnnouncedSyncedAt: number | null = null;
  private liveWaiters: Array<() => void> = [];
  /** The snapshot a paged `fleet.snapshot` is reading, so every page comes from the same one. */
  private paged: {
    model: FleetModel;
    seq: number;
    serverTime: number;
    heartbeatsAsOf: number | null;
    rows: LeaseRow[];
  } | null = null;
  private pagedTimer: NodeJS.Timeout | null = null;

  constructor(
    readonly id: string,
    public input: ResolvedInput,
    readonly persistent: boolean,
    private readonly service: ConnectionHost,
  ) {
    this.calls = new CallMeter(service.now);
  }

  get kind(): ConnectionInfo['kind'] {
    return parseBackendUrl(this.input.url).kind;
  }

  get state(): ConnectionState {
    if (this.closed) return 'closed';
    return this.model?.state ?? this.ownState;
  }

  get error(): unknown {
    return this.model !== null ? this.model.error : this.ownError;
  }

  info(): ConnectionInfo {
    const err = this.error;
    return {
      id: this.id,
      name: this.input.name,
      url: redactUrl(this.input.url),
      kind: this.kind,
      readOnly: this.input.readOnly || this.service.readOnly,
      environment: this.input.environment,
      thresholds: this.input.thresholds,
      state: this.state,
      syncedAt: this.model?.syncedAt ?? null,
      clockOffsetMs: Math.round(this.clock?.offsetMs ?? 0),
      error: err === null || err === undefined ? null : errorToData(err),
      callsPerSecond: this.calls.perSecond(),
      ...(this.model === null ? {} : { heartbeats: this.model.heartbeatCheck }),
    };
  }

  start(): void {
    void this.open(CONNECT_RETRY_MIN_MS);
  }

  private async open(retryMs: number): Promise<void> {
    this.retryTimer = null;
    if (this.closed) return;
    const attempt = ++this.attempts;
    let backend: LeaseBackend | null = null;
    try {
      // The URL goes to openBackend whole: its query options (?schema=…) are read there, one grammar.
      backend = await this.service.openBackendFn(this.input.url, {
        ...this.service.backendOptions,
        migrate: false,
      });
      const admin = countedAdmin(backend.admin, () => this.calls.add());
      const clock = new ServerClock(() => admin.serverTime(), {
        now: this.service.now,
        refreshMs: this.service.clockRefreshMs,
      });
      await clock.measure();
      // Closed, or reopened meanwhile (a newer attempt owns the connection now).
      if (this.closed || attempt !== this.attempts) {
        await backend.close().catch(() => {});
        return;
      }
      clock.start();
      const model = new FleetModel(admin, clock, {
        ...this.service.feedOptions,
        thresholds: this.input.thresholds,
      });
      model.setVisible(() => this.visibleIds());
      this.backend = backend;
      this.admin = admin;
      this.clock = clock;
      this.model = model;
      this.unsubscribe = model.subscribe((e) => this.onModelEvent(e));
      model.start();
    } catch (err) {
      await backend?.close().catch(() => {});
      if (this.closed || attempt !== this.attempts) return;
      this.ownState = hasCode(err, ErrorCode.BACKEND_UNAVAILABLE) ? 'reconnecting' : 'error';
      this.ownError = err;
      this.service.emitConnection(this);
      // A schema that is missing now may be migrated by the fleet later; keep
      // trying, slowly, so the console recovers without a restart.
      const next =
        this.ownState === 'error' ? CONNECT_RETRY_MAX_MS : Math.min(CONNECT_RETRY_MAX_MS, retryMs * 2);
      this.retryTimer = setTimeout(() => void this.open(next), retryMs);
      this.retryTimer.unref();
    }
  }

  private onModelEvent(e: ModelEvent): void {
    switch (e.type) {
      case 'state':
        if (e.state === 'live') {
          for (const w of this.liveWaiters) w();
          this.liveWaiters = [];
        }
        this.lastAnnouncedSyncedAt = e.syncedAt;
        this.service.emitConnection(this);
        return;
      case 'leases':
        this.service.emit({
          type: 'leases',
          connectionId: this.id,
          seq: e.seq,
          upserts: e.upserts,
          removed: e.removed,
          serverTime: e.serverTime,
          heartbeatsAsOf: e.heartbeatsAsOf,
        });
        return;
      case 'resync':
        this.service.emit({ type: 'resync', connectionId: this.id, seq: e.seq });
        return;
    }
  }

  /**
   * The backend time statuses are computed at: the estimated backend clock while live, else the last
   * confirmed time (a lease must not turn expired because the console lost its backend).
   */
  serverNow(): number {
    const estimate = this.clock?.serverNow() ?? Math.round(this.service.now());
    const syncedAt = this.model?.syncedAt ?? null;
    return this.state === 'live' || syncedAt === null ? estimate : Math.min(estimate, syncedAt);
  }

  /**
   * The backend time statuses are judged at: {@link serverNow}, but never later than the last
   * heartbeat check of the rows judged (`heartbeatsAsOf`; default the model's): a renew after it
   * may not be in the rows, so a lease past its `expiresAt` by a later clock is not yet confirmed
   * expired (see the model's file comment).
   */
  statusNow(heartbeatsAsOf: number | null | undefined = this.model?.heartbeatsAsOf): number {
    return judgedAt(this.serverNow(), heartbeatsAsOf);
  }

  /** Sources of the work ids subscribed views show (re-read by every heartbeat check). */
  readonly visibleSources = new Set<() => Iterable<string>>();

  private *visibleIds(): IterableIterator<string> {
    for (const source of this.visibleSources) yield* source();
  }

  /** New settings that keep the URL (name, read-only, environment, thresholds). */
  setInput(input: ResolvedInput): void {
    this.input = input;
    this.model?.setThresholds(input.thresholds);
  }

  /**
   * Closes the backend and opens it again, with a new index (after a data loss, or to retry at
   * once instead of waiting for the next attempt).
   */
  async reopen(): Promise<void> {
    if (this.closed) return;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    const { model, backend, clock } = this;
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.model = null;
    this.admin = null;
    this.backend = null;
    this.clock = null;
    this.ownState = 'connecting';
    this.ownError = null;
    clock?.stop();
    await model?.close();
    await backend?.close().catch(() => {});
    if (this.closed) return;
    this.service.emitConnection(this);
    this.start();
  }

  whenLive(): Promise<void> {
    if (this.state === 'live') return Promise.resolve();
    return new Promise((resolve) => this.liveWaiters.push(resolve));
  }

  /** The backend's admin calls, counted (see {@link CallMeter}), or the reason there is none. */
  requireAdmin(): LeaseAdmin {
    if (this.admin !== null) return this.admin;
    this.requireBackend();
    throw new BackendUnavailableError(`connection '${this.input.name}' is not connected yet`);
  }

  /** The backend, or the reason there is none (the connection's own error). */
  /** This connection as the lost-shard view sees it (recovery.ts). */
  lossTarget(): LossTarget {
    return {
      name: this.input.name,
      kind: this.kind,
      url: this.input.url,
      admin: this.admin,
      workIds: () => {
        const ids: string[] = [];
        for (const row of this.model?.rows() ?? []) ids.push(row.workId);
        return ids;
      },
    };
  }

  requireBackend(): LeaseBackend {
    if (this.backend !== null) return this.backend;
    const err = this.ownError;
    if (err instanceof WorkleaseError) throw err;
    throw new BackendUnavailableError(`connection '${this.input.name}' is not connected yet`);
  }

  /**
   * The held snapshot when `seq` names it, else a new one (held for the next
   * pages). Sorted by work id once, so a client can append pages without
   * sorting 100 000 ids itself; dropped 30 s after its last page was read.
   */
  pagedSnapshot(
    model: FleetModel,
    seq: number | undefined,
  ): { seq: number; serverTime: number; heartbeatsAsOf: number | null; rows: LeaseRow[] } {
    let held = this.paged;
    if (held === null || held.model !== model || (seq !== held.seq && model.seq !== held.seq)) {
      const snap = model.snapshot();
      snap.rows.sort((a, b) => (a.workId < b.workId ? -1 : a.workId > b.workId ? 1 : 0));
      held = {
        model,
        seq: snap.seq,
        serverTime: snap.serverTime,
        heartbeatsAsOf: snap.heartbeatsAsOf,
        rows: snap.rows,
      };
      this.paged = held;
    }
    if (this.pagedTimer !== null) clearTimeout(this.pagedTimer);
    this.pagedTimer = setTimeout(() => {
      this.paged = null;
      this.pagedTimer = null;
    }, PAGED_SNAPSHOT_HOLD_MS);
    this.pagedTimer.unref();
    return held;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.pagedTimer !== null) clearTimeout(this.pagedTimer);
    this.paged = null;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.clock?.stop();
    await this.model?.close();
    this.unsubscribe?.();
    await this.backend?.close().catch(() => {});
    for (const w of this.liveWaiters) w();
    this.liveWaiters = [];
  }
}

/** Seconds the calls-per-second figure averages over. */
const RATE_WINDOW_S = 10;

/** Counts calls, in all and per second of the local clock, for a rate over the last complete seconds. */
export class CallMeter {
  total = 0;
  private readonly slots = new Array<number>(RATE_WINDOW_S + 1).fill(0);
  private readonly slotSecond = new Array<number>(RATE_WINDOW_S + 1).fill(-1);

  constructor(private readonly now: () => number) {}

  add(): void {
    this.total++;
    const sec = Math.floor(this.now() / 1000);
    const i = sec % this.slots.length;
    if (this.slotSecond[i] !== sec) {
      this.slotSecond[i] = sec;
      this.slots[i] = 0;
    }
    this.slots[i]!++;
  }

  /** Calls per second over the last {@link RATE_WINDOW_S} complete seconds. */
  perSecond(): number {
    const sec = Math.floor(this.now() / 1000);
    let sum = 0;
    for (let i = 0; i < this.slots.length; i++) {
      const at = this.slotSecond[i]!;
      if (at < sec && at >= sec - RATE_WINDOW_S) sum += this.slots[i]!;
    }
    return Math.round((sum / RATE_WINDOW_S) * 100) / 100;
  }
}

/** `admin` with `count` called before every call (the push watches are subscriptions, not calls). */
export function countedAdmin(admin: LeaseAdmin, count: () => void): LeaseAdmin {
  return new Proxy(admin, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || prop === 'watchChanges' || prop === 'watchEnded') return value;
      return (...args: unknown[]) => {
        count();
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

export function resolveInput(input: ConnectionInput): ResolvedInput {
  return {
    name: input.name,
    url: input.url,
    readOnly: input.readOnly ?? false,
    environment: input.environment ?? '',
    thresholds: {
      expiringFraction: input.thresholds?.expiringFraction ?? DEFAULT_THRESHOLDS.expiringFraction,
      stuckAfterMs: input.thresholds?.stuckAfterMs ?? DEFAULT_THRESHOLDS.stuckAfterMs,
    },
    thresholdOverrides: input.thresholds,
  };
}
