import { describe, expect, it } from 'vitest';
import { DEFAULT_THRESHOLDS, type LeaseRow } from '../../src/console/api.ts';
import { countFleet, RateRecorder } from '../../src/console/stats.ts';

const NOW = 1_800_000_000_000;
function row(over: Partial<LeaseRow>): LeaseRow {
  return {
    workId: 'w',
    holderId: 'h',
    fencingToken: '1',
    expiresAt: NOW + 50_000,
    ttlMs: 60_000,
    stepId: null,
    acquiredAt: NOW - 10_000,
    renewedAt: null,
    checkpointedAt: null,
    releasedAt: null,
    checkpointSize: null,
    cleanHandoff: true,
    predecessorEnd: 'none',
    ended: null,
    version: '1',
    ...over,
  };
}

describe('fleet stats', () => {
  it('counts by status (server clock) and top holders', () => {
    const counts = countFleet(
      [
        row({ workId: 'a', holderId: 'h1' }),
        row({ workId: 'b', holderId: 'h1', expiresAt: NOW - 1 }),
        row({ workId: 'c', holderId: 'h2', ended: 'released', releasedAt: NOW - 5 }),
        row({ workId: 'd', holderId: 'h1', expiresAt: NOW + 5_000 }),
      ],
      NOW,
      DEFAULT_THRESHOLDS,
    );
    expect(counts.total).toBe(4);
    expect(counts.byStatus).toMatchObject({ live: 1, expired: 1, released: 1, expiring: 1, stuck: 0 });
    expect(counts.byHolder).toEqual([
      { holderId: 'h1', count: 3 },
      { holderId: 'h2', count: 1 },
    ]);
  });

  it('derives acquires, takeovers, releases and force-releases from row transitions', () => {
    const rates = new RateRecorder();
    const first = row({ acquiredAt: NOW - 1000 });
    rates.recordTransition(undefined, first);
    // A renew of the same lease is not an acquire.
    rates.recordTransition(first, row({ acquiredAt: NOW - 1000, renewedAt: NOW, version: '2' }));
    const released = row({ acquiredAt: NOW - 1000, ended: 'released', releasedAt: NOW, version: '3' });
    rates.recordTransition(first, released);
    // A takeover collapsed with a later renew still counts once, as a takeover.
    const taken = row({ holderId: 'h2', fencingToken: '2', acquiredAt: NOW, predecessorEnd: 'expired' });
    rates.recordTransition(released, taken);
    rates.recordTransition(
      taken,
      row({ holderId: 'h2', fencingToken: '3', acquiredAt: NOW, ended: 'force-released', releasedAt: NOW }),
    );
    const points = rates.points(NOW);
    expect(points).toHaveLength(60);
    const total = points.reduce(
      (t, p) => ({
        a: t.a + p.acquires,
        t: t.t + p.takeovers,
        r: t.r + p.releases,
        f: t.f + p.forceReleases,
      }),
      { a: 0, t: 0, r: 0, f: 0 },
    );
    expect(total).toEqual({ a: 2, t: 1, r: 1, f: 1 });
  });
});
