import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleService, createConsoleService, methods } from '../../src/console/index.ts';
import { type LeaseBackend, openBackend } from '../../src/index.ts';
import { sharedOpener } from './helpers.ts';

describe('fleet.snapshot in pages', () => {
  let backend: LeaseBackend;
  let service: ConsoleService;
  let id: string;

  beforeAll(async () => {
    backend = await openBackend('pglite://memory');
    service = createConsoleService({
      openBackend: sharedOpener(backend),
      connections: [{ name: 'demo', url: 'pglite://memory' }],
      feed: { pollMaxMs: 100 },
    });
    id = service.connections()[0]!.id;
    await service.waitLive(id);
    for (const w of ['c', 'a', 'e', 'b', 'd']) await backend.acquire(`job-${w}`, 'worker', 60_000);
    await service.model(id)!.caughtUp();
  });

  afterAll(async () => {
    await service?.close();
    await backend?.close();
  });

  it('serves one snapshot in work-id order, page by page, while the fleet changes', async () => {
    const first = await service.call('fleet.snapshot', { connectionId: id, offset: 0, limit: 2 });
    methods['fleet.snapshot'].result.parse(first);
    expect(first.total).toBe(5);
    expect(first.rows.map((r) => r.workId)).toEqual(['job-a', 'job-b']);
    // A change after the first page must not shift or leak into the later pages of the same snapshot.
    await backend.acquire('job-0', 'worker', 60_000);
    await service.model(id)!.caughtUp();
    const second = await service.call('fleet.snapshot', {
      connectionId: id,
      offset: 2,
      limit: 2,
      seq: first.seq,
    });
    const third = await service.call('fleet.snapshot', {
      connectionId: id,
      offset: 4,
      limit: 2,
      seq: first.seq,
    });
    expect([second.seq, third.seq]).toEqual([first.seq, first.seq]);
    expect([...second.rows, ...third.rows].map((r) => r.workId)).toEqual(['job-c', 'job-d', 'job-e']);
    // A stale seq gets the newer snapshot, recognisable by its seq.
    const again = await service.call('fleet.snapshot', {
      connectionId: id,
      offset: 0,
      limit: 10,
      seq: first.seq - 1,
    });
    expect(again.seq).toBeGreaterThan(first.seq);
    expect(again.rows.map((r) => r.workId)).toEqual(['job-0', 'job-a', 'job-b', 'job-c', 'job-d', 'job-e']);
  });

  it('answers as before without a limit (no total)', async () => {
    const all = await service.call('fleet.snapshot', { connectionId: id });
    expect(all.total).toBeUndefined();
    expect(all.rows).toHaveLength(6);
  });
});
