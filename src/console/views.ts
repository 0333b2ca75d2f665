/**
 * Fleet views on the console server (issue 43): `fleet.view` windows answered from the
 * connection's index, and view subscriptions that push a window again when its rows, its total or
 * the fleet's counts changed — at most {@link VIEW_PUSH_PER_SECOND} times a second per
 * subscription, triggered by the connection's own events (feed batches, checks, resyncs).
 * The work ids a subscription shows are re-read by every heartbeat check (`visibleIds`).
 */
import { errorToData, InvalidArgumentError } from '../lease/errors.ts';
import type { Caller } from './access.ts';
import type { ConsoleEvent } from './api.ts';
import {
  MAX_WATCHES,
  type ParsedViewQuery,
  VIEW_PUSH_PER_SECOND,
  ViewQuerySchema,
  type ViewResult,
} from './common/view.ts';
import { ViewQueries } from './fleet/query.ts';
import type { FleetStore } from './fleet/store.ts';
import type { FleetModel } from './model.ts';

/** What a view needs of a connection. */
export interface ViewSource {
  readonly id: string;
  readonly model: FleetModel | null;
  /** The backend time statuses are judged at (connection.ts `statusNow`). */
  statusNow(): number;
}

const queries = new WeakMap<FleetStore, ViewQueries>();

/** The queries of an index (one per store: their caches live as long as it). */
export function queriesOf(store: FleetStore): ViewQueries {
  let q = queries.get(store);
  if (q === undefined) {
    q = new ViewQueries(store);
    queries.set(store, q);
  }
  return q;
}

/** One window of a connection's fleet. */
export function viewOf(conn: ViewSource, q: ParsedViewQuery): ViewResult {
  const model = conn.model;
  const at = conn.statusNow();
  if (model === null) {
    return {
      connectionId: conn.id,
      rows: [],
      statuses: [],
      offset: 0,
      nextCursor: null,
      prevCursor: null,
      total: 0,
      counts: {
        total: 0,
        byStatus: { live: 0, expiring: 0, expired: 0, released: 0, stuck: 0, 'force-released': 0 },
      },
      loading: { read: 0, estimate: null },
      asOf: null,
      statusAt: at,
      heartbeatsAsOf: null,
      generation: 0,
      seq: 0,
    };
  }
  const store = model.judged(at);
  const win = queriesOf(store).query(q);
  return {
    connectionId: conn.id,
    rows: win.slots.map((s) => store.cols.row(s)),
    statuses: win.slots.map((s) => store.statusName(s)),
    offset: win.offset,
    nextCursor: win.nextCursor,
    prevCursor: win.prevCursor,
    total: win.total,
    counts: { total: store.size, byStatus: store.countsByStatus() },
    loading: model.loading,
    asOf: model.syncedAt,
    statusAt: at,
    heartbeatsAsOf: model.heartbeatsAsOf,
    generation: model.generation,
    seq: store.seq,
  };
}

/** What a watcher needs of the service. */
export interface WatchHost {
  /** The connection for `caller` (NOT_FOUND / FORBIDDEN as a request would get). */
  viewSource(connectionId: string, caller: Caller): ViewSource;
  subscribe(listener: (event: ConsoleEvent) => void): () => void;
}

interface Watch {
  query: ParsedViewQuery;
  /** JSON of the last window sent (without its freshness fields), to send only changes. */
  last: string;
  dirty: boolean;
  lastSentAt: number;
  timer: NodeJS.Timeout | null;
  ids: string[];
}

/**
 * The subscriptions of one client (a WebSocket, or the desktop window). `send` receives its
 * `view` and `view.error` events only.
 */
export class ViewWatcher {
  private readonly watches = new Map<string, Watch>();
  private readonly unsubscribe: () => void;
  private closed = false;

  constructor(
    private readonly host: WatchHost,
    private readonly caller: Caller,
    private readonly send: (event: ConsoleEvent) => void,
    private readonly minGapMs = 1000 / VIEW_PUSH_PER_SECOND,
  ) {
    this.unsubscribe = host.subscribe((e) => this.onEvent(e));
  }

  /** Starts or replaces a subscription; answers with its first window (also sent as an event). */
  watch(watchId: string, raw: unknown): ViewResult {
    const parsed = ViewQuerySchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new InvalidArgumentError(
        `invalid view query: ${issue === undefined ? 'invalid' : `${issue.path.map(String).join('.') || 'query'}: ${issue.message}`}`,
        { details: { watchId } },
      );
    }
    if (!this.watches.has(watchId) && this.watches.size >= MAX_WATCHES) {
      throw new InvalidArgumentError(`at most ${MAX_WATCHES} view subscriptions per client`, {
        details: { watchId },
      });
    }
    const query = parsed.data;
    const view = viewOf(this.host.viewSource(query.connectionId, this.caller), query);
    const old = this.watches.get(watchId);
    if (old?.timer) clearTimeout(old.timer);
    const w: Watch = { query, last: '', dirty: false, lastSentAt: 0, timer: null, ids: [] };
    this.watches.set(watchId, w);
    this.deliver(watchId, w, view);
    return view;
  }

  unwatch(watchId: string): boolean {
    const w = this.watches.get(watchId);
    if (w === undefined) return false;
    if (w.timer !== null) clearTimeout(w.timer);
    this.watches.delete(watchId);
    return true;
  }

  /** Work ids shown by this client's subscriptions on a connection. */
  *visibleIds(connectionId: string): IterableIterator<string> {
    for (const w of this.watches.values()) if (w.query.connectionId === connectionId) yield* w.ids;
  }

  get size(): number {
    return this.watches.size;
  }

  close(): void {
    this.closed = true;
    this.unsubscribe();
    for (const w of this.watches.values()) if (w.timer !== null) clearTimeout(w.timer);
    this.watches.clear();
  }

  private onEvent(event: ConsoleEvent): void {
    if (this.closed) return;
    const id =
      event.type === 'leases' || event.type === 'resync'
        ? event.connectionId
        : event.type === 'connection'
          ? event.connection.id
          : null;
    if (id === null) return;
    for (const [watchId, w] of this.watches) if (w.query.connectionId === id) this.schedule(watchId, w);
  }

  private schedule(watchId: string, w: Watch): void {
    w.dirty = true;
    if (w.timer !== null) return;
    const wait = Math.max(0, w.lastSentAt + this.minGapMs - performance.now());
    w.timer = setTimeout(() => {
      w.timer = null;
      if (this.closed || this.watches.get(watchId) !== w || !w.dirty) return;
      w.dirty = false;
      try {
        this.deliver(watchId, w, viewOf(this.host.viewSource(w.query.connectionId, this.caller), w.query));
      } catch (err) {
        this.unwatch(watchId);
        this.send({ type: 'view.error', watchId, error: errorToData(err) });
      }
    }, wait);
    w.timer.unref?.();
  }

  private deliver(watchId: string, w: Watch, view: ViewResult): void {
    w.ids = view.rows.map((r) => r.workId);
    // Freshness alone (asOf moves every second) is the connection event's news, not the view's.
    const { asOf: _asOf, ...rest } = view;
    const text = JSON.stringify(rest);
    if (text === w.last) return;
    w.last = text;
    w.lastSentAt = performance.now();
    this.send({ type: 'view', watchId, view });
  }
}
