import { describe, expect, it } from 'vitest';
import {
  applyLeaseEvents,
  computeView,
  EMPTY_FILTER,
  type FleetSource,
  fromSnapshot,
  SnapshotBuilder,
  upsertRow,
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

  it('keeps one object per work id: changes are copied into it and bump its rev', () => {
    const data = fromSnapshot({
      connectionId: 'c',
      rows: [row(1, 1000), row(2, 1000)],
      seq: 0,
      serverTime: NOW,
    });
    const held = data.rows.get('jobs/00001');
    expect(held?.rev).toBe(0);
    const ev = (seq: number, upserts: LeaseRow[], removed: string[] = []) => ({
      type: 'leases' as const,
      connectionId: 'c',
      seq,
      upserts,
      removed,
      serverTime: NOW + seq,
    });
    const newer = { ...row(1, 5000), holderId: 'worker-x', version: '2' };
    const r1 = applyLeaseEvents(data, [ev(1, [newer])]);
    expect(r1.data.rows.get('jobs/00001')).toBe(held);
    expect(held).toMatchObject({ holderId: 'worker-x', version: '2', expiresAt: NOW + 5000, rev: 1 });
    expect(held).not.toBe(newer);
    // A late duplicate of an older version changes nothing, not even the rev.
    const r2 = applyLeaseEvents(r1.data, [ev(2, [row(1, 9000)])]);
    expect(held).toMatchObject({ version: '2', rev: 1 });
    // Removed and added back in one batch: a new object, the order unchanged.
    const r3 = applyLeaseEvents(r2.data, [ev(3, [], ['jobs/00001']), ev(4, [{ ...newer, version: '3' }])]);
    expect(r3.data.rows.get('jobs/00001')).not.toBe(held);
    expect(r3.data.sortedIds).toEqual(['jobs/00001', 'jobs/00002']);
    expect(r3.data.membershipRev).toBe(r2.data.membershipRev + 1);
    // A force-release result lands in the same object too.
    const kept = r3.data.rows.get('jobs/00002');
    const after = upsertRow(r3.data, { ...row(2, 1000), ended: 'force-released', version: '9' });
    expect(after.rows.get('jobs/00002')).toBe(kept);
    expect(kept).toMatchObject({ ended: 'force-released', rev: 1 });
    expect(after.rev).toBe(r3.data.rev + 1);
  });
});
