/** `worklease groups` on real PostgreSQL: a consumer group of real joinGroup members, as the CLI prints it. */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { summarizeGroups } from '../../src/console/groups.ts';
import { type DemoGroup, startDemoGroup } from '../../src/demo/group.ts';
import { type LeaseBackend, openBackend } from '../../src/index.ts';
import { PG_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';
import { run } from './support.ts';

vi.setConfig({ testTimeout: 90_000 });
const ns = uniqueNamespace('cligroups');
let backend: LeaseBackend;
let group: DemoGroup;

beforeAll(async () => {
  backend = await openBackend(PG_URL, { schema: ns });
  group = await startDemoGroup(backend, {
    group: 'ingest',
    members: 2,
    partitions: 5,
    // Members rebalance every ttlMs / 3 (2 s), so the group settles within seconds.
    ttlMs: 6000,
    tickMs: 500,
    cycleMs: 0,
    prefix: 'cli/',
    holderPrefix: 'consumer-',
  });
  // Settled: both members hold their share (2 and 3).
  await vi.waitFor(
    async () => {
      const [page, now] = await Promise.all([backend.admin.list(), backend.admin.serverTime()]);
      const rows = page.items.map((i) => ({ ...i, expiresAt: i.expiresAt.getTime() }));
      expect(summarizeGroups(rows, now.getTime())[0]).toMatchObject({ balanced: true, held: 5 });
    },
    { timeout: 30_000, interval: 200 },
  );
}, 60_000);

afterAll(async () => {
  await group?.stop();
  await backend?.close();
  await dropNamespace({ kind: 'postgres', url: PG_URL }, ns);
});

describe('worklease groups', () => {
  it('prints each member, what it holds and the balance, and the same as JSON', async () => {
    const r = await run(['groups', PG_URL, '--schema', ns]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^GROUP\s+MEMBER\s+MEMBERSHIP\s+HOLDS\s+WORK ITEMS$/);
    const counts = lines
      .filter((l) => l.startsWith('ingest '))
      .map((l) =>
        l.match(/^ingest\s+(consumer-\d)\s+live, runs out in \S+(?: \S+)*?\s{2,}(\d+)\s{2,}(.*)$/)?.slice(1),
      );
    expect(counts.map((c) => c?.[0])).toEqual(['consumer-1', 'consumer-2']);
    expect(counts.map((c) => Number(c?.[1])).sort()).toEqual([2, 3]);
    expect(counts.flatMap((c) => c?.[2]?.split(', ')).sort()).toEqual([
      'cli/ingest-p00',
      'cli/ingest-p01',
      'cli/ingest-p02',
      'cli/ingest-p03',
      'cli/ingest-p04',
    ]);
    expect(r.stdout).toContain('ingest: 2 live members hold 5 work items, balanced (2-3 each)');

    const json = await run(['groups', PG_URL, '--schema', ns, '--group', 'ingest', '--json']);
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout);
    expect(parsed).toMatchObject([
      { group: 'ingest', liveMembers: 2, held: 5, share: { min: 2, max: 3 }, balanced: true },
    ]);
    expect(parsed[0].members.map((m: { holderId: string; live: boolean }) => [m.holderId, m.live])).toEqual([
      ['consumer-1', true],
      ['consumer-2', true],
    ]);
  });

  it('says so when there is no such group', async () => {
    const r = await run(['groups', PG_URL, '--schema', ns, '--group', 'nosuch']);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout.trim()).toBe(
      `no group nosuch on ${PG_URL}?schema=${ns} (members of a joinGroup group hold leases on group:<group>:member:<holder>)`,
    );
  });
});
