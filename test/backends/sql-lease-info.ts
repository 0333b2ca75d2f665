/**
 * Shared by the Postgres and PGlite backend tests: every statement that returns
 * a LeaseInfo (get, list, changes, forceRelease) must return the same values for
 * the same row, and its timestamps must be the Dates the write calls returned.
 * They are read by their own decoder (text rows, timestamps as epoch ms), apart
 * from the Dates that acquire and renew parse, so this pins them together.
 */
import { expect } from 'vitest';
import type { LeaseBackend, LeaseInfo } from '../../src/index.ts';

/** The latest LeaseInfo the change feed reports for `workId`, read from `cursor` to the head. */
async function fromChanges(b: LeaseBackend, cursor: string, workId: string): Promise<LeaseInfo | null> {
  let latest: LeaseInfo | null = null;
  let c = cursor;
  for (let i = 0; i < 100; i++) {
    const batch = await b.admin.changes({ cursor: c, limit: 3 });
    for (const change of batch.changes) if (change.workId === workId) latest = change.lease;
    c = batch.cursor;
    if (batch.changes.length === 0) return latest;
  }
  throw new Error('the change feed did not reach its head in 100 polls');
}

function expectSameFields(actual: LeaseInfo | null | undefined, expected: LeaseInfo, what: string): void {
  expect(actual, what).toBeDefined();
  expect(actual, what).not.toBeNull();
  for (const key of Object.keys(expected) as (keyof LeaseInfo)[]) {
    expect(actual?.[key], `${what}: ${key}`).toEqual(expected[key]);
  }
  expect(Object.keys(actual ?? {}).sort(), what).toEqual(Object.keys(expected).sort());
}

/** get, list, changes and forceRelease agree field by field on a row with every field set. */
export async function expectLeaseInfoReadsAgree(b: LeaseBackend): Promise<void> {
  const id = 'every-field';
  const cursor = await b.admin.changeCursor();

  // Two leases, so that predecessorEnd is not 'none'; the second one is
  // checkpointed (renewedAt, checkpointedAt, size) and released (releasedAt, ended).
  const first = await b.acquire(id, 'holder-1', 60_000, { stepId: 'step-1' });
  await b.checkpoint(first, new Uint8Array([1, 2, 3]), 60_000);
  await b.release(first);
  const second = await b.acquire(id, 'holder-2', 60_000, { stepId: 'step-2' });
  expect((await b.admin.get(id))?.expiresAt).toEqual(second.expiresAt);
  // Each renewal's expiry, parsed from the timestamptz by the client, equals the
  // one read back as epoch ms: both drop the sub-millisecond digits the same way.
  for (let i = 0; i < 20; i++) {
    const renewed = await b.renew(second, 60_000 + i);
    expect((await b.admin.get(id))?.expiresAt, `renewal ${i}`).toEqual(renewed.expiresAt);
  }
  await b.checkpoint(second, new Uint8Array([4, 5, 6, 7]), 60_000);
  await b.release(second);
  await b.admin.hold(id, { operator: 'op', reason: 'every field' });

  const got = await b.admin.get(id);
  expect(got).not.toBeNull();
  // Every field but the release request, which a release clears (checked on a live lease below).
  for (const [key, value] of Object.entries(got ?? {}))
    if (key !== 'releaseRequest') expect(value, `get: ${key}`).not.toBeNull();
  expect(got).toMatchObject({
    holderId: 'holder-2',
    fencingToken: second.fencingToken,
    stepId: 'step-2',
    checkpointSize: 4,
    cleanHandoff: true,
    predecessorEnd: 'released',
    ended: 'released',
    hold: { operator: 'op', reason: 'every field' },
  });
  const info = got as LeaseInfo;

  expectSameFields((await b.admin.list({ workIdPrefix: id })).items[0], info, 'list');
  expectSameFields(await fromChanges(b, cursor, id), info, 'changes');

  // forceRelease returns the row it wrote; get must read back exactly that.
  await b.admin.unhold(id, { operator: 'op', reason: 'every field' });
  const third = await b.acquire(id, 'holder-3', 60_000, { stepId: 'step-3' });
  await b.checkpoint(third, new Uint8Array([8]), 60_000);
  // A hold does not fence the live lease; the force-release keeps it.
  await b.admin.hold(id, { operator: 'op', reason: 'every field' });
  const forced = await b.admin.forceRelease(id, {
    expectedToken: third.fencingToken,
    operator: 'test',
    reason: 'field by field',
  });
  for (const [key, value] of Object.entries(forced))
    if (key !== 'releaseRequest') expect(value, `forceRelease: ${key}`).not.toBeNull();
  expectSameFields(await b.admin.get(id), forced, 'get after forceRelease');
  expectSameFields((await b.admin.list({ workIdPrefix: id })).items[0], forced, 'list after forceRelease');
  expectSameFields(await fromChanges(b, cursor, id), forced, 'changes after forceRelease');

  // requestRelease returns the row it wrote, request included; every read agrees with it.
  await b.admin.unhold(id, { operator: 'op', reason: 'every field' });
  const fourth = await b.acquire(id, 'holder-4', 60_000, { stepId: 'step-4' });
  await b.checkpoint(fourth, new Uint8Array([9]), 60_000);
  const requested = await b.admin.requestRelease(id, {
    expectedToken: fourth.fencingToken,
    operator: 'test',
    reason: 'field by field\nline two',
  });
  expect(requested.releaseRequest).toMatchObject({ operator: 'test', reason: 'field by field\nline two' });
  expectSameFields(await b.admin.get(id), requested, 'get after requestRelease');
  expectSameFields(
    (await b.admin.list({ workIdPrefix: id })).items[0],
    requested,
    'list after requestRelease',
  );
  expectSameFields(await fromChanges(b, cursor, id), requested, 'changes after requestRelease');
  // The renew's answer carries the same request, to the millisecond.
  expect((await b.renew(fourth, 60_000)).releaseRequested).toEqual(requested.releaseRequest);
}
