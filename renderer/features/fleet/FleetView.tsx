import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import type { ConnectionInfo, LeaseStatus } from '../../../src/console/api.ts';
import { LEASE_STATUSES } from '../../../src/console/api.ts';
import { visible as visibleText } from '../../../src/console/text.ts';
import { type Freshness, useFreshness } from '../../app/freshness.ts';
import { type FleetEntry, toSources, useConnectionMap } from '../../app/hooks.ts';
import { navigate } from '../../app/router.ts';
import { type Route, withQuery } from '../../app/routes.ts';
import { showToast } from '../../app/toast.tsx';
import { EnvBadge, ErrorNotice } from '../../app/ui.tsx';
import { useNow } from '../../lib/clock.ts';
import { formatAgo, formatClockSeconds } from '../../lib/format.ts';
import { isTypingTarget } from '../../lib/keys.ts';
import { FleetActions } from '../bulk/FleetActions.tsx';
import { DetailPane } from '../detail/DetailPane.tsx';
import { isLostShard, LostShardPanel } from '../recover/LostShard.tsx';
import { ColumnsMenu } from './ColumnsMenu.tsx';
import { FleetTable, rowKey } from './FleetTable.tsx';
import {
  EMPTY_FILTER,
  emptyCounts,
  type FleetData,
  type FleetFilter,
  type FleetSource,
  type FleetView as FleetViewModel,
  orderIsStatic,
  type Sort,
  type SortKey,
  viewJob,
} from './model.ts';
import { filterFromQuery, fleetQuery, sortFromQuery } from './url.ts';
import { type ComputedView, type PlanJob, shownView, ViewRunner } from './view-runner.ts';

const EMPTY_VIEW: FleetViewModel = {
  connIds: [],
  workIds: [],
  instants: new Map(),
  counts: emptyCounts(),
  total: 0,
};

export interface Selection {
  connectionId: string;
  workId: string;
}

const mapIds = new WeakMap<object, number>();
let nextMapId = 1;
function identity(o: object): number {
  let id = mapIds.get(o);
  if (id === undefined) {
    id = nextMapId++;
    mapIds.set(o, id);
  }
  return id;
}

interface ViewInputs {
  sources: readonly FleetSource[];
  filter: FleetFilter;
  sort: Sort;
  localNow: number;
}

/** The view job of the inputs; the last view's order still holds when only the clock moved: then it just counts. */
function planView(inputs: () => ViewInputs): PlanJob<FleetViewModel> {
  return (last) => {
    const { sources, filter, sort, localNow } = inputs();
    const key = `${sources.map((s) => `${s.connectionId}#${identity(s.data.rows)}#${s.data.membershipRev}`).join('|')}@${identity(filter)}@${identity(sort)}`;
    const reuse = last !== null && last.key === key && orderIsStatic(filter, sort) ? last.view : null;
    return { key, job: viewJob(sources, filter, sort, localNow, reuse) };
  };
}

export interface FleetViewProps {
  fleets: FleetEntry[];
  /** False while another view is shown: the table keeps its state but stops recomputing. */
  visible: boolean;
  /** The fleet's address: scope, selected lease, filters and sort (see app/routes.ts, ./url.ts). */
  route: Route;
  searchRef: React.RefObject<HTMLInputElement | null>;
}

/**
 * Which fleet a route shows: every connection (`/`), or one (`/c/<id>`). A lease link shows its
 * own connection's fleet unless `scope` says otherwise (`all`, or another connection's id: the
 * operator changed tabs with the lease open).
 */
export function scopeOf(route: Route): string {
  if (route.connectionId === null) return 'all';
  return route.workId !== null && route.query.scope !== undefined ? route.query.scope : route.connectionId;
}

/** The route of a scope with the same filters and no lease selected. */
function scopeRoute(route: Route, scope: string): Route {
  return {
    view: 'fleet',
    connectionId: scope === 'all' ? null : scope,
    workId: null,
    query: withQuery(route, { scope: undefined, ...NO_CHECKPOINT_VIEW }).query,
  };
}

/** The checkpoint viewer's place in the address (view and node) belongs to the lease it was on. */
const NO_CHECKPOINT_VIEW = { cv: undefined, cp: undefined };

/** Another scope, the open lease (if any) staying open. */
function changeScope(route: Route, scope: string): Route {
  if (route.workId === null || route.connectionId === null) return scopeRoute(route, scope);
  return withQuery(route, { scope: scope === route.connectionId ? undefined : scope });
}

export function FleetView({ fleets, visible, route, searchRef }: FleetViewProps) {
  const connections = useConnectionMap();
  const tick = useNow();
  const scope = scopeOf(route);
  const selection: Selection | null =
    route.connectionId !== null && route.workId !== null
      ? { connectionId: route.connectionId, workId: route.workId }
      : null;
  // One object per distinct value: the view runner restarts when its identity changes.
  const q = route.query;
  const filterKey = [q.q, q.holder, q.prefix, q.status].join('\u0000');
  // biome-ignore lint/correctness/useExhaustiveDependencies: filterKey names exactly what the filter holds
  const filter = useMemo(() => filterFromQuery(route.query), [filterKey]);
  const sortKey = `${q.sort ?? ''}|${q.dir ?? ''}`;
  // biome-ignore lint/correctness/useExhaustiveDependencies: sortKey names exactly what the sort holds
  const sort = useMemo(() => sortFromQuery(route.query), [sortKey]);
  const routeRef = useRef(route);
  routeRef.current = route;
  const setFilter = useCallback((next: FleetFilter, mode: 'push' | 'replace' = 'push') => {
    const r = routeRef.current;
    navigate(withQuery(r, fleetQuery(next, sortFromQuery(r.query))), mode);
  }, []);
  const onScope = (next: string) => navigate(changeScope(route, next));
  const onSelect = useCallback((s: Selection | null) => {
    const r = routeRef.current;
    const sc = scopeOf(r);
    if (s === null) navigate(scopeRoute(r, sc));
    else {
      navigate({
        view: 'fleet',
        connectionId: s.connectionId,
        workId: s.workId,
        query: withQuery(r, {
          scope: sc === s.connectionId ? undefined : sc,
          ...(s.connectionId === r.connectionId && s.workId === r.workId ? {} : NO_CHECKPOINT_VIEW),
        }).query,
      });
    }
  }, []);
  const [activeIndex, setActiveIndex] = useState(-1);
  const gridRef = useRef<HTMLTableElement>(null);
  const hasSelection = selection !== null;
  useEffect(() => {
    if (!visible || !hasSelection) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape' || document.querySelector('dialog[open]') !== null) return;
      const search = searchRef.current;
      if (search !== null && e.target === search && search.value !== '') return;
      onSelect(null);
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [visible, hasSelection, onSelect, searchRef]);
  // `f` and `r` with a lease open are the detail pane's; with none, say what they need.
  useEffect(() => {
    if (!visible || hasSelection) return;
    const onKey = (e: KeyboardEvent) => {
      if ((e.key !== 'f' && e.key !== 'r') || e.ctrlKey || e.metaKey || e.altKey) return;
      if (document.querySelector('dialog[open]') !== null) return;
      if (isTypingTarget(e.target)) return;
      const what = e.key === 'f' ? 'Force release' : 'Request release';
      showToast({ text: `${what} needs an open lease: / to search, Enter to open it, then ${e.key}.` });
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [visible, hasSelection]);
  const frozenTick = useRef(tick);
  if (visible) frozenTick.current = tick;
  const localNow = frozenTick.current;

  const connectionList = useMemo(() => fleets.map((f) => f.connection), [fleets]);
  const freshness = useFreshness(connectionList);
  const inScope = scope === 'all' ? fleets : fleets.filter((f) => f.connection.id === scope);
  const sources = toSources(inScope, freshness);
  // What makes the shown view wrong at once (a new snapshot replaces the Map; clock, thresholds or staleness moved).
  const sourcesKey = sources
    .map(
      (s) =>
        `${s.connectionId}#${identity(s.data.rows)}#${s.clockOffsetMs}#${s.thresholds.stuckAfterMs}#${s.thresholds.expiringFraction}#${s.frozenAt ?? ''}`,
    )
    .join('|');
  // Backend time each stale connection's rows are shown at (absent: live, the clock runs).
  const frozenKey = sources.map((s) => `${s.connectionId}=${s.frozenAt ?? ''}`).join('|');
  // biome-ignore lint/correctness/useExhaustiveDependencies: frozenKey names exactly what the map holds
  const frozen = useMemo(() => {
    const m = new Map<string, number>();
    for (const s of sources) if (s.frozenAt != null) m.set(s.connectionId, s.frozenAt);
    return m;
  }, [frozenKey]);
  // Rows that came or went: shown at the next refresh (view-runner.ts: at most 500 ms later).
  const membershipKey = sources.map((s) => s.data.membershipRev).join('|');
  const inputs = useRef<ViewInputs>({ sources, filter, sort, localNow });
  inputs.current = { sources, filter, sort, localNow };
  const scopeKey = sources.map((s) => s.connectionId).join('|');
  const [computed, setComputed] = useState<ComputedView<FleetViewModel> | null>(null);
  const runnerKey = useRef({ key: sourcesKey, scope: scopeKey });
  const [runner] = useState(
    () =>
      new ViewRunner(
        planView(() => inputs.current),
        (view) => setComputed({ view, ...runnerKey.current }),
      ),
  );
  useEffect(() => () => runner.stop(), [runner]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the runner reads the latest inputs through a ref; these are what make a new view urgent
  useEffect(() => {
    runnerKey.current = { key: sourcesKey, scope: scopeKey };
    runner.restart();
  }, [runner, sourcesKey, filter, sort]);
  // Rows changed in place by events (a release, a takeover): their rows redraw at once (`rev`), the
  // counts follow at the next refresh, one job's gap later (view-runner.ts), not at the next tick.
  const rev = sources.reduce((n, s) => n + s.data.rev, 0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: as above; statuses move with time, membership and rows with events
  useEffect(() => {
    if (visible) runner.refresh();
  }, [runner, visible, membershipKey, rev, localNow]);
  const { view, computing } = shownView(computed, sourcesKey, scopeKey, EMPTY_VIEW);
  const fleetMap = useMemo(() => {
    const m = new Map<string, FleetData>();
    for (const f of fleets) if (f.data !== undefined) m.set(f.connection.id, f.data);
    return m;
  }, [fleets]);

  const onSort = useCallback((key: SortKey) => {
    const r = routeRef.current;
    const s = sortFromQuery(r.query);
    const next: Sort = s.key === key ? { key, dir: s.dir === 'asc' ? 'desc' : 'asc' } : { key, dir: 'asc' };
    navigate(withQuery(r, fleetQuery(filterFromQuery(r.query), next)));
  }, []);
  const onOpen = useCallback(
    (index: number) => {
      const connectionId = view.connIds[index];
      const workId = view.workIds[index];
      if (connectionId !== undefined && workId !== undefined) onSelect({ connectionId, workId });
    },
    [view, onSelect],
  );
  /** Back to the table, on the selected lease's row (after a dialog, or once Enter opened it). */
  const focusRow = useCallback(() => {
    const sel = routeRef.current;
    const at = sel.workId === null ? -1 : indexOf(viewRef.current, sel.connectionId, sel.workId);
    if (at >= 0) setActiveIndex(at);
    requestAnimationFrame(() => gridRef.current?.focus());
  }, []);
  const viewRef = useRef(view);
  viewRef.current = view;
  const onSearchKey = (e: React.KeyboardEvent<HTMLInputElement>) => {
    if (e.key !== 'Enter' || e.ctrlKey || e.metaKey || e.altKey || view.workIds.length === 0) return;
    e.preventDefault();
    setActiveIndex(0);
    onOpen(0);
    requestAnimationFrame(() => gridRef.current?.focus());
  };
  const firstMatch = view.workIds[0];
  const searchHint =
    filter.search.trim() === '' || firstMatch === undefined || computing
      ? null
      : view.workIds.length === 1
        ? `Enter opens ${visibleText(firstMatch)}`
        : `Enter opens the first of ${view.workIds.length.toLocaleString()}: ${visibleText(firstMatch)}`;
  const toggleStatus = (s: LeaseStatus) => {
    const statuses = new Set(filter.statuses);
    if (statuses.has(s)) statuses.delete(s);
    else statuses.add(s);
    setFilter({ ...filter, statuses });
    setActiveIndex(-1);
  };
  // Typing replaces the history entry (Back does not replay keystrokes); the rest pushes one.
  const setText = (field: 'search' | 'holder' | 'workIdPrefix', value: string) => {
    setFilter({ ...filter, [field]: value }, 'replace');
    setActiveIndex(-1);
  };
  const filtered =
    filter.search !== '' || filter.holder !== '' || filter.workIdPrefix !== '' || filter.statuses.size > 0;

  // One message per state: a backend that is merely unreachable while its rows are shown is the
  // stale note's job (with "as of"), not an error box saying the fleet cannot be shown.
  const errors = inScope.filter(
    (f) =>
      (f.connection.error !== null &&
        !(f.connection.syncedAt !== null && f.connection.error.code === 'BACKEND_UNAVAILABLE')) ||
      f.error !== null,
  );
  // A connection that never synced has no rows to be stale: its error (or "Loading") says it all.
  // Snapshots still arriving page by page: say how far, so partial counts are not read as the fleet.
  const loadingParts = sources.flatMap((src) => (src.data.loading === undefined ? [] : [src.data.loading]));
  const loadingRows =
    loadingParts.length === 0
      ? null
      : {
          loaded: loadingParts.reduce((n, l) => n + l.loaded, 0),
          total: loadingParts.reduce((n, l) => n + l.total, 0),
        };
  const staleInScope = inScope.filter(
    (f) => freshness.get(f.connection.id)?.stale === true && f.connection.syncedAt !== null,
  );
  // Nothing to show but errors: no counts, filters or "No leases in this fleet yet" beside them.
  const blocked =
    inScope.length > 0 && inScope.every((f) => f.connection.error !== null && f.connection.syncedAt === null);
  const loading = inScope.some((f) => f.isLoading);
  const selectedKey = selection === null ? null : rowKey(selection.connectionId, selection.workId);
  const selectedConn = selection === null ? undefined : connections.get(selection.connectionId);

  return (
    <div className="fleet-view">
      <div className="scope-bar">
        <div role="tablist" aria-label="Connection shown" className="scope-tabs">
          <button
            type="button"
            role="tab"
            aria-selected={scope === 'all'}
            className="scope-tab"
            onClick={() => onScope('all')}
          >
            All connections
          </button>
          {fleets.map((f) => (
            <button
              key={f.connection.id}
              type="button"
              role="tab"
              aria-selected={scope === f.connection.id}
              className="scope-tab"
              onClick={() => onScope(f.connection.id)}
            >
              <ConnectionDot conn={f.connection} freshness={freshness.get(f.connection.id)} />
              {f.connection.name} <EnvBadge env={f.connection.environment} />
              {f.connection.readOnly && <span className="ro-tag">read-only</span>}
            </button>
          ))}
        </div>
      </div>
      {errors.map((f) => (
        <ErrorNotice
          key={f.connection.id}
          error={f.connection.error ?? f.error}
          url={f.connection.url}
          context={f.connection.error !== null ? 'connection' : 'action'}
          title={`${f.connection.name}: the fleet cannot be shown`}
        />
      ))}
      {errors
        .filter((f) => isLostShard(f.connection))
        .map((f) => (
          <LostShardPanel key={`lost-${f.connection.id}`} conn={f.connection} />
        ))}
      {!blocked &&
        staleInScope.map((f) => (
          <StaleNote
            key={f.connection.id}
            conn={f.connection}
            freshness={freshness.get(f.connection.id)}
            localNow={tick}
          />
        ))}
      {!blocked && (
        <>
          <fieldset className="counts" aria-label="Whole fleet by status (click to filter)">
            <span className="total">
              {loadingRows !== null
                ? `loading ${loadingRows.loaded.toLocaleString()} of ${loadingRows.total.toLocaleString()} leases… · so far:`
                : filtered
                  ? `${view.workIds.length.toLocaleString()} of ${view.total.toLocaleString()} leases shown · whole fleet:`
                  : `${view.total.toLocaleString()} leases · whole fleet:`}
            </span>
            {LEASE_STATUSES.map((s) => (
              <button
                key={s}
                type="button"
                className={`count-chip status-${s}`}
                aria-pressed={filter.statuses.has(s)}
                onClick={() => toggleStatus(s)}
              >
                <span className="count-label">{s}</span>{' '}
                <span className="count-num">{view.counts[s].toLocaleString()}</span>
              </button>
            ))}
          </fieldset>
          <div className="filters">
            <label>
              <span className="sr-only">Search leases</span>
              <input
                ref={searchRef}
                type="search"
                id="fleet-search"
                placeholder="Search work id or holder  ( / )"
                aria-label="Search leases"
                value={filter.search}
                onChange={(e) => setText('search', e.target.value)}
                onKeyDown={onSearchKey}
                aria-describedby={searchHint === null ? undefined : 'fleet-search-hint'}
              />
            </label>
            <label>
              Holder
              <input
                type="text"
                placeholder="prefix"
                value={filter.holder}
                onChange={(e) => setText('holder', e.target.value)}
              />
            </label>
            <label>
              Work ID prefix
              <input
                type="text"
                placeholder="prefix"
                value={filter.workIdPrefix}
                onChange={(e) => setText('workIdPrefix', e.target.value)}
              />
            </label>
            <button type="button" disabled={!filtered} onClick={() => setFilter(EMPTY_FILTER)}>
              Clear filters
            </button>
            <ColumnsMenu showConnection={scope === 'all' && fleets.length > 1} />
            <FleetActions
              view={view}
              fleets={fleetMap}
              connections={connections}
              frozen={frozen}
              filter={filter}
              scopeIds={inScope.map((f) => f.connection.id)}
            />
            <span
              className="hint search-hint"
              id="fleet-search-hint"
              aria-live="polite"
              title={searchHint ?? undefined}
            >
              {searchHint}
            </span>
          </div>
          <div className={`fleet-split${selection !== null ? ' with-detail' : ''}`}>
            {(loading && sources.length === 0) || (computing && view.total === 0 && sources.length > 0) ? (
              <div className="empty">Loading the fleet…</div>
            ) : (
              <FleetTable
                view={view}
                fleets={fleetMap}
                connections={connections}
                showConnection={scope === 'all' && fleets.length > 1}
                frozen={frozen}
                sort={sort}
                onSort={onSort}
                activeIndex={activeIndex}
                onActiveIndex={setActiveIndex}
                onOpen={onOpen}
                selectedKey={selectedKey}
                gridRef={gridRef}
              />
            )}
            {selection !== null && selectedConn !== undefined && (
              <DetailPane
                key={selectedKey}
                connection={selectedConn}
                row={fleetMap.get(selection.connectionId)?.rows.get(selection.workId) ?? null}
                rev={rev}
                localNow={tick}
                freshness={freshness.get(selection.connectionId)}
                heartbeatsAsOf={fleetMap.get(selection.connectionId)?.heartbeatsAsOf ?? null}
                at={view.instants.get(selection.connectionId)}
                onClose={() => onSelect(null)}
                onReturnFocus={focusRow}
              />
            )}
          </div>
        </>
      )}
    </div>
  );
}

/** Where a lease is in the shown view, or -1. */
function indexOf(view: FleetViewModel, connectionId: string | null, workId: string): number {
  for (let i = view.workIds.indexOf(workId); i >= 0; i = view.workIds.indexOf(workId, i + 1)) {
    if (view.connIds[i] === connectionId) return i;
  }
  return -1;
}

/** The connection chip's dot: amber while its rows are not current, red on an error. */
export function ConnectionDot({
  conn,
  freshness,
}: {
  conn: ConnectionInfo;
  freshness: Freshness | undefined;
}) {
  const tone = conn.state === 'error' ? 'error' : freshness?.stale === true ? 'stale' : conn.state;
  return <span className={`dot dot-${tone}`} aria-hidden="true" />;
}

/** "as of 09:31:02 — 41 s ago": where the operator looks, for each connection whose rows are not current. */
function StaleNote({
  conn,
  freshness,
  localNow,
}: {
  conn: ConnectionInfo;
  freshness: Freshness | undefined;
  localNow: number;
}) {
  const asOf = freshness?.asOf ?? null;
  return (
    <div className="stale-note" role="status" aria-label={`${conn.name} is not current`}>
      <strong>{conn.name}</strong>{' '}
      {asOf === null
        ? 'not synced yet'
        : `as of ${formatClockSeconds(asOf)} — ${formatAgo(localNow + conn.clockOffsetMs - asOf)}`}
      {freshness?.reason != null && <span className="muted"> · {freshness.reason}</span>}
      <span className="muted">
        {' '}
        · statuses are frozen at that time; force release is off until it is current
      </span>
    </div>
  );
}
