import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ConsoleClient } from '../../renderer/api/client.ts';
import { WatchHub } from '../../renderer/api/watches.ts';
import { FleetWindow, RANGE_EVERY_MS } from '../../renderer/features/fleet/fleet-window.ts';
import {
  EDGE,
  FIRST_ROWS,
  layoutOf,
  locate,
  MARGIN,
  type Segment,
  slotAt,
  summarize,
  windowFor,
} from '../../renderer/features/fleet/window.ts';
import type { ConsoleEvent, LeaseStatus, ViewQuery, ViewResult } from '../../src/console/common/index.ts';
import { leaseRow } from '../support/lease-row.ts';

const byStatus = (live: number, extra: Partial<Record<LeaseStatus, number>> = {}) => ({
  live,
  expiring: 0,
  expired: 0,
  released: 0,
  stuck: 0,
  'force-released': 0,
  ...extra,
});

/** A window of a fleet of `total` rows named `<conn>/<position>`, at `offset`. */
function view(
  connectionId: string,
  total: number,
  offset: number,
  limit: number,
  more: Partial<ViewResult> = {},
): ViewResult {
  const n = Math.max(0, Math.min(limit, total - offset));
  const rows = Array.from({ length: n }, (_, i) =>
    leaseRow(i, { workId: `${connectionId}/${String(offset + i).padStart(7, '0')}` }),
  );
  return {
    connectionId,
    rows,
    statuses: rows.map(() => 'live'),
    offset,
    nextCursor: null,
    prevCursor: null,
    total,
    counts: { total, byStatus: byStatus(total) },
    loading: null,
    asOf: 1,
    statusAt: 1,
    heartbeatsAsOf: 1,
    generation: 1,
    seq: 1,
    ...more,
  };
}

const seg = (connectionId: string, v: ViewResult | null): Segment => ({ connectionId, view: v, error: null });

describe('stacked windows (window.ts)', () => {
  it('locates table positions across connections, empty ones skipped', () => {
    const layout = layoutOf([
      seg('a', view('a', 3, 0, 3)),
      seg('e', view('e', 0, 0, 0)),
      seg('b', view('b', 2, 0, 2)),
    ]);
    expect(layout.total).toBe(5);
    expect([0, 2, 3, 4].map((i) => locate(layout, i))).toEqual([
      { k: 0, local: 0 },
      { k: 0, local: 2 },
      { k: 2, local: 0 },
      { k: 2, local: 1 },
    ]);
    expect(locate(layout, 5)).toBeNull();
    expect(locate(layout, -1)).toBeNull();
  });

  it('a position outside the fetched window is a placeholder, inside it the row with the server status', () => {
    const segments = [seg('a', view('a', 1000, 500, 10, { statuses: Array(10).fill('stuck') }))];
    const layout = layoutOf(segments);
    expect(slotAt(segments, layout, 499)).toMatchObject({ connectionId: 'a', row: null });
    expect(slotAt(segments, layout, 505)).toMatchObject({ row: { workId: 'a/0000505' }, status: 'stuck' });
    expect(slotAt(segments, layout, 510)).toMatchObject({ row: null });
  });

  it('asks for a window around the screen only when what it has or asked does not cover it', () => {
    expect(windowFor(null, null, null)).toEqual({ offset: 0, limit: FIRST_ROWS });
    const have = view('a', 100_000, 1000, 400);
    expect(windowFor([1100, 1130], have, null)).toBeNull();
    // Near the bottom edge: move.
    expect(windowFor([1400 - EDGE, 1400 - EDGE + 30], have, null)).toEqual({
      offset: 1400 - EDGE - MARGIN,
      limit: 30 + 2 * MARGIN,
    });
    // A jump (scroll bar) far away, already asked: not asked again.
    const asked = { offset: 50_000 - MARGIN, limit: 30 + 2 * MARGIN };
    expect(windowFor([50_000, 50_030], have, asked)).toBeNull();
    // At the very end nothing lies beyond: no edge to keep.
    const end = view('a', 1000, 700, 300);
    expect(windowFor([970, 1000], end, null)).toBeNull();
  });

  it('counts: whole fleet summed, loading as read/estimate (never a final total), missing answers as pending', () => {
    const loaded = summarize([seg('a', view('a', 10, 0, 10)), seg('b', view('b', 5, 0, 5))]);
    expect(loaded).toMatchObject({ shown: 15, fleet: 15, loading: null, pending: false });
    expect(loaded.counts.live).toBe(15);
    const partial = summarize([
      seg('a', view('a', 30_000, 0, 10, { loading: { read: 30_000, estimate: 100_000 } })),
      seg('b', view('b', 5, 0, 5)),
    ]);
    expect(partial.loading).toEqual({ read: 30_005, estimate: 100_005 });
    const unknown = summarize([seg('a', view('a', 3, 0, 3, { loading: { read: 3, estimate: null } }))]);
    expect(unknown.loading).toEqual({ read: 3, estimate: null });
    expect(summarize([seg('a', view('a', 3, 0, 3)), seg('b', null)]).pending).toBe(true);
  });
});

describe('the fleet window (fleet-window.ts) over watches', () => {
  let sent: Array<{ watchId: string; query: ViewQuery } | { unwatch: string }>;
  let push: (event: ConsoleEvent) => void;
  let hub: WatchHub;
  let fw: FleetWindow;
  let changes: number;

  beforeEach(() => {
    vi.useFakeTimers({ now: 0, toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] });
    sent = [];
    const client = {
      subscribe(listener: (event: ConsoleEvent) => void) {
        push = listener;
        return () => {};
      },
      watch: (watchId: string, query: ViewQuery) => sent.push({ watchId, query }),
      unwatch: (watchId: string) => sent.push({ unwatch: watchId }),
    } as unknown as ConsoleClient;
    hub = new WatchHub(client);
    hub.start();
    changes = 0;
    fw = new FleetWindow(hub, () => changes++);
  });
  afterEach(() => {
    fw.close();
    vi.useRealTimers();
  });

  const lastWatch = () => sent.filter((m) => 'watchId' in m).at(-1) as { watchId: string; query: ViewQuery };
  const answer = (m: { watchId: string; query: ViewQuery }, total: number, more: Partial<ViewResult> = {}) =>
    push({
      type: 'view',
      watchId: m.watchId,
      view: view(m.query.connectionId, total, m.query.offset ?? 0, m.query.limit ?? 100, more),
    });

  it('asks each connection for its first rows, then follows the scroll with the same watch', async () => {
    fw.configure(['a'], {}, { column: 'workId', dir: 'asc' });
    const first = lastWatch();
    expect(first.query).toMatchObject({ connectionId: 'a', offset: 0, limit: FIRST_ROWS });
    answer(first, 1_000_000);
    expect(fw.state.segments[0]?.view?.total).toBe(1_000_000);
    fw.setRange(500_000, 500_030);
    await vi.advanceTimersByTimeAsync(RANGE_EVERY_MS);
    const moved = lastWatch();
    expect(moved.watchId).toBe(first.watchId);
    expect(moved.query).toMatchObject({ offset: 500_000 - MARGIN, limit: 30 + 2 * MARGIN });
    // Only the window is held, never the fleet.
    answer(moved, 1_000_000);
    expect(fw.state.segments[0]?.view?.rows.length).toBe(30 + 2 * MARGIN);
  });

  it('a new filter is a new watch: the old one is unwatched and its late answers are dropped', () => {
    fw.configure(['a'], {}, { column: 'workId', dir: 'asc' });
    const old = lastWatch();
    answer(old, 100);
    fw.configure(['a'], { search: 'x' }, { column: 'workId', dir: 'asc' });
    const next = lastWatch();
    expect(next.watchId).not.toBe(old.watchId);
    expect(sent).toContainEqual({ unwatch: old.watchId });
    // Until its answer, the old rows stay, marked pending.
    expect(fw.state.pending).toBe(true);
    answer(old, 100);
    expect(fw.state.segments[0]?.view?.total).toBe(100);
    expect(fw.state.pending).toBe(true);
    answer(next, 3);
    expect(fw.state.pending).toBe(false);
    expect(fw.state.segments[0]?.view?.total).toBe(3);
  });

  it('scroll positions every frame ask at most once per interval, and where the scroll stops last', async () => {
    fw.configure(['a'], {}, { column: 'workId', dir: 'asc' });
    answer(lastWatch(), 1_000_000);
    const before = sent.length;
    for (let f = 0; f < 30; f++) {
      fw.setRange(f * 2000, f * 2000 + 30);
      await vi.advanceTimersByTimeAsync(16);
    }
    await vi.advanceTimersByTimeAsync(RANGE_EVERY_MS);
    const asked = sent.length - before;
    expect(asked).toBeLessThanOrEqual(Math.ceil((30 * 16) / RANGE_EVERY_MS) + 1);
    expect(lastWatch().query.offset).toBe(29 * 2000 - MARGIN);
  });

  it('stacks connections: the second is asked where the screen reaches it', async () => {
    fw.configure(['a', 'b'], {}, { column: 'workId', dir: 'asc' });
    const [wa, wb] = sent.filter((m) => 'watchId' in m) as Array<{ watchId: string; query: ViewQuery }>;
    answer(wa as { watchId: string; query: ViewQuery }, 1000);
    answer(wb as { watchId: string; query: ViewQuery }, 1000);
    fw.setRange(1500, 1530);
    await vi.advanceTimersByTimeAsync(RANGE_EVERY_MS);
    expect(lastWatch().query).toMatchObject({ connectionId: 'b', offset: 500 - MARGIN });
    fw.close();
    expect(hub.size).toBe(0);
  });
});
