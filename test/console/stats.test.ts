import { describe, expect, it } from 'vitest';
import { DEFAULT_THRESHOLDS, type LeaseRow } from '../../src/console/api.ts';
import { countFleet, RateRecorder } from '../../src/console/stats.ts';
import { leaseRow } from './helpers.ts';

const NOW = 1_800_000_000_000;
const row = (over: Partial<LeaseRow>): LeaseRow => leaseRow(NOW, over);

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

  it('counts a release and a re-acquire by the same holder within one millisecond as two events', () => {
    // The server clock has millisecond resolution: a holder that releases and at once acquires the
    // same work item again can get the same acquiredAt. The ended lease coming back live is the acquire.
    const rates = new RateRecorder();
    const first = row({ acquiredAt: NOW });
    rates.recordTransition(undefined, first);
    const released = row({ acquiredAt: NOW, ended: 'released', releasedAt: NOW, version: '2' });
    rates.recordTransition(first, released);
    const again = row({ acquiredAt: NOW, fencingToken: '2', predecessorEnd: 'released', version: '3' });
    rates.recordTransition(released, again);
    const total = rates
      .points(NOW)
      .reduce((n, p) => ({ a: n.a + p.acquires, r: n.r + p.releases }), { a: 0, r: 0 });
    expect(total).toEqual({ a: 2, r: 1 });
  });

  it('counts coalesced handoffs from the counters: acquires, takeovers, releases, force-releases', () => {
    const total = (r: RateRecorder) =>
      r.points(NOW).reduce(
        (n, p) => ({
          acquires: n.acquires + p.acquires,
          takeovers: n.takeovers + p.takeovers,
          releases: n.releases + p.releases,
          forceReleases: n.forceReleases + p.forceReleases,
        }),
        { acquires: 0, takeovers: 0, releases: 0, forceReleases: 0 },
      );
    // Seen live with 1 acquisition; next seen after: released, acquired, force-released,
    // acquired, ran out, acquired, released (the newest lease's release waits for a successor).
    const a = new RateRecorder();
    a.recordCounted(
      row({}),
      { acquisitions: 1, releases: 0, forceReleases: 0 },
      row({ ended: 'released', releasedAt: NOW - 1000, predecessorEnd: 'expired' }),
      { acquisitions: 4, releases: 2, forceReleases: 1 },
    );
    expect(total(a)).toEqual({ acquires: 3, takeovers: 2, releases: 2, forceReleases: 1 });
    // A work item first seen after its first lease was force-released and taken over.
    const b = new RateRecorder();
    b.recordCounted(
      undefined,
      { acquisitions: 0, releases: 0, forceReleases: 0 },
      row({ predecessorEnd: 'force-released' }),
      { acquisitions: 2, releases: 0, forceReleases: 1 },
    );
    expect(total(b)).toEqual({ acquires: 2, takeovers: 1, releases: 0, forceReleases: 1 });
    // Previously seen released; one clean handoff since.
    const c = new RateRecorder();
    c.recordCounted(
      row({ ended: 'released', releasedAt: NOW - 9000 }),
      { acquisitions: 1, releases: 1, forceReleases: 0 },
      row({ predecessorEnd: 'released' }),
      { acquisitions: 2, releases: 1, forceReleases: 0 },
    );
    expect(total(c)).toEqual({ acquires: 1, takeovers: 0, releases: 0, forceReleases: 0 });
  });

  it('keeps 24 h of minutes, answers any window of them, and names the oldest minute with an event', () => {
    const rates = new RateRecorder();
    expect(rates.oldest(NOW)).toBeNull();
    const minute = (t: number) => Math.floor(t / 60_000) * 60_000;
    for (const agoMin of [25 * 60, 23 * 60, 30, 3])
      rates.seedFromRow(row({ acquiredAt: NOW - agoMin * 60_000 }));
    // 25 h ago is past the retention; 23 h ago is the oldest kept.
    expect(rates.oldest(NOW)).toBe(minute(NOW - 23 * 60 * 60_000));
    const acquires = (n: number) => rates.points(NOW, n).reduce((s, p) => s + p.acquires, 0);
    expect(rates.points(NOW, 15)).toHaveLength(15);
    expect(rates.points(NOW, 15).at(-1)?.minute).toBe(minute(NOW));
    expect(acquires(15)).toBe(1);
    expect(acquires(60)).toBe(2);
    expect(rates.points(NOW, 1440)).toHaveLength(1440);
    expect(acquires(1440)).toBe(3);
    // Never more than the retention, whatever is asked.
    expect(rates.points(NOW, 5000)).toHaveLength(1440);
    // A day later the old minutes are gone.
    expect(rates.oldest(NOW + 2 * 24 * 60 * 60_000)).toBeNull();
  });
});
