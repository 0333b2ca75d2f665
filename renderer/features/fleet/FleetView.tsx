import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import type { ConnectionInfo, LeaseStatus } from '../../../src/console/api.ts';
import { LEASE_STATUSES } from '../../../src/console/api.ts';
import { type Freshness, useFreshness } from '../../app/freshness.ts';
import { type FleetEntry, toSources, useConnectionMap } from '../../app/hooks.ts';
import { EnvBadge, ErrorNotice } from '../../app/ui.tsx';
import { useNow } from '../../lib/clock.ts';
import { formatAgo, formatClockSeconds } from '../../lib/format.ts';
import { runSliced } from '../../lib/slices.ts';
import { FleetActions } from '../bulk/FleetActions.tsx';
import { DetailPane } from '../detail/DetailPane.tsx';
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

const EMPTY_VIEW: FleetViewModel = {
  connIds: [],
  workIds: [],
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

/** Least time between two recomputations that nothing urgent asked for, ms. */
const REFRESH_MIN_MS = 500;

interface ViewInputs {
  sources: readonly FleetSource[];
  filter: FleetFilter;
  sort: Sort;
  localNow: number;
}

/**
 * Keeps the derived view (filtered, sorted ids and counts) current without
 * ever holding the main thread: each recomputation is a sliced job
 * ({@link viewJob}); the last finished one is shown meanwhile.
 *
 * - `restart` (filter, sort, scope or a new snapshot): drop the running job, start at once.
 * - `refresh` (the clock ticked, rows came or went): start one if none runs and the last
 *   started at least {@link REFRESH_MIN_MS} ago; if one runs, run again after it.
 */
class ViewRunner {
  private cancel: (() => void) | null = null;
  private dirty = false;
  private lastStart = Number.NEGATIVE_INFINITY;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private last: { key: string; view: FleetViewModel } | null = null;

  constructor(
    private readonly inputs: () => ViewInputs,
    private readonly publish: (view: FleetViewModel) => void,
  ) {}

  restart(): void {
    this.stop();
    this.start();
  }

  refresh(): void {
    if (this.cancel !== null) {
      this.dirty = true;
      return;
    }
    if (this.timer !== null) return;
    const wait = this.lastStart + REFRESH_MIN_MS - performance.now();
    if (wait <= 0) {
      this.start();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      this.start();
    }, wait);
  }

  stop(): void {
    this.cancel?.();
    this.cancel = null;
    this.dirty = false;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private start(): void {
    this.dirty = false;
    this.lastStart = performance.now();
    const { sources, filter, sort, localNow } = this.inputs();
    // The last view's order still holds when only the clock moved: then just count.
    const key = `${sources.map((s) => `${s.connectionId}#${identity(s.data.rows)}#${s.data.membershipRev}`).join('|')}@${identity(filter)}@${identity(sort)}`;
    const reuse =
      this.last !== null && this.last.key === key && orderIsStatic(filter, sort) ? this.last.view : null;
    this.cancel = runSliced(viewJob(sources, filter, sort, localNow, reuse), (view) => {
      this.cancel = null;
      this.last = { key, view };
      this.publish(view);
      if (this.dirty) this.refresh();
    });
  }
}

export interface FleetViewProps {
  fleets: FleetEntry[];
  /** False while another view is shown: the table keeps its state but stops recomputing. */
  visible: boolean;
  scope: string;
  onScope: (scope: string) => void;
  selection: Selection | null;
  onSelect: (s: Selection | null) => void;
  searchRef: React.RefObject<HTMLInputElement | null>;
}

export function FleetView({
  fleets,
  visible,
  scope,
  onScope,
  selection,
  onSelect,
  searchRef,
}: FleetViewProps) {
  const connections = useConnectionMap();
  const tick = useNow();
  const [filter, setFilter] = useState<FleetFilter>(EMPTY_FILTER);
  const [sort, setSort] = useState<Sort>({ key: 'workId', dir: 'asc' });
  const [activeIndex, setActiveIndex] = useState(-1);
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
  // Rows that came or went: shown at the next refresh (well under a second).
  const membershipKey = sources.map((s) => s.data.membershipRev).join('|');
  const inputs = useRef<ViewInputs>({ sources, filter, sort, localNow });
  inputs.current = { sources, filter, sort, localNow };
  const [computed, setComputed] = useState<{ view: FleetViewModel; key: string } | null>(null);
  const runnerKey = useRef(sourcesKey);
  const [runner] = useState(
    () =>
      new ViewRunner(
        () => inputs.current,
        (view) => setComputed({ view, key: runnerKey.current }),
      ),
  );
  useEffect(() => () => runner.stop(), [runner]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the runner reads the latest inputs through a ref; these are what make a new view urgent
  useEffect(() => {
    runnerKey.current = sourcesKey;
    runner.restart();
  }, [runner, sourcesKey, filter, sort]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: as above; statuses move with time, membership with events
  useEffect(() => {
    if (visible) runner.refresh();
  }, [runner, visible, membershipKey, localNow]);
  const view = computed?.view ?? EMPTY_VIEW;
  const computing = computed === null || computed.key !== sourcesKey;
  const rev = sources.reduce((n, s) => n + s.data.rev, 0);
  const fleetMap = useMemo(() => {
    const m = new Map<string, FleetData>();
    for (const f of fleets) if (f.data !== undefined) m.set(f.connection.id, f.data);
    return m;
  }, [fleets]);

  const onSort = useCallback((key: SortKey) => {
    setSort((s) => (s.key === key ? { key, dir: s.dir === 'asc' ? 'desc' : 'asc' } : { key, dir: 'asc' }));
  }, []);
  const onOpen = useCallback(
    (index: number) => {
      const connectionId = view.connIds[index];
      const workId = view.workIds[index];
      if (connectionId !== undefined && workId !== undefined) onSelect({ connectionId, workId });
    },
    [view, onSelect],
  );
  const toggleStatus = (s: LeaseStatus) => {
    setFilter((f) => {
      const statuses = new Set(f.statuses);
      if (statuses.has(s)) statuses.delete(s);
      else statuses.add(s);
      return { ...f, statuses };
    });
    setActiveIndex(-1);
  };
  const setText = (field: 'search' | 'holder' | 'workIdPrefix', value: string) => {
    setFilter((f) => ({ ...f, [field]: value }));
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
            <FleetActions
              view={view}
              fleets={fleetMap}
              connections={connections}
              frozen={frozen}
              filter={filter}
              scopeIds={inScope.map((f) => f.connection.id)}
            />
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
                localNow={tick}
                frozen={frozen}
                sort={sort}
                onSort={onSort}
                activeIndex={activeIndex}
                onActiveIndex={setActiveIndex}
                onOpen={onOpen}
                selectedKey={selectedKey}
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
                onClose={() => onSelect(null)}
              />
            )}
          </div>
        </>
      )}
    </div>
  );
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
