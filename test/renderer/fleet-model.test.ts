import { describe, expect, it } from 'vitest';
import {
  applyLeaseEvents,
  computeView,
  EMPTY_FILTER,
  type FleetSource,
  fromSnapshot,
  SnapshotBuilder,
  viewJob,
} from '../../renderer/features/fleet/model.ts';
import { drain, sortIndices } from '../../renderer/lib/slices.ts';
import { DEFAULT_THRESHOLDS, type LeaseRow } from '../../src/console/api.ts';

const NOW = 1_764_450_000_000;

function row(i: number, expiresIn: number): LeaseRow {
  return {
    workId: `jobs/${String(i).padStart(5, '0')}`,
    holderId: `worker-${i % 7}`,
    fencingToken: String(1 + (i % 3)),
    expiresAt: NOW + expiresIn,
    ttlMs: 60_000,
    stepId: null,
    acquiredAt: NOW - 1000,
    renewedAt: NOW - 1000,
    checkpointedAt: NOW - 1000,
    releasedAt: null,
    checkpointSize: i,
    cleanHandoff: true,
    predecessorEnd: 'none',
    ended: null,
    version: '1',
  };
}

function source(rows: LeaseRow[]): FleetSource {
  return {
    connectionId: 'c',
    data: fromSnapshot({ connectionId: 'c', rows, seq: 0, serverTime: NOW }),
    thresholds: DEFAULT_THRESHOLDS,
    clockOffsetMs: 0,
  };
}

describe('renderer fleet model', () => {
  it('judges statuses no later than the last heartbeat check, which travels with the rows', () => {
    // Ran out 2 s ago by the clock; the last check began 5 s ago, before its expiry.
    const rows = [row(1, -2000), row(2, 30_000), row(3, -8000)];
    const src: FleetSource = {
      ...source(rows),
      data: fromSnapshot({ connectionId: 'c', rows, seq: 0, serverTime: NOW, heartbeatsAsOf: NOW - 5000 }),
    };
    const before = computeView([src], EMPTY_FILTER, { key: 'workId', dir: 'asc' }, NOW);
    // Only the lease that was past its expiry when the check began is expired.
    expect(before.counts.expired).toBe(1);
    expect(before.counts.expiring + before.counts.live).toBe(2);
    // A check that began after the expiry comes with an event (here with no row changed).
    const { data } = applyLeaseEvents(src.data, [
      {
        type: 'leases',
        connectionId: 'c',
        seq: 1,
        upserts: [],
        removed: [],
        serverTime: NOW,
        heartbeatsAsOf: NOW - 100,
      },
    ]);
    expect(data.heartbeatsAsOf).toBe(NOW - 100);
    const after = computeView([{ ...src, data }], EMPTY_FILTER, { key: 'workId', dir: 'asc' }, NOW);
    expect(after.counts.expired).toBe(2);
    // An event from a server that does not say keeps the last check.
    const { data: same } = applyLeaseEvents(data, [
      { type: 'leases', connectionId: 'c', seq: 2, upserts: [], removed: [], serverTime: NOW },
    ]);
    expect(same.heartbeatsAsOf).toBe(NOW - 100);
  });

  it('sorts in slices exactly like a stable native sort, both directions', () => {
    const keys = Array.from({ length: 10_000 }, (_, i) => (i * 7919) % 97);
    const cmp = (i: number, j: number) => (keys[i] as number) - (keys[j] as number);
    const want = keys.map((_, i) => i).sort(cmp);
    expect([...drain(sortIndices(keys.length, cmp))]).toEqual(want);
    const wantDesc = keys.map((_, i) => i).sort((i, j) => cmp(j, i));
    expect([...drain(sortIndices(keys.length, (i, j) => cmp(j, i)))]).toEqual(wantDesc);
  });

  it('sorts by the stored expiry with ties in work-id order, and counts by status', () => {
    const rows = Array.from({ length: 5000 }, (_, i) =>
      row(4999 - i, i % 10 === 0 ? -5000 : ((i * 31) % 50) * 1000 + 1000),
    );
    const view = computeView([source(rows)], EMPTY_FILTER, { key: 'expiresAt', dir: 'asc' }, NOW);
    const byId = new Map(rows.map((r) => [r.workId, r]));
    const shown = view.workIds.map((id) => byId.get(id) as LeaseRow);
    for (let i = 1; i < shown.length; i++) {
      const a = shown[i - 1] as LeaseRow;
      const b = shown[i] as LeaseRow;
      expect(a.expiresAt < b.expiresAt || (a.expiresAt === b.expiresAt && a.workId < b.workId)).toBe(true);
    }
    expect(view.counts.expired).toBe(500);
    expect(view.total).toBe(5000);
  });

  it('recounts without rebuilding the order when asked to keep it', () => {
    const src = source(Array.from({ length: 3000 }, (_, i) => row(i, 30_000)));
    const first = computeView([src], EMPTY_FILTER, { key: 'workId', dir: 'asc' }, NOW);
    const later = drain(viewJob([src], EMPTY_FILTER, { key: 'workId', dir: 'asc' }, NOW + 31_000, first));
    expect(later.workIds).toBe(first.workIds);
    expect(later.counts.expired).toBe(3000);
    expect(computeView([src], EMPTY_FILTER, { key: 'workId', dir: 'asc' }, NOW + 31_000).counts).toEqual(
      later.counts,
    );
  });

  it('builds the same model from pages as from one snapshot, sorting only if pages were out of order', () => {
    const rows = Array.from({ length: 100 }, (_, i) => row(i, 1000));
    const whole = fromSnapshot({ connectionId: 'c', rows, seq: 3, serverTime: NOW });
    const b = new SnapshotBuilder({ connectionId: 'c', seq: 3, serverTime: NOW });
    b.add(rows.slice(50));
    b.add(rows.slice(0, 50));
    const paged = b.finish();
    expect(paged.sortedIds).toEqual(whole.sortedIds);
    expect(paged.rows.size).toBe(100);
    expect(paged.seq).toBe(3);
  });

  it('counts the whole fleet whatever the filters: search and status filters alike', () => {
    // 10 expired (every tenth), 90 live.
    const rows = Array.from({ length: 100 }, (_, i) => row(i, i % 10 === 0 ? -5000 : 30_000));
    const src = source(rows);
    const sort = { key: 'workId', dir: 'asc' } as const;
    const all = computeView([src], EMPTY_FILTER, sort, NOW);
    const searched = computeView([src], { ...EMPTY_FILTER, search: 'jobs/0001' }, sort, NOW);
    const byStatus = computeView([src], { ...EMPTY_FILTER, statuses: new Set(['live'] as const) }, sort, NOW);
    expect(all.counts).toMatchObject({ live: 90, expired: 10 });
    expect(searched.workIds.length).toBe(10);
    expect(searched.counts).toEqual(all.counts);
    expect(byStatus.workIds.length).toBe(90);
    expect(byStatus.counts).toEqual(all.counts);
    expect([all.total, searched.total, byStatus.total]).toEqual([100, 100, 100]);
  });

  it('computes statuses of a stale source at its frozen time, never by the clock running on', () => {
    const rows = Array.from({ length: 10 }, (_, i) => row(i, 2_000));
    const sort = { key: 'workId', dir: 'asc' } as const;
    const later = NOW + 60_000;
    // Live: a minute later by the clock, every lease ran out.
    expect(computeView([source(rows)], EMPTY_FILTER, sort, later).counts.expired).toBe(10);
    // Stale since NOW: shown as they were when last confirmed.
    const stale = { ...source(rows), frozenAt: NOW };
    const view = computeView([stale], EMPTY_FILTER, sort, later);
    expect(view.counts.expired).toBe(0);
    expect(view.counts.live + view.counts.expiring).toBe(10);
  });

  it('records the instant it judged each connection at, on every path, for the rows it lists', () => {
    // Three connections: live with a clock offset, live whose heartbeats were checked 4 s ago, stale.
    const live = { ...source([row(1, 10_000)]), connectionId: 'a', clockOffsetMs: 250 };
    const checked: FleetSource = {
      ...source([row(2, 10_000)]),
      connectionId: 'b',
      data: fromSnapshot({
        connectionId: 'b',
        rows: [row(2, 10_000)],
        seq: 0,
        serverTime: NOW,
        heartbeatsAsOf: NOW - 4000,
      }),
    };
    const stale = { ...source([row(3, 10_000)]), connectionId: 'c', frozenAt: NOW - 7000 };
    const sources = [live, checked, stale];
    const expected = new Map([
      ['a', { clock: NOW + 250, judged: NOW + 250 }],
      ['b', { clock: NOW, judged: NOW - 4000 }],
      ['c', { clock: NOW - 7000, judged: NOW - 7000 }],
    ]);
    const sort = { key: 'workId', dir: 'asc' } as const;
    const full = computeView(sources, EMPTY_FILTER, sort, NOW);
    expect(full.instants).toEqual(expected);
    // A filtered, sorted pass and a counts-only pass (the order kept) record the same.
    const byExpiry = computeView(
      sources,
      { ...EMPTY_FILTER, search: 'jobs' },
      { key: 'expiresAt', dir: 'desc' },
      NOW,
    );
    expect(byExpiry.instants).toEqual(expected);
    const kept = drain(viewJob(sources, EMPTY_FILTER, sort, NOW + 1000, full));
    expect(kept.instants.get('a')).toEqual({ clock: NOW + 1250, judged: NOW + 1250 });
    expect(kept.instants.get('c')).toEqual({ clock: NOW - 7000, judged: NOW - 7000 });
    // The counts are judged at those instants (expiring: under 15 s of the 60 s ttl left): a has
    // 8.75 s left, b 14 s at its check, c, stale, 17 s at its frozen time.
    expect([kept.counts.expiring, kept.counts.live]).toEqual([2, 1]);
  });
});
