/**
 * `lease.forceReleaseMany`: the bulk force-release of a filtered selection. Each lease is fenced by
 * compare-and-set on its own token, results come row by row, every audit entry of the call shares
 * one batch id; bad input, a missing role and read-only connections are refused before any write.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/console/access.ts';
import { type ConsoleService, createConsoleService, dispatch, methods } from '../../src/console/index.ts';
import { type LeaseBackend, openBackend } from '../../src/index.ts';
import { sharedOpener } from './helpers.ts';

let backend: LeaseBackend;
let desktop: ConsoleService;
let shared: ConsoleService;

beforeAll(async () => {
  backend = await openBackend('pglite://memory');
  const common = {
    openBackend: sharedOpener(backend),
    connections: [
      { name: 'main', url: 'pglite://memory' },
      { name: 'locked', url: 'pglite://memory', readOnly: true },
    ],
    feed: { pollMaxMs: 200 },
  };
  desktop = createConsoleService({ ...common, operator: 'os-user' });
  shared = createConsoleService({ ...common, shared: {} });
  for (const s of [desktop, shared]) for (const c of s.connections()) await s.waitLive(c.id);
});
afterAll(async () => {
  await desktop?.close();
  await shared?.close();
  await backend?.close();
});

const ids = (s: ConsoleService) => Object.fromEntries(s.connections().map((c) => [c.name, c.id]));
let n = 0;
async function held(count: number): Promise<Array<{ workId: string; expectedToken: string }>> {
  const out = [];
  for (let i = 0; i < count; i++) {
    const workId = `bulk-${++n}`;
    const rec = await backend.acquire(workId, `w-${n}`, 60_000);
    out.push({ workId, expectedToken: rec.fencingToken.toString() });
  }
  return out;
}

/** The stored state of these work items, to prove a refused call wrote nothing. */
async function stored(items: Array<{ workId: string }>) {
  return Promise.all(items.map((i) => backend.admin.get(i.workId)));
}

describe('lease.forceReleaseMany', () => {
  it('fences each lease by its own token, reports row by row, and audits with one batch id', async () => {
    const items = await held(3);
    // The second one changed hands after the operator looked: its token is stale.
    const moved = items[1]!;
    const rec = await backend.admin.get(moved.workId);
    await backend.admin.forceRelease(moved.workId, {
      expectedToken: rec!.fencingToken,
      operator: 'someone',
      reason: 'earlier',
    });
    await backend.acquire(moved.workId, 'w-new', 60_000);
    const out = await desktop.call('lease.forceReleaseMany', {
      connectionId: ids(desktop).main!,
      items,
      reason: 'node 7 is gone',
      confirmCount: 3,
    });
    methods['lease.forceReleaseMany'].result.parse(out);
    expect(out.batchId).toMatch(/^b_[A-Za-z0-9_-]+$/);
    expect(out.results.map((r) => [r.workId, r.ok, r.error?.code])).toEqual([
      [items[0]!.workId, true, undefined],
      [items[1]!.workId, false, 'CONFLICT'],
      [items[2]!.workId, true, undefined],
    ]);
    expect(out.results[0]!.row?.ended).toBe('force-released');
    expect((await backend.admin.get(moved.workId))?.holderId).toBe('w-new');
    expect((await backend.admin.get(moved.workId))?.ended).toBeNull();
    const audit = await desktop.call('audit.list', { connectionId: ids(desktop).main!, limit: 1000 });
    const batch = audit.filter((e) => e.batchId === out.batchId);
    expect(batch.map((e) => e.workId).sort()).toEqual([items[0]!.workId, items[2]!.workId].sort());
    expect(batch.every((e) => e.operator === 'os-user' && e.reason === 'node 7 is gone')).toBe(true);
    // The single force-release of earlier has no batch.
    expect(audit.find((e) => e.workId === moved.workId)?.batchId).toBeNull();
  });

  it('refuses bad input before any write: count mismatch, empty, over 1000, duplicates, blank reason', async () => {
    const items = await held(2);
    const before = await stored(items);
    const connectionId = ids(desktop).main!;
    const base = { connectionId, items, reason: 'r', confirmCount: 2 };
    const big = Array.from({ length: 1001 }, (_, i) => ({ workId: `x${i}`, expectedToken: '1' }));
    const cases: Array<[string, unknown]> = [
      ['count typed wrong', { ...base, confirmCount: 3 }],
      ['no count', { connectionId, items, reason: 'r' }],
      ['no items', { ...base, items: [], confirmCount: 0 }],
      ['1001 items', { ...base, items: big, confirmCount: 1001 }],
      ['duplicate work id', { ...base, items: [items[0], items[0]] }],
      ['blank reason', { ...base, reason: '   ' }],
      ['bad token', { ...base, items: [items[0], { workId: items[1]!.workId, expectedToken: '0x1' }] }],
      ['unknown field', { ...base, batchId: 'mine' }],
    ];
    for (const [label, params] of cases) {
      const out = await dispatch(desktop, 'lease.forceReleaseMany', params);
      expect(out.ok ? 'ok' : out.error.code, label).toBe('INVALID_ARGUMENT');
    }
    expect(await stored(items)).toEqual(before);
  });

  it('is refused as a whole on a read-only connection and for a viewer; the audit names the caller', async () => {
    const items = await held(2);
    const before = await stored(items);
    const params = { items, reason: 'r', confirmCount: 2 };
    await expect(
      desktop.call('lease.forceReleaseMany', { connectionId: ids(desktop).locked!, ...params }),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' });
    const viewer: Caller = { user: 'vera', via: 'token', roles: { '*': 'viewer' } };
    const operator: Caller = { user: 'olga', via: 'token', roles: { '*': 'operator' } };
    const main = ids(shared).main!;
    await expect(
      shared.handle('lease.forceReleaseMany', { connectionId: main, ...params }, viewer),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(
      shared.handle('lease.forceReleaseMany', { connectionId: ids(shared).locked!, ...params }, operator),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(
      shared.handle(
        'lease.forceReleaseMany',
        { connectionId: main, ...params, operator: 'mallory' },
        operator,
      ),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(await stored(items)).toEqual(before);

    const out = await shared.handle('lease.forceReleaseMany', { connectionId: main, ...params }, operator);
    expect(out.results.every((r) => r.ok)).toBe(true);
    const audit = await backend.admin.audit({ workId: items[0]!.workId });
    expect(audit[0]).toMatchObject({ operator: 'olga', batchId: out.batchId });
  });
});
