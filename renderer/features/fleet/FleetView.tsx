/**
 * The fleet screen: scope tabs, counts, filters, the table and the open lease. The console
 * server filters, sorts, pages and counts (src/console/common/view.ts); the page holds the rows
 * on screen plus a margin (./window.ts) and the counts. The address holds the scope, the open
 * lease, the filters and the sort (./url.ts); typed filters reach the server after a short pause
 * (./useFleetWindow.ts), and an answer to an earlier question never replaces a later one.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import type { LeaseStatus } from '../../../src/console/common/index.ts';
import { visible as visibleText } from '../../../src/console/common/index.ts';
import { backendNow, useFreshness } from '../../app/freshness.ts';
import { useConnectionMap, useConnections } from '../../app/hooks.ts';
import { navigate } from '../../app/router.ts';
import { type Route, withQuery } from '../../app/routes.ts';
import { showToast } from '../../app/toast.tsx';
import { EnvBadge, ErrorNotice } from '../../app/ui.tsx';
import { useNow } from '../../lib/clock.ts';
import { isTypingTarget } from '../../lib/keys.ts';
import { FleetActions } from '../bulk/FleetActions.tsx';
import { LeaseDetail, type TableLease } from '../detail/LeaseDetail.tsx';
import { isLostShard, LostShardPanel } from '../recover/LostShard.tsx';
import { ColumnsMenu } from './ColumnsMenu.tsx';
import {
  ConnectionDot,
  CountChips,
  DataLostNote,
  StaleNote,
  totalText,
  UnknownConnection,
} from './FleetNotices.tsx';
import { FleetTable, rowKey } from './FleetTable.tsx';
import { EMPTY_FILTER, type FleetFilter, type Sort, type SortKey } from './model.ts';
import { filterFromQuery, fleetQuery, sortFromQuery } from './url.ts';
import { TYPING_DEBOUNCE_MS, useDebounced, useFleetWindow } from './useFleetWindow.ts';
import { layoutOf, type Segment, slotAt, stackOrder, summarize, toViewFilter, toViewSort } from './window.ts';

export interface Selection {
  connectionId: string;
  workId: string;
}

export interface FleetViewProps {
  /** False while another view is shown: the table keeps its state. */
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

function isFiltered(f: FleetFilter): boolean {
  return f.search !== '' || f.holder !== '' || f.workIdPrefix !== '' || f.statuses.size > 0;
}

/** The selected lease as the table's window holds it, when it is there. */
function tableLease(segments: readonly Segment[], sel: Selection): TableLease | null {
  for (const seg of segments) {
    if (seg.connectionId !== sel.connectionId || seg.view === null) continue;
    const i = seg.view.rows.findIndex((r) => r.workId === sel.workId);
    const row = seg.view.rows[i];
    const status = seg.view.statuses[i];
    if (row !== undefined && status !== undefined) return { row, status, view: seg.view };
  }
  return null;
}

export function FleetView({ visible, route, searchRef }: FleetViewProps) {
  const connectionsQ = useConnections();
  const connectionList = connectionsQ.data ?? [];
  const connections = useConnectionMap();
  const tick = useNow();
  const scope = scopeOf(route);
  const selection: Selection | null =
    route.connectionId !== null && route.workId !== null
      ? { connectionId: route.connectionId, workId: route.workId }
      : null;
  const q = route.query;
  const filterKey = [q.q, q.holder, q.prefix, q.status].join('\u0000');
  // biome-ignore lint/correctness/useExhaustiveDependencies: filterKey names exactly what the filter holds
  const filter = useMemo(() => filterFromQuery(route.query), [filterKey]);
  const sortKey = `${q.sort ?? ''}|${q.dir ?? ''}`;
  // biome-ignore lint/correctness/useExhaustiveDependencies: sortKey names exactly what the sort holds
  const sort = useMemo(() => sortFromQuery(route.query), [sortKey]);
  const routeRef = useRef(route);
  routeRef.current = route;
  // Typed text waits for a pause before it asks the server; statuses and sort ask at once.
  const viewFilter = useMemo(() => toViewFilter(filter), [filter]);
  const typed = { search: filter.search, holder: filter.holder, workIdPrefix: filter.workIdPrefix };
  const askedText = useDebounced(typed, JSON.stringify(typed), TYPING_DEBOUNCE_MS);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the key names exactly what the filter holds
  const askedFilter = useMemo(
    () => toViewFilter({ ...askedText, statuses: filter.statuses }),
    [JSON.stringify(askedText), filter.statuses],
  );
  const viewSort = useMemo(() => toViewSort(sort), [sort]);

  const freshness = useFreshness(connectionList);
  const known = connectionsQ.data !== undefined;
  const unknownScope = known && scope !== 'all' && !connections.has(scope);
  const inScope = scope === 'all' ? connectionList : connectionList.filter((c) => c.id === scope);
  const ids = stackOrder(
    inScope.map((c) => c.id),
    sort,
  );
  const fw = useFleetWindow(ids, askedFilter, viewSort);
  const { segments } = fw;
  const layout = useMemo(() => layoutOf(segments), [segments]);
  const summary = useMemo(() => summarize(segments), [segments]);
  const filterPending = fw.pending || JSON.stringify(askedFilter) !== JSON.stringify(viewFilter);

  // Per connection: the clock its countdowns read (running while live, stopped at "as of" while stale).
  const frozen = new Set<string>();
  const clocks = new Map<string, number>();
  for (const c of inScope) {
    const f = freshness.get(c.id);
    if (f?.stale === true) frozen.add(c.id);
    clocks.set(c.id, f?.stale === true && f.asOf !== null ? f.asOf : backendNow(c, tick));
  }

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

  const onSort = useCallback((key: SortKey) => {
    const r = routeRef.current;
    const s = sortFromQuery(r.query);
    const next: Sort = s.key === key ? { key, dir: s.dir === 'asc' ? 'desc' : 'asc' } : { key, dir: 'asc' };
    navigate(withQuery(r, fleetQuery(filterFromQuery(r.query), next)));
    setActiveIndex(-1);
  }, []);
  const slotsRef = useRef({ segments, layout });
  slotsRef.current = { segments, layout };
  const onOpen = useCallback(
    (index: number) => {
      const slot = slotAt(slotsRef.current.segments, slotsRef.current.layout, index);
      if (slot?.row != null) onSelect({ connectionId: slot.connectionId, workId: slot.row.workId });
    },
    [onSelect],
  );
  /** Back to the table, on the selected lease's row when it is in the fetched windows. */
  const focusRow = useCallback(() => {
    const sel = routeRef.current;
    const { segments: segs, layout: lay } = slotsRef.current;
    for (let k = 0; k < segs.length && sel.workId !== null; k++) {
      const seg = segs[k];
      if (seg?.connectionId !== sel.connectionId || seg.view === null) continue;
      const i = seg.view.rows.findIndex((r) => r.workId === sel.workId);
      if (i >= 0) setActiveIndex((lay.starts[k] ?? 0) + seg.view.offset + i);
    }
    requestAnimationFrame(() => gridRef.current?.focus());
  }, []);
  const first = slotAt(segments, layout, 0);
  const onSearchKey = (e: React.KeyboardEvent<HTMLInputElement>) => {
    if (e.key !== 'Enter' || e.ctrlKey || e.metaKey || e.altKey || first?.row == null || filterPending)
      return;
    e.preventDefault();
    setActiveIndex(0);
    onOpen(0);
    requestAnimationFrame(() => gridRef.current?.focus());
  };
  const searchHint =
    filter.search.trim() === '' || first?.row == null || filterPending
      ? null
      : layout.total === 1
        ? `Enter opens ${visibleText(first.row.workId)}`
        : `Enter opens the first of ${layout.total.toLocaleString()}: ${visibleText(first.row.workId)}`;
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
  const filtered = isFiltered(filter);

  // One message per state: a backend that is merely unreachable while its rows are shown is the
  // stale note's job (with "as of"), not an error box saying the fleet cannot be shown.
  const errors = inScope.filter(
    (c) =>
      c.error !== null &&
      c.error.code !== 'DATASET_LOST' &&
      !(c.syncedAt !== null && c.error.code === 'BACKEND_UNAVAILABLE'),
  );
  const watchErrors = segments.filter((s) => s.error !== null && s.view === null);
  const dataLost = inScope.filter((c) => c.error?.code === 'DATASET_LOST');
  const staleInScope = inScope.filter(
    (c) => freshness.get(c.id)?.stale === true && c.syncedAt !== null && c.error?.code !== 'DATASET_LOST',
  );
  // Nothing to show but errors: no counts, filters or "No leases in this fleet yet" beside them.
  const blocked = inScope.length > 0 && inScope.every((c) => c.error !== null && c.syncedAt === null);
  const selectedKey = selection === null ? null : rowKey(selection.connectionId, selection.workId);
  const selectedConn = selection === null ? undefined : connections.get(selection.connectionId);
  const question = JSON.stringify([askedFilter, viewSort, ids]);
  const emptyText =
    summary.loading !== null
      ? 'No lease read so far matches.'
      : filtered
        ? 'No lease matches these filters.'
        : 'No leases in this fleet yet.';
  const showConnection = scope === 'all' && connectionList.length > 1;

  if (unknownScope) return <UnknownConnection id={scope} />;
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
          {connectionList.map((c) => (
            <button
              key={c.id}
              type="button"
              role="tab"
              aria-selected={scope === c.id}
              className="scope-tab"
              onClick={() => onScope(c.id)}
            >
              <ConnectionDot conn={c} freshness={freshness.get(c.id)} />
              {c.name} <EnvBadge env={c.environment} />
              {c.readOnly && <span className="ro-tag">read-only</span>}
            </button>
          ))}
        </div>
      </div>
      {errors.map((c) => (
        <ErrorNotice
          key={c.id}
          error={c.error}
          url={c.url}
          context="connection"
          title={`${c.name}: the fleet cannot be shown`}
        />
      ))}
      {watchErrors.map((s) => (
        <ErrorNotice
          key={`w-${s.connectionId}`}
          error={s.error}
          context="action"
          title={`${connections.get(s.connectionId)?.name ?? s.connectionId}: the fleet cannot be shown`}
        />
      ))}
      {dataLost.map((c) =>
        // A Redis shard that came back empty: recover exactly its buckets; elsewhere, reopen.
        isLostShard(c) ? (
          <LostShardPanel key={`lost-${c.id}`} conn={c} />
        ) : (
          <DataLostNote key={c.id} conn={c} />
        ),
      )}
      {!blocked &&
        staleInScope.map((c) => (
          <StaleNote key={c.id} conn={c} freshness={freshness.get(c.id)} localNow={tick} />
        ))}
      {!blocked && (
        <>
          <fieldset
            className="counts"
            aria-label="Whole fleet by status (click to filter)"
            aria-busy={summary.loading !== null || summary.pending}
          >
            <span className="total" data-testid="fleet-total">
              {totalText(summary, filtered, filterPending)}
            </span>
            <CountChips
              counts={summary.counts}
              loading={summary.loading !== null}
              selected={filter.statuses}
              onToggle={toggleStatus}
            />
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
            <ColumnsMenu showConnection={showConnection} />
            <FleetActions
              segments={segments}
              pending={filterPending}
              connections={connections}
              frozen={frozen}
              filter={filter}
              sort={sort}
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
            {summary.pending && layout.total === 0 ? (
              <div className="empty">Loading the fleet…</div>
            ) : (
              <FleetTable
                segments={segments}
                layout={layout}
                connections={connections}
                showConnection={showConnection}
                clocks={clocks}
                frozen={frozen}
                pending={filterPending}
                question={question}
                emptyText={emptyText}
                onRange={fw.setRange}
                sort={sort}
                onSort={onSort}
                activeIndex={activeIndex}
                onActiveIndex={setActiveIndex}
                onOpen={onOpen}
                selectedKey={selectedKey}
                gridRef={gridRef}
              />
            )}
            {selection !== null &&
              (selectedConn === undefined ? (
                known && <UnknownConnection id={selection.connectionId} />
              ) : (
                <LeaseDetail
                  key={selectedKey}
                  connection={selectedConn}
                  workId={selection.workId}
                  fromTable={tableLease(segments, selection)}
                  localNow={tick}
                  freshness={freshness.get(selection.connectionId)}
                  onClose={() => onSelect(null)}
                  onReturnFocus={focusRow}
                />
              ))}
          </div>
        </>
      )}
    </div>
  );
}
