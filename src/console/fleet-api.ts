/**
 * The console service's fleet requests answered from the connection's index (issue 43):
 * windows (`fleet.view`), subscriptions over transports without per-client sockets
 * (`fleet.watch`), whole-fleet counts, server-side jobs by filter, and reopening a connection.
 */
import { ForbiddenError } from '../lease/errors.ts';
import type { Caller, Permission } from './access.ts';
import type { ConsoleEvent, Counts, MethodName, ParsedParams, Result } from './api.ts';
import type { Connection } from './connection.ts';
import type { FleetStore } from './fleet/store.ts';
import { Jobs } from './jobs.ts';
import { TOP_HOLDERS } from './stats.ts';
import { type ViewSource, ViewWatcher, viewOf } from './views.ts';

type FleetMethod =
  | 'fleet.view'
  | 'fleet.watch'
  | 'fleet.unwatch'
  | 'fleet.counts'
  | 'lease.forceReleaseMatching'
  | 'job.get'
  | 'fleet.exportMatching'
  | 'connections.reopen';

export type FleetHandlers = {
  [M in FleetMethod]: (p: ParsedParams<M>, caller: Caller) => Promise<Result<M>>;
};

/** What the fleet requests need of the service. */
export interface FleetApiHost {
  visibleConnection(id: string, caller: Caller): Connection;
  operatorPermission(caller: Caller, conn: Connection, action: 'force-release'): Permission;
  /** The caller's role on the connection allows `needed` (read-only does not matter). */
  rolePermission(caller: Caller, name: string, needed: 'operator', action: string): Permission;
  /** The audit operator for a caller and an optional given name (refused unless allowed). */
  auditOperator(caller: Caller, given: string | undefined, details: Record<string, unknown>): string;
  emit(event: ConsoleEvent): void;
  subscribe(listener: (event: ConsoleEvent) => void): () => void;
}

/** A connection as a view sees it. */
export function viewSource(conn: Connection): ViewSource {
  return { id: conn.id, model: conn.model, statusNow: () => conn.statusNow() };
}

/** Whole-fleet counts from the index: by status (kept with it) and the top holders (one pass). */
export function indexCounts(store: FleetStore, top = TOP_HOLDERS): Counts {
  const perHolder = new Uint32Array(store.cols.holders.values.length);
  for (const slot of store.byWorkId) perHolder[store.cols.holder[slot]!]!++;
  const byHolder: Array<{ holderId: string; count: number }> = [];
  perHolder.forEach((count, h) => {
    if (count > 0) byHolder.push({ holderId: store.cols.holders.values[h]!, count });
  });
  byHolder.sort((a, b) => b.count - a.count || (a.holderId < b.holderId ? -1 : 1));
  return { total: store.size, byStatus: store.countsByStatus(), byHolder: byHolder.slice(0, top) };
}

export class FleetApi {
  readonly jobs: Jobs;
  /** The local transport's subscriptions (IPC, direct calls): their events go to every subscriber. */
  private local: ViewWatcher | null = null;
  private readonly watchers = new Set<{
    watcher: ViewWatcher;
    sources: Map<Connection, () => Iterable<string>>;
  }>();

  constructor(private readonly host: FleetApiHost) {
    this.jobs = new Jobs((e) => host.emit(e));
  }

  /** A watcher for one client (a WebSocket): its events go to `send` only. */
  watcher(caller: Caller, send: (event: ConsoleEvent) => void): ViewWatcher {
    const entry = {
      watcher: null as unknown as ViewWatcher,
      sources: new Map<Connection, () => Iterable<string>>(),
    };
    const watcher = new ViewWatcher(
      {
        viewSource: (id, c) => {
          const conn = this.host.visibleConnection(id, c);
          if (!entry.sources.has(conn)) {
            const source = () => watcher.visibleIds(conn.id);
            entry.sources.set(conn, source);
            conn.visibleSources.add(source);
          }
          return viewSource(conn);
        },
        subscribe: (l) => this.host.subscribe(l),
      },
      caller,
      send,
    );
    entry.watcher = watcher;
    this.watchers.add(entry);
    const close = watcher.close.bind(watcher);
    watcher.close = () => {
      close();
      this.watchers.delete(entry);
      for (const [conn, source] of entry.sources) conn.visibleSources.delete(source);
    };
    return watcher;
  }

  close(): void {
    for (const { watcher } of [...this.watchers]) watcher.close();
    this.local = null;
    this.jobs.clear();
  }

  readonly handlers: FleetHandlers = {
    'fleet.view': async (p, caller) =>
      viewOf(viewSource(this.host.visibleConnection(p.connectionId, caller)), p),
    'fleet.watch': async ({ watchId, query }, caller) => {
      this.local ??= this.watcher(caller, (e) => this.host.emit(e));
      return this.local.watch(watchId, query);
    },
    'fleet.unwatch': async ({ watchId }) => {
      this.local?.unwatch(watchId);
      return {};
    },
    'fleet.counts': async ({ connectionId, minutes }, caller) => {
      const conn = this.host.visibleConnection(connectionId, caller);
      const model = conn.model;
      const serverNow = conn.serverNow();
      if (model === null) {
        return { counts: { total: 0, byStatus: emptyByStatus(), byHolder: [] }, rates: [], since: null };
      }
      return {
        counts: indexCounts(model.judged(conn.statusNow())),
        rates: model.rates.points(serverNow, minutes ?? 60),
        since: model.rates.oldest(serverNow),
      };
    },
    'lease.forceReleaseMatching': async ({ connectionId, filter, expectCount, reason, operator }, caller) => {
      const conn = this.host.visibleConnection(connectionId, caller);
      const allowed = this.host.operatorPermission(caller, conn, 'force-release');
      if (!allowed.allowed) throw new ForbiddenError(allowed.reason, { details: { connectionId } });
      const who = this.host.auditOperator(caller, operator, { connectionId });
      return this.jobs.forceRelease(jobConnection(conn), caller, {
        filter,
        expectCount,
        reason,
        operator: who,
      });
    },
    'job.get': async ({ jobId }, caller) => this.jobs.get(jobId, caller),
    'fleet.exportMatching': async (p, caller) => {
      const conn = this.host.visibleConnection(p.connectionId, caller);
      return this.jobs.exportPage(jobConnection(conn), caller, p);
    },
    'connections.reopen': async ({ id }, caller) => {
      const conn = this.host.visibleConnection(id, caller);
      // Reopening changes nothing stored (read-only connections may be reopened), but it
      // interrupts everyone's view of the connection: operators only.
      const allowed = this.host.rolePermission(
        caller,
        conn.input.name,
        'operator',
        'reopening the connection',
      );
      if (!allowed.allowed) throw new ForbiddenError(allowed.reason, { details: { connectionId: id } });
      await conn.reopen();
      return conn.info();
    },
  };
}

function jobConnection(conn: Connection) {
  return {
    id: conn.id,
    name: conn.input.name,
    get model() {
      return conn.model;
    },
    statusNow: () => conn.statusNow(),
    requireAdmin: () => conn.requireAdmin(),
  };
}

function emptyByStatus(): Counts['byStatus'] {
  return { live: 0, expiring: 0, expired: 0, released: 0, stuck: 0, 'force-released': 0 };
}

export type { MethodName };
