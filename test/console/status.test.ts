/** Derived lease status: when a lease is stuck, and that a consumer group's membership never is. */
import { describe, expect, it } from 'vitest';
import type { LeaseRow } from '../../src/console/api.ts';
import { leaseStatus, nextStatusChangeAt } from '../../src/console/status.ts';
import { leaseRow } from './helpers.ts';

const NOW = 1_800_000_000_000;
const THRESHOLDS = { expiringFraction: 0.25, stuckAfterMs: 60_000 };

/** Acquired 5 min ago, renewed 1 s ago, 50 s of its 60 s ttl left, never checkpointed. */
const row = (over: Partial<LeaseRow>): LeaseRow =>
  leaseRow(NOW, { workId: 'orders/ingest-1', acquiredAt: NOW - 300_000, renewedAt: NOW - 1_000, ...over });

describe('leaseStatus', () => {
  it('calls a lease stuck when it is renewed but its checkpoint has not moved for stuckAfterMs', () => {
    expect(leaseStatus(row({}), NOW, THRESHOLDS)).toBe('stuck');
    expect(leaseStatus(row({ checkpointedAt: NOW - 120_000 }), NOW, THRESHOLDS)).toBe('stuck');
    expect(leaseStatus(row({ checkpointedAt: NOW - 2_000 }), NOW, THRESHOLDS)).toBe('live');
  });

  it("never calls a consumer group's membership lease stuck: renewing it is all its holder does", () => {
    const member = row({ workId: 'group:orders:member:worker-7' });
    expect(leaseStatus(member, NOW, THRESHOLDS)).toBe('live');
    // The rest of the rules still apply to it.
    expect(leaseStatus({ ...member, expiresAt: NOW + 5_000 }, NOW, THRESHOLDS)).toBe('expiring');
    expect(leaseStatus({ ...member, expiresAt: NOW - 1 }, NOW, THRESHOLDS)).toBe('expired');
    expect(leaseStatus({ ...member, ended: 'released' }, NOW, THRESHOLDS)).toBe('released');
  });

  it('judges a work item that only looks like a group by the same rule as any other', () => {
    for (const workId of [
      'group:orders',
      'group:orders:item-3',
      'groups:orders:member:w',
      'x/group:a:member:b',
    ]) {
      expect(leaseStatus(row({ workId }), NOW, THRESHOLDS)).toBe('stuck');
    }
  });
});

describe('nextStatusChangeAt', () => {
  it('includes the moment a lease would turn stuck, but not for a membership lease', () => {
    // A 60 s ttl running to NOW + 100 s: expiring from NOW + 85 s; acquired 1 s ago and never
    // checkpointed, so stuck from NOW + 59 s unless it is a membership lease.
    const lease = { acquiredAt: NOW - 1_000, expiresAt: NOW + 100_000, ttlMs: 60_000 };
    expect(nextStatusChangeAt(row(lease), NOW, THRESHOLDS)).toBe(NOW + 59_000);
    expect(nextStatusChangeAt(row({ ...lease, workId: 'group:g:member:w' }), NOW, THRESHOLDS)).toBe(
      NOW + 85_000,
    );
  });
});
