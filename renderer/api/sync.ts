/**
 * Feeds pushed events into the query cache. `leases` events are queued and
 * applied in batches with `setQueryData`, at most one batch per 100 ms: an
 * event that comes after a quiet spell is applied in the next task, later ones
 * wait for the 100 ms since the last batch to pass. A `resync` event, a seq gap
 * or a transport reconnect refetches the affected snapshot once. Nothing here
 * polls.
 */
import type { QueryClient } from '@tanstack/react-query';
import type { ConnectionInfo, ConsoleEvent, HeartbeatCheckWire } from '../../src/console/common/index.ts';
import {
  applyLeaseEvents,
  type FleetData,
  fromSnapshot,
  type LeasesEvent,
  SnapshotBuilder,
} from '../features/fleet/model.ts';
import type { ConsoleClient, TransportState } from './client.ts';
import { keys } from './queries.ts';
import { SilenceWatch } from './silence.ts';

/**
 * Least time between two batches, ms. Every batch makes the fleet re-render its rows, so at 2 000
 * changes/s (npm run bench:ui) events are applied 10 times a second, not 20 (they come every 50 ms).
 * A lone event is not held back: a new lease then shows in the next task, not 100 ms later.
 */
export const FLUSH_MS = 100;
/** Rows per snapshot page: about 640 KB of JSON; parsing and validating one takes ~10 ms on an idle core. */
const PAGE_ROWS = 2000;
/** Past this many queued events for a connection whose snapshot is loading, drop them and load again. */
const MAX_QUEUED = 50_000;

export class FleetSync {
  private readonly queued = new Map<string, LeasesEvent[]>();
  /** Snapshot loads in flight per connection (a refetch may overlap a cancelled one). */
  private readonly loading = new Map<string, number>();
  /** A resync announced while a snapshot was in flight: load again if that snapshot is older. */
  private readonly resyncSeq = new Map<string, number>();
  private readonly generation = new Map<string, number>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** performance.now() of the last batch applied. */
  private lastFlushAt = Number.NEGATIVE_INFINITY;
  private wasClosed = false;
  /** Local time the last event arrived, for "as of N s ago" while the link is down. */
  lastEventAt = Date.now();
  /** When each connection was last heard of (the service speaks every second): silence marks it stale. */
  readonly silence = new SilenceWatch();
  /**
   * The newest syncedAt of each connection. The service announces every connection every second;
   * when nothing but syncedAt moved, only this map is updated, not the query cache, so the fleet
   * does not re-render every visible row each second (the "as of" reads it here).
   */
  readonly syncedAt = new Map<string, number | null>();
  /**
   * The newest heartbeat-check figures of each connection (interval, last sweep), kept like
   * `syncedAt`: they move with every sweep, and re-rendering every row for them is not worth it.
   * The check time statuses are judged at travels with the rows instead (FleetData.heartbeatsAsOf).
   */
  readonly heartbeats = new Map<string, HeartbeatCheckWire>();

  constructor(
    private readonly client: ConsoleClient,
    private readonly queryClient: QueryClient,
  ) {}

  start(): () => void {
    const offEvents = this.client.subscribe((event) => this.onEvent(event));
    const offState = this.client.onTransportState((state) => this.onTransport(state));
    return () => {
      offEvents();
      offState();
      if (this.timer !== null) clearTimeout(this.timer);
      this.silence.stop();
    };
  }

  /** The fleet query's loader. */
  readonly load = async (connectionId: string): Promise<FleetData> => {
    this.loading.set(connectionId, (this.loading.get(connectionId) ?? 0) + 1);
    const generation = (this.generation.get(connectionId) ?? 0) + 1;
    this.generation.set(connectionId, generation);
    try {
      const superseded = () => this.generation.get(connectionId) !== generation;
      const snapshot = await this.fetchSnapshot(connectionId, superseded);
      let data = snapshot;
      // A newer load superseded this one (its result is discarded): leave the queued events to it.
      if (superseded()) return data;
      const queued = this.queued.get(connectionId) ?? [];
      this.queued.delete(connectionId);
      const { data: merged, gap } = applyLeaseEvents(data, queued);
      data = merged;
      const resync = this.resyncSeq.get(connectionId);
      this.resyncSeq.delete(connectionId);
      // Deferred: refetching from inside the running query would cancel this very load.
      if (gap || (resync !== undefined && resync > snapshot.seq))
        setTimeout(() => this.refetchSoon(connectionId), 0);
      return data;
    } finally {
      const n = (this.loading.get(connectionId) ?? 1) - 1;
      if (n <= 0) this.loading.delete(connectionId);
      else this.loading.set(connectionId, n);
    }
  };

  /**
   * The snapshot in pages of {@link PAGE_ROWS}, all from the same server-side
   * snapshot (the first page's seq names it). Each page is its own request,
   * parse and insert, so loading 100 000 rows never blocks the page for long.
   * If the server replaced the snapshot midway (it is held for 30 s after each
   * page), start again; after a few tries take it whole.
   */
  private async fetchSnapshot(connectionId: string, superseded: () => boolean): Promise<FleetData> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const first = await this.client.call('fleet.snapshot', { connectionId, offset: 0, limit: PAGE_ROWS });
      const builder = new SnapshotBuilder(first);
      builder.add(first.rows);
      const total = first.total ?? first.rows.length;
      let offset = first.rows.length;
      let same = true;
      let pages = 1;
      // Show the first pages at once (the first rows within a second, not after all 100 000); events
      // wait in the queue until the whole snapshot is in.
      const show = () => {
        if (attempt === 0 && offset < total && !superseded()) {
          this.queryClient.setQueryData(keys.fleet(connectionId), builder.partial(pages, total));
        }
      };
      show();
      while (offset < total && !superseded()) {
        const page = await this.client.call('fleet.snapshot', {
          connectionId,
          offset,
          limit: PAGE_ROWS,
          seq: first.seq,
        });
        if (page.seq !== first.seq || page.rows.length === 0) {
          same = false;
          break;
        }
        builder.add(page.rows);
        offset += page.rows.length;
        pages++;
        // Every fifth page (~10 000 rows): each publish makes the view pass over what has arrived.
        if (pages % 5 === 0) show();
      }
      if (same) return builder.finish();
    }
    return fromSnapshot(await this.client.call('fleet.snapshot', { connectionId }));
  }

  private onTransport(state: TransportState): void {
    if (state === 'closed') this.wasClosed = true;
    if (state === 'open' && this.wasClosed) {
      this.wasClosed = false;
      // Events were missed while the link was down: every snapshot is suspect.
      void this.queryClient.invalidateQueries({ queryKey: keys.connections() });
      void this.queryClient.invalidateQueries({ queryKey: keys.info() });
      void this.queryClient.refetchQueries({
        predicate: (q) => q.queryKey[0] === 'connections' && q.queryKey[2] === 'fleet',
      });
    }
  }

  private onEvent(event: ConsoleEvent): void {
    const now = Date.now();
    this.lastEventAt = now;
    if (event.type === 'connections') for (const c of event.connections) this.silence.heard(c.id, now);
    else if (event.type === 'connection') this.silence.heard(event.connection.id, now);
    else if (event.type === 'view') this.silence.heard(event.view.connectionId, now);
    else if ('connectionId' in event) this.silence.heard(event.connectionId, now);
    switch (event.type) {
      case 'connections':
        for (const c of event.connections) this.note(c);
        this.queryClient.setQueryData(keys.connections(), event.connections);
        return;
      case 'connection': {
        const conn = event.connection;
        this.note(conn);
        const prev = this.queryClient.getQueryData<ConnectionInfo[]>(keys.connections());
        const before = prev?.find((c) => c.id === conn.id);
        if (before !== undefined && sameButSyncedAt(before, conn)) return;
        this.queryClient.setQueryData<ConnectionInfo[]>(keys.connections(), (list) => {
          if (list === undefined) return [conn];
          const i = list.findIndex((c) => c.id === conn.id);
          if (i < 0) return [...list, conn];
          const next = list.slice();
          next[i] = conn;
          return next;
        });
        // A connection that came back from an error may have a failed snapshot to redo.
        const fleetState = this.queryClient.getQueryState(keys.fleet(conn.id));
        if (conn.state === 'live' && before?.state !== 'live' && fleetState?.status === 'error') {
          this.refetchSoon(conn.id);
        }
        return;
      }
      case 'resync':
        if (this.loading.has(event.connectionId)) {
          this.resyncSeq.set(event.connectionId, event.seq);
        } else {
          this.queued.delete(event.connectionId);
          this.refetchSoon(event.connectionId);
        }
        return;
      case 'leases': {
        let q = this.queued.get(event.connectionId);
        if (q === undefined) {
          q = [];
          this.queued.set(event.connectionId, q);
        }
        q.push(event);
        if (q.length > MAX_QUEUED) {
          this.queued.delete(event.connectionId);
          this.refetchSoon(event.connectionId);
        }
        this.timer ??= setTimeout(
          () => this.flush(),
          Math.max(0, this.lastFlushAt + FLUSH_MS - performance.now()),
        );
        return;
      }
    }
  }

  private note(conn: ConnectionInfo): void {
    this.syncedAt.set(conn.id, conn.syncedAt);
    if (conn.heartbeats !== undefined) this.heartbeats.set(conn.id, conn.heartbeats);
  }

  private flush(): void {
    this.timer = null;
    this.lastFlushAt = performance.now();
    for (const [connectionId, events] of this.queued) {
      if (this.loading.has(connectionId)) continue;
      const key = keys.fleet(connectionId);
      const current = this.queryClient.getQueryData<FleetData>(key);
      // No snapshot yet and none loading: it will come with everything; keep the events for it.
      if (current === undefined) continue;
      this.queued.delete(connectionId);
      const { data, gap } = applyLeaseEvents(current, events);
      if (data !== current) this.queryClient.setQueryData(key, data);
      if (gap) this.refetchSoon(connectionId);
    }
  }

  private refetchSoon(connectionId: string): void {
    void this.queryClient.refetchQueries({ queryKey: keys.fleet(connectionId), exact: true });
  }
}

/** Whether two announcements of a connection differ in nothing but syncedAt and the heartbeat-check figures. */
function sameButSyncedAt(a: ConnectionInfo, b: ConnectionInfo): boolean {
  return (
    JSON.stringify({ ...a, syncedAt: 0, heartbeats: null }) ===
    JSON.stringify({ ...b, syncedAt: 0, heartbeats: null })
  );
}
