/**
 * `admin.countByStatus` (issue 43): the whole fleet's counts by status from one aggregate
 * statement on PostgreSQL and PGlite, judged at the server's clock `at` — equal to the console's
 * own judgement (`leaseStatus`) of every listed row at that time, for a fleet holding every status
 * (a renewed group member is never stuck; pruned tombstones are not counted). Bad thresholds are
 * INVALID_ARGUMENT before any read.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { LeaseStatus } from '../../src/console/api.ts';
import { leaseStatus } from '../../src/console/index.ts';
import { toLeaseRow } from '../../src/console/rows.ts';
import type { LeaseBackend } from '../../src/index.ts';
import { type BackendTarget, codeOf, openIsolated, PG_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const THRESHOLDS = { expiringFraction: 0.9, stuckAfterMs: 500 };
const targets: BackendTarget[] = [
  { kind: 'postgres', url: PG_URL },
  { kind: 'pglite', url: 'pglite://memory' },
];

describe.each(targets)('countByStatus on $kind', (target) => {
  const namespace = uniqueNamespace('sc');
  let backend: LeaseBackend;
  afterAll(async () => {
    await backend?.close();
    if (target.kind === 'postgres') await dropNamespace(target, namespace);
  });

  it('equals the console judgement of every listed row at the time it names', async () => {
    backend = await openIsolated(target, namespace);
    const admin = backend.admin;
    expect(admin.countByStatus).toBeDefined();
    const empty = await admin.countByStatus!(THRESHOLDS);
    expect(empty.total).toBe(0);
    expect(Number.isFinite(empty.at.getTime())).toBe(true);

    // A pruned work item leaves a tombstone row, which is not counted.
    await backend.release(await backend.acquire('pruned', 'w-8', 3_600_000));
    await sleep(20);
    expect(await admin.prune({ olderThanMs: 1 })).toBe(1);
    await backend.acquire('live', 'w-1', 3_600_000);
    const stuck = await backend.acquire('stuck', 'w-2', 3_600_000);
    const member = await backend.acquire('group:g:member:w-3', 'w-3', 3_600_000);
    await backend.acquire('expiring', 'w-4', 20_000);
    await backend.acquire('expired', 'w-5', 50);
    await backend.release(await backend.acquire('released', 'w-6', 3_600_000));
    const forced = await backend.acquire('forced', 'w-7', 3_600_000);
    await admin.forceRelease('forced', {
      expectedToken: forced.fencingToken,
      operator: 'op',
      reason: 'test',
    });
    // Renewed but without progress for longer than stuckAfterMs: stuck (the member never is).
    await sleep(2500);
    await backend.renew(stuck, 3_600_000);
    await backend.renew(member, 3_600_000);

    const counts = await admin.countByStatus!(THRESHOLDS);
    const at = counts.at.getTime();
    const rows = (await admin.list({ limit: 100 })).items.map(toLeaseRow);
    const want: Record<LeaseStatus, number> = {
      live: 0,
      expiring: 0,
      expired: 0,
      released: 0,
      stuck: 0,
      'force-released': 0,
    };
    for (const row of rows) want[leaseStatus(row, at, THRESHOLDS)]++;
    expect(counts.byStatus).toEqual(want);
    expect(counts.total).toBe(rows.length);
    // Every status is present, so the comparison covers each branch of the statement.
    expect(want.live).toBe(2);
    expect(want.expiring).toBe(1);
    expect(want.expired).toBe(1);
    expect(want.stuck).toBe(1);
    expect(want['force-released']).toBe(1);
    expect(want.released).toBe(1);
    expect(rows.map((r) => r.workId)).not.toContain('pruned');
  });

  it('refuses bad thresholds before reading', async () => {
    const admin = backend.admin;
    expect(await codeOf(admin.countByStatus!({ expiringFraction: 2, stuckAfterMs: 1 }))).toBe(
      'INVALID_ARGUMENT',
    );
    expect(await codeOf(admin.countByStatus!({ expiringFraction: 0.5, stuckAfterMs: -1 }))).toBe(
      'INVALID_ARGUMENT',
    );
    expect(await codeOf(admin.countByStatus!(null as never))).toBe('INVALID_ARGUMENT');
  });
});
