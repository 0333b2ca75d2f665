/**
 * The virtualized lease table over the server's windows (./window.ts): as tall as every row the
 * filters match, with only the rows on screen in the DOM and only those plus a margin in the
 * page. A position whose window has not arrived yet shows a placeholder row; scrolling (wheel,
 * scroll bar, keys) reports the rows on screen, and the windows follow. Each row's status is the
 * server's (judged with the counts, so rows and chips agree); countdowns run on the connection's
 * clock (app/freshness.ts), stopped while it is stale.
 */
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
import type { ConnectionInfo, LeaseRow, LeaseStatus } from '../../../src/console/common/index.ts';
import { visible } from '../../../src/console/common/index.ts';
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
import { rowWindow, scrollTopFor } from './fixed-rows.ts';
import type { Sort, SortKey } from './model.ts';
import { type Layout, type Segment, slotAt } from './window.ts';

const ROW_HEIGHT = 32;

export interface FleetTableProps {
  segments: readonly Segment[];
  layout: Layout;
  connections: Map<string, ConnectionInfo>;
  showConnection: boolean;
  /** Per connection, the backend time countdowns count from (app/freshness.ts `rowClock`). */
  clocks: ReadonlyMap<string, number>;
  /** Stale connections: their rows are greyed, their clock stopped. */
  frozen: ReadonlySet<string>;
  /** The rows are those of the previous filters or sort; the new answer is on its way. */
  pending: boolean;
  /** Changes with the filters and sort: the table goes back to its top. */
  question: string;
  /** What an empty table says. */
  emptyText: string;
  /** Table rows [from, to) are on screen, with the overscan: their windows are fetched. */
  onRange: (from: number, to: number) => void;
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
  const { segments, layout: table, activeIndex, onActiveIndex, onOpen, onRange } = props;
  const scrollRef = useRef<HTMLDivElement>(null);
  const count = table.total;
  // Where the table is scrolled and how tall its viewport is: all that decides which rows are drawn
  // (./fixed-rows.ts). Scroll events are folded into one update per frame.
  const [scroll, setScroll] = useState({ top: 0, height: 640, scrolling: false });
  useEffect(() => {
    const el = scrollRef.current;
    if (el === null) return;
    let frame = 0;
    let idle: ReturnType<typeof setTimeout> | null = null;
    const read = (scrolling: boolean) =>
      setScroll((s) =>
        s.top === el.scrollTop && s.height === el.clientHeight && s.scrolling === scrolling
          ? s
          : { top: el.scrollTop, height: el.clientHeight, scrolling },
      );
    const onScroll = () => {
      if (frame === 0)
        frame = requestAnimationFrame(() => {
          frame = 0;
          read(true);
        });
      if (idle !== null) clearTimeout(idle);
      idle = setTimeout(() => read(false), 150);
    };
    const resize = new ResizeObserver(() => read(false));
    resize.observe(el);
    el.addEventListener('scroll', onScroll, { passive: true });
    read(false);
    return () => {
      el.removeEventListener('scroll', onScroll);
      resize.disconnect();
      cancelAnimationFrame(frame);
      if (idle !== null) clearTimeout(idle);
    };
  }, []);
  const win = rowWindow(
    count,
    ROW_HEIGHT,
    scroll.top,
    scroll.height,
    scroll.scrolling ? OVERSCAN_SCROLLING : OVERSCAN,
  );

  useEffect(() => {
    const el = scrollRef.current;
    if (el === null || activeIndex < 0 || activeIndex >= count) return;
    const to = scrollTopFor(activeIndex, count, ROW_HEIGHT, el.scrollTop, el.clientHeight - ROW_HEIGHT);
    if (to !== null) el.scrollTop = to;
  }, [activeIndex, count]);
  // New filters or sort: a new list, read from its top.
  // biome-ignore lint/correctness/useExhaustiveDependencies: the question is what resets the scroll
  useEffect(() => {
    if (scrollRef.current !== null) scrollRef.current.scrollTop = 0;
  }, [props.question]);

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

  const items = Array.from({ length: win.last - win.first }, (_, k) => ({ index: win.first + k }));
  const rangeFrom = win.first;
  const rangeTo = win.last;
  useEffect(() => {
    onRange(rangeFrom, Math.max(rangeTo, rangeFrom + 1));
  }, [onRange, rangeFrom, rangeTo]);
  // Rows sit in normal flow below a padding as tall as the rows scrolled past, and are keyed by their
  // place in the window (0 = top), not by index or id: scrolling patches text in the same elements
  // instead of creating, moving and styling new ones, and the DOM order stays the visual order.
  const first = win.first;
  const padTop = win.padTop;
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
    <div ref={scrollRef} className="fleet-table" style={layout} data-pending={props.pending}>
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
        <tbody style={count === 0 ? undefined : { height: win.height, paddingTop: padTop }}>
          {count === 0 ? (
            <tr className="empty-row">
              <td className="empty">{props.emptyText}</td>
            </tr>
          ) : (
            items.map((item) => {
              const slot = slotAt(segments, table, item.index);
              if (slot === null) return null;
              const conn = props.connections.get(slot.connectionId);
              if (slot.row === null || conn === undefined) {
                return <PlaceholderRow key={item.index - first} index={item.index} span={columns.length} />;
              }
              const { row } = slot;
              return (
                <Row
                  key={item.index - first}
                  index={item.index}
                  row={row}
                  status={slot.status}
                  conn={conn}
                  serverNow={props.clocks.get(slot.connectionId) ?? 0}
                  stale={props.frozen.has(slot.connectionId)}
                  pending={props.pending}
                  heartbeatsAsOf={slot.view.heartbeatsAsOf}
                  active={item.index === activeIndex}
                  selected={props.selectedKey === rowKey(slot.connectionId, row.workId)}
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

/** A position whose window has not arrived yet: a row of the right height that says so. */
function PlaceholderRow({ index, span }: { index: number; span: number }) {
  return (
    <tr id={`lease-row-${index}`} aria-rowindex={index + 2} aria-busy="true" className="row-loading">
      <td className="c-work muted" colSpan={span}>
        loading…
      </td>
    </tr>
  );
}

interface RowProps {
  index: number;
  /** Replaced (new object) by every change to the lease, so the memo below sees changes. */
  row: LeaseRow;
  /** As the server judged it, with the counts (at the view's statusAt). */
  status: LeaseStatus;
  conn: ConnectionInfo;
  /** The backend time countdowns count from: the running clock, or the last confirmed time while stale. */
  serverNow: number;
  /** The connection is stale: the row is greyed. */
  stale: boolean;
  /** The row belongs to the previous filters (the new answer is on its way): dimmed. */
  pending: boolean;
  /** When the connection's heartbeats were last checked: the expiry cell says so (app/Time.tsx `checkedAt`). */
  heartbeatsAsOf: number | null;
  active: boolean;
  selected: boolean;
  columns: Column[];
  onClick: (index: number) => void;
}

const Row = memo(function Row(p: RowProps) {
  const { row, conn, status, serverNow } = p;
  return (
    <tr
      id={`lease-row-${p.index}`}
      aria-rowindex={p.index + 2}
      aria-selected={p.selected}
      className={`row-${status}${p.stale ? ' stale' : ''}${p.pending ? ' pending' : ''}${p.active ? ' active' : ''}${p.selected ? ' selected' : ''}`}
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
  status: LeaseStatus;
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
