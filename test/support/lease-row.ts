/** A lease row for the console and renderer tests; imports nothing but the console's wire types. */
import type { LeaseRow } from '../../src/console/api.ts';

/** A live lease row at backend time `now`: acquired 10 s ago, 50 s of its 60 s ttl left; `over` on top. */
export function leaseRow(now: number, over: Partial<LeaseRow> = {}): LeaseRow {
  return {
    workId: 'w',
    holderId: 'h',
    fencingToken: '1',
    expiresAt: now + 50_000,
    ttlMs: 60_000,
    stepId: null,
    acquiredAt: now - 10_000,
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
