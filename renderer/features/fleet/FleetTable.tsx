/**
 * The virtualized lease table. Only the rows in view are in the DOM; each
 * visible row re-derives its status and countdowns at the instant of the view
 * it belongs to, which is recomputed for every tick of the shared ticker, so
 * a 100 000-row fleet costs ~40 row renders a second, not 100 000.
 */
import { useVirtualizer } from '@tanstack/react-virtual';
import {
  type CSSProperties,
  type KeyboardEvent,
  memo,
  useCallback,
  useEffect,
  useMemo,
  useRef,
  useState,
} from 'react';
import type { ConnectionInfo, LeaseRow } from '../../../src/console/common/index.ts';
import { leaseStatus, visible } from '../../../src/console/common/index.ts';
import { Time } from '../../app/Time.tsx';
import { EnvBadge, StatusBadge } from '../../app/ui.tsx';
import { formatBytes } from '../../lib/format.ts';
import { describeRequest } from '../request-release/deadline.ts';
import {
  COLUMNS,
  type Column,
  MAX_WIDTH,
  MIN_WIDTH,
  resizeColumn,
  useColumnPrefs,
  widthOf,
} from './columns.ts';
import type { FleetData, FleetView, Sort, SortKey, SourceInstant } from './model.ts';

const ROW_HEIGHT = 32;

export interface FleetTableProps {
  view: FleetView;
  fleets: Map<string, FleetData>;
  connections: Map<string, ConnectionInfo>;
  showConnection: boolean;
  /** Stale connections: the backend time their rows are shown at (greyed, clock stopped). */
  frozen: Map<string, number>;
  sort: Sort;
  onSort: (key: SortKey) => void;
  activeIndex: number;
  onActiveIndex: (index: number) => void;
  onOpen: (index: number) => void;
  selectedKey: string | null;
  /** The grid element: where focus returns after a dialog. */
  gridRef?: React.RefObject<HTMLTableElement | null>;
}

/**
 * Rows rendered beyond the viewport on each side. At rest, generous: rows just off screen
 * are in the DOM (findable, the e2e tests rely on it) and a wheel flick shows no blank band.
 * While scrolling, every rendered row is re-rendered each frame (the window moves under
 * them), so fewer: the frame is what must stay short.
 */
const OVERSCAN = 12;
const OVERSCAN_SCROLLING = 3;

export function FleetTable(props: FleetTableProps) {
  const { view, activeIndex, onActiveIndex, onOpen } = props;
  const scrollRef = useRef<HTMLDivElement>(null);
  const count = view.workIds.length;
  // The instance outlives renders, so its scrolling state is current here (it re-renders us when it flips).
  const instance = useRef<{ isScrolling: boolean } | null>(null);
  const virtualizer = useVirtualizer({
    count,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: instance.current?.isScrolling === true ? OVERSCAN_SCROLLING : OVERSCAN,
  });
  instance.current = virtualizer;

  useEffect(() => {
    if (activeIndex >= 0 && activeIndex < count) virtualizer.scrollToIndex(activeIndex, { align: 'auto' });
  }, [activeIndex, count, virtualizer]);

  // One stable click handler for every row, so a row re-renders only when what it shows changes.
  const handlers = useRef({ onActiveIndex, onOpen });
  handlers.current = { onActiveIndex, onOpen };
  const onRowClick = useCallback((index: number) => {
    handlers.current.onActiveIndex(index);
    handlers.current.onOpen(index);
  }, []);

  const prefs = useColumnPrefs();
  const columns = useMemo(
    () =>
      COLUMNS.filter(
        (c) => (c.key !== 'connection' || props.showConnection) && !prefs.hidden.includes(c.key),
      ),
    [props.showConnection, prefs.hidden],
  );
  // Row layout: one grid template for the header and every row; Work ID and Status stick left.
  const template = columns
    .map((c) => (c.grow === true ? `minmax(${widthOf(c, prefs)}px, 1fr)` : `${widthOf(c, prefs)}px`))
    .join(' ');
  const workW = widthOf(COLUMNS[0] as Column, prefs);
  const statusW = widthOf(COLUMNS[1] as Column, prefs);
  const minWidth = columns.reduce((n, c) => n + widthOf(c, prefs), 16);
  const layout = {
    '--cols': template,
    '--w-work': `${workW}px`,
    '--w-sticky': `${workW + statusW}px`,
  } as CSSProperties;

  const onKeyDown = (e: KeyboardEvent<HTMLTableElement>) => {
    // Keys on a header button are the header's (it sorts with Enter); the grid's are on the grid itself.
    if (count === 0 || e.target !== e.currentTarget) return;
    const page = Math.max(1, Math.floor((scrollRef.current?.clientHeight ?? 320) / ROW_HEIGHT) - 1);
    const move = (to: number) => {
      e.preventDefault();
      onActiveIndex(Math.max(0, Math.min(count - 1, to)));
    };
    switch (e.key) {
      case 'ArrowDown':
        return move(activeIndex + 1);
      case 'ArrowUp':
        return move(activeIndex - 1);
      case 'PageDown':
        return move(activeIndex + page);
      case 'PageUp':
        return move(activeIndex - page);
      case 'Home':
        return move(0);
      case 'End':
        return move(count - 1);
      case 'Enter':
        if (activeIndex >= 0) {
          e.preventDefault();
          onOpen(activeIndex);
        }
        return;
    }
  };

  const items = virtualizer.getVirtualItems();
  // Rows sit in normal flow below a padding as tall as the rows scrolled past, and are keyed by their
  // place in the window (0 = top), not by index or id: scrolling patches text in the same elements
  // instead of creating, moving and styling new ones, and the DOM order stays the visual order.
  const first = items[0]?.index ?? 0;
  const padTop = items[0]?.start ?? 0;
  const activeId = activeIndex >= 0 && activeIndex < count ? `lease-row-${activeIndex}` : undefined;
  // The header is one tab stop (roving tabindex): the sorted column's button, arrows move along.
  const [headFocus, setHeadFocus] = useState<SortKey | null>(null);
  const tabKey = columns.some((c) => c.key === headFocus) ? headFocus : props.sort.key;
  const headRow = useRef<HTMLTableRowElement>(null);
  const onHeadKey = (e: KeyboardEvent<HTMLTableRowElement>) => {
    const at = columns.findIndex((c) => c.key === tabKey);
    let to = -1;
    if (e.key === 'ArrowRight') to = Math.min(columns.length - 1, at + 1);
    else if (e.key === 'ArrowLeft') to = Math.max(0, at - 1);
    else if (e.key === 'Home') to = 0;
    else if (e.key === 'End') to = columns.length - 1;
    else if (e.key === 'ArrowDown') {
      e.preventDefault();
      props.gridRef?.current?.focus();
      return;
    } else return;
    e.preventDefault();
    const key = columns[to]?.key;
    if (key === undefined) return;
    setHeadFocus(key);
    headRow.current?.querySelector<HTMLButtonElement>(`button[data-key="${key}"]`)?.focus();
  };
  return (
    <div ref={scrollRef} className="fleet-table" style={layout}>
      <table
        style={{ minWidth }}
        ref={props.gridRef}
        // biome-ignore lint/a11y/noNoninteractiveElementToInteractiveRole: an interactive data grid is a <table role=grid> in the ARIA authoring practices; arrows and Enter work through aria-activedescendant
        role="grid"
        aria-label="Leases"
        aria-rowcount={count + 1}
        tabIndex={0}
        aria-activedescendant={activeId}
        onKeyDown={onKeyDown}
      >
        <thead>
          <tr aria-rowindex={1} ref={headRow} onKeyDown={onHeadKey}>
            {columns.map((c) => {
              const sorted = props.sort.key === c.key;
              return (
                <th
                  key={c.key}
                  scope="col"
                  className={c.className}
                  data-col={c.key}
                  aria-sort={sorted ? (props.sort.dir === 'asc' ? 'ascending' : 'descending') : 'none'}
                >
                  <button
                    type="button"
                    className="sort"
                    data-key={c.key}
                    tabIndex={c.key === tabKey ? 0 : -1}
                    onFocus={() => setHeadFocus(c.key)}
                    onClick={() => props.onSort(c.key)}
                  >
                    {c.label}
                    <span aria-hidden="true" className="sort-mark">
                      {sorted ? (props.sort.dir === 'asc' ? '▲' : '▼') : ''}
                    </span>
                  </button>
                  <ResizeHandle column={c} width={widthOf(c, prefs)} />
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody style={count === 0 ? undefined : { height: virtualizer.getTotalSize(), paddingTop: padTop }}>
          {count === 0 ? (
            <tr className="empty-row">
              <td className="empty">
                {view.total === 0 ? 'No leases in this fleet yet.' : 'No lease matches these filters.'}
              </td>
            </tr>
          ) : (
            items.map((item) => {
              const connId = view.connIds[item.index] as string;
              const workId = view.workIds[item.index] as string;
              const row = props.fleets.get(connId)?.rows.get(workId);
              const conn = props.connections.get(connId);
              // The view judged every connection it lists, so `at` is there for each of its rows.
              const at = view.instants.get(connId);
              if (row === undefined || conn === undefined || at === undefined) return null;
              return (
                <Row
                  key={item.index - first}
                  index={item.index}
                  row={row}
                  conn={conn}
                  at={at}
                  stale={props.frozen.has(connId)}
                  heartbeatsAsOf={props.fleets.get(connId)?.heartbeatsAsOf ?? null}
                  active={item.index === activeIndex}
                  selected={props.selectedKey === rowKey(connId, workId)}
                  columns={columns}
                  onClick={onRowClick}
                />
              );
            })
          )}
        </tbody>
      </table>
    </div>
  );
}

interface RowProps {
  index: number;
  /** Replaced (new object) by every change to the lease, so the memo below sees changes. */
  row: LeaseRow;
  conn: ConnectionInfo;
  /**
   * The instant the shown view judged this row's connection at (model.ts, `FleetView.instants`):
   * status and countdowns are drawn at it, so the row agrees with the count chips and the status
   * filter. A new view (every tick) brings a new one: that is what redraws the row as time passes.
   */
  at: SourceInstant;
  /** The connection is stale: the row is greyed (`at` is then its last confirmed backend time). */
  stale: boolean;
  /** When the connection's heartbeats were last checked: the expiry cell says so (app/Time.tsx `checkedAt`). */
  heartbeatsAsOf: number | null;
  active: boolean;
  selected: boolean;
  columns: Column[];
  onClick: (index: number) => void;
}

const Row = memo(function Row(p: RowProps) {
  const { row, conn } = p;
  const serverNow = p.at.clock;
  const status = leaseStatus(row, p.at.judged, conn.thresholds);
  return (
    <tr
      id={`lease-row-${p.index}`}
      aria-rowindex={p.index + 2}
      aria-selected={p.selected}
      className={`row-${status}${p.stale ? ' stale' : ''}${p.active ? ' active' : ''}${p.selected ? ' selected' : ''}`}
      onClick={() => p.onClick(p.index)}
    >
      {p.columns.map((c) => (
        <Cell
          key={c.key}
          column={c}
          row={row}
          conn={conn}
          status={status}
          serverNow={serverNow}
          checkedAt={p.heartbeatsAsOf}
        />
      ))}
    </tr>
  );
});

function Cell({
  column,
  row,
  conn,
  status,
  serverNow,
  checkedAt,
}: {
  column: Column;
  row: LeaseRow;
  conn: ConnectionInfo;
  status: ReturnType<typeof leaseStatus>;
  serverNow: number;
  checkedAt: number | null;
}) {
  const cls = column.className;
  switch (column.key) {
    case 'connection':
      return (
        <td className={cls}>
          {conn.name} <EnvBadge env={conn.environment} />
        </td>
      );
    case 'workId':
      return (
        <td className={cls} title={visible(row.workId)}>
          {visible(row.workId)}
        </td>
      );
    case 'holderId':
      return (
        <td className={cls} title={visible(row.holderId)}>
          {visible(row.holderId)}
        </td>
      );
    case 'fencingToken':
      return (
        <td className={cls} title={row.fencingToken}>
          {row.fencingToken}
        </td>
      );
    case 'status':
      return (
        <td className={cls}>
          <StatusBadge status={status} />
          {row.releaseRequest != null && (
            <span
              className="rr-badge"
              role="img"
              aria-label={`release requested by ${visible(row.releaseRequest.operator)}`}
              title={describeRequest(row.releaseRequest, serverNow)}
            >
              ⏏
            </span>
          )}
        </td>
      );
    case 'expiresAt':
      return (
        <td className={cls}>
          {row.ended !== null ? (
            '—'
          ) : (
            <Time at={row.expiresAt} serverNow={serverNow} checkedAt={checkedAt} expiry compact />
          )}
        </td>
      );
    case 'renewedAt':
      return (
        <td className={cls}>
          {row.renewedAt === null ? '—' : <Time at={row.renewedAt} serverNow={serverNow} compact />}
        </td>
      );
    case 'checkpointedAt':
      return (
        <td className={cls}>
          {row.checkpointedAt === null ? '—' : <Time at={row.checkpointedAt} serverNow={serverNow} compact />}
        </td>
      );
    case 'checkpointSize':
      return <td className={cls}>{formatBytes(row.checkpointSize)}</td>;
  }
}

/**
 * The drag handle on a header's right edge (pointer only; the Columns menu resets widths). The
 * width follows the pointer and is remembered in this browser.
 */
function ResizeHandle({ column, width }: { column: Column; width: number }) {
  const onPointerDown = (e: React.PointerEvent<HTMLSpanElement>) => {
    e.preventDefault();
    e.stopPropagation();
    const handle = e.currentTarget;
    handle.setPointerCapture(e.pointerId);
    const startX = e.clientX;
    const move = (ev: PointerEvent) => {
      resizeColumn(column.key, Math.min(MAX_WIDTH, Math.max(MIN_WIDTH, width + ev.clientX - startX)));
    };
    const up = () => {
      handle.removeEventListener('pointermove', move);
      handle.removeEventListener('pointerup', up);
      handle.removeEventListener('pointercancel', up);
    };
    handle.addEventListener('pointermove', move);
    handle.addEventListener('pointerup', up);
    handle.addEventListener('pointercancel', up);
  };
  return (
    <span
      className="col-resize"
      aria-hidden="true"
      title={`Drag to resize ${column.label}`}
      onPointerDown={onPointerDown}
      onClick={(e) => e.stopPropagation()}
    />
  );
}

export function rowKey(connectionId: string, workId: string): string {
  return `${connectionId}\u0000${workId}`;
}
