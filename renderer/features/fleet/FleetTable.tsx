/**
 * The virtualized lease table. Only the rows in view are in the DOM; each
 * visible row re-derives its status and countdowns from the shared ticker, so
 * a 100 000-row fleet costs ~40 row renders a second, not 100 000.
 */
import { useVirtualizer } from '@tanstack/react-virtual';
import { type KeyboardEvent, memo, useCallback, useEffect, useRef } from 'react';
import type { ConnectionInfo, LeaseRow } from '../../../src/console/api.ts';
import { leaseStatus } from '../../../src/console/status.ts';
import { visible } from '../../../src/console/text.ts';
import { EnvBadge, StatusBadge } from '../../app/ui.tsx';
import { formatAgo, formatBytes, formatExpiresIn } from '../../lib/format.ts';
import type { FleetData, FleetView, Sort, SortKey } from './model.ts';

const ROW_HEIGHT = 32;

interface Column {
  key: SortKey;
  label: string;
  className: string;
}

const COLUMNS: Column[] = [
  { key: 'connection', label: 'Connection', className: 'c-conn' },
  { key: 'workId', label: 'Work ID', className: 'c-work' },
  { key: 'holderId', label: 'Holder', className: 'c-holder' },
  { key: 'fencingToken', label: 'Token', className: 'c-token' },
  { key: 'status', label: 'Status', className: 'c-status' },
  { key: 'expiresAt', label: 'Expires in', className: 'c-expires' },
  { key: 'renewedAt', label: 'Last heartbeat', className: 'c-heartbeat' },
  { key: 'checkpointedAt', label: 'Last checkpoint', className: 'c-checkpoint' },
  { key: 'checkpointSize', label: 'Checkpoint size', className: 'c-size' },
];
const NO_CONN_COLUMNS = COLUMNS.slice(1);

export interface FleetTableProps {
  view: FleetView;
  fleets: Map<string, FleetData>;
  connections: Map<string, ConnectionInfo>;
  showConnection: boolean;
  /** The shared once-a-second tick. Rows re-render when it moves or their lease object is replaced. */
  localNow: number;
  /** Stale connections: the backend time their rows are shown at (greyed, clock stopped). */
  frozen: Map<string, number>;
  sort: Sort;
  onSort: (key: SortKey) => void;
  activeIndex: number;
  onActiveIndex: (index: number) => void;
  onOpen: (index: number) => void;
  selectedKey: string | null;
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

  const columns = props.showConnection ? COLUMNS : NO_CONN_COLUMNS;

  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    if (count === 0) return;
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
  return (
    <div ref={scrollRef} className={`fleet-table${props.showConnection ? ' with-conn' : ''}`}>
      <table
        // biome-ignore lint/a11y/noNoninteractiveElementToInteractiveRole: an interactive data grid is a <table role=grid> in the ARIA authoring practices; arrows and Enter work through aria-activedescendant
        role="grid"
        aria-label="Leases"
        aria-rowcount={count + 1}
        tabIndex={0}
        aria-activedescendant={activeId}
        onKeyDown={onKeyDown}
      >
        <thead>
          <tr aria-rowindex={1}>
            {columns.map((c) => {
              const sorted = props.sort.key === c.key;
              return (
                <th
                  key={c.key}
                  scope="col"
                  className={c.className}
                  aria-sort={sorted ? (props.sort.dir === 'asc' ? 'ascending' : 'descending') : 'none'}
                >
                  <button type="button" className="sort" onClick={() => props.onSort(c.key)}>
                    {c.label}
                    <span aria-hidden="true" className="sort-mark">
                      {sorted ? (props.sort.dir === 'asc' ? '▲' : '▼') : ''}
                    </span>
                  </button>
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
              if (row === undefined || conn === undefined) return null;
              return (
                <Row
                  key={item.index - first}
                  index={item.index}
                  row={row}
                  conn={conn}
                  localNow={props.localNow}
                  frozenAt={props.frozen.get(connId) ?? null}
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
  /** The shared once-a-second tick: countdowns and time-derived status. */
  localNow: number;
  /** Set while the connection is stale: the last confirmed backend time, used instead of the clock. */
  frozenAt: number | null;
  active: boolean;
  selected: boolean;
  columns: Column[];
  onClick: (index: number) => void;
}

const Row = memo(function Row(p: RowProps) {
  const { row, conn } = p;
  const serverNow = p.frozenAt ?? p.localNow + conn.clockOffsetMs;
  const status = leaseStatus(row, serverNow, conn.thresholds);
  return (
    <tr
      id={`lease-row-${p.index}`}
      aria-rowindex={p.index + 2}
      aria-selected={p.selected}
      className={`row-${status}${p.frozenAt !== null ? ' stale' : ''}${p.active ? ' active' : ''}${p.selected ? ' selected' : ''}`}
      onClick={() => p.onClick(p.index)}
    >
      {p.columns.map((c) => (
        <Cell key={c.key} column={c} row={row} conn={conn} status={status} serverNow={serverNow} />
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
}: {
  column: Column;
  row: LeaseRow;
  conn: ConnectionInfo;
  status: ReturnType<typeof leaseStatus>;
  serverNow: number;
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
        </td>
      );
    case 'expiresAt':
      return <td className={cls}>{row.ended !== null ? '—' : formatExpiresIn(row.expiresAt, serverNow)}</td>;
    case 'renewedAt':
      return <td className={cls}>{row.renewedAt === null ? '—' : formatAgo(serverNow - row.renewedAt)}</td>;
    case 'checkpointedAt':
      return (
        <td className={cls}>
          {row.checkpointedAt === null ? '—' : formatAgo(serverNow - row.checkpointedAt)}
        </td>
      );
    case 'checkpointSize':
      return <td className={cls}>{formatBytes(row.checkpointSize)}</td>;
  }
}

export function rowKey(connectionId: string, workId: string): string {
  return `${connectionId}\u0000${workId}`;
}
