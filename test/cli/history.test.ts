/**
 * `worklease history`, `hold` and `unhold` as a user runs them (bin/worklease as a child process)
 * on PostgreSQL, and what `show` prints of a hold.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LeaseBackend, type LeaseRecord, openBackend } from '../../src/index.ts';
import { codeOf, PG_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';
import { run } from './support.ts';

const target = { kind: 'postgres' as const, url: PG_URL };
const ns = uniqueNamespace('clihist');
let backend: LeaseBackend;
let first: LeaseRecord;
let second: LeaseRecord;

beforeAll(async () => {
  backend = await openBackend(PG_URL, { schema: ns });
  first = await backend.acquire('job/poison', 'w-1', 600_000);
  await backend.checkpoint(first, new TextEncoder().encode('{"page":3}'), 600_000);
  await backend.release(first);
  second = await backend.acquire('job/poison', 'w-2', 600_000);
}, 60_000);
afterAll(async () => {
  await backend?.close();
  await dropNamespace(target, ns);
});

const errorLine = (stderr: string): string => {
  const lines = stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  return lines[0]!;
};

describe('worklease history / hold / unhold', () => {
  it('hold refuses an empty reason and an unknown work item; nothing is written', async () => {
    const blank = await run(['hold', PG_URL, 'job/poison', '--reason', '  ', '--schema', ns]);
    expect(blank.code).toBe(2);
    expect(errorLine(blank.stderr)).toMatch(/^worklease: INVALID_ARGUMENT: --reason must not be empty/);
    const unknown = await run(['hold', PG_URL, 'job/none', '--reason', 'x', '--schema', ns]);
    expect(unknown.code).toBe(3);
    expect(errorLine(unknown.stderr)).toMatch(
      /^worklease: NOT_FOUND: work item 'job\/none' has no lease to hold/,
    );
    const tooLong = await run(['history', PG_URL, 'job/poison', '--limit', '1001', '--schema', ns]);
    expect(tooLong.code).toBe(2);
    expect((await backend.admin.get('job/poison'))?.hold).toBeNull();
    expect(await backend.admin.audit({ workId: 'job/poison' })).toEqual([]);
  });

  it('hold parks the item (acquire fails ON_HOLD, the holder is not fenced), show says so, unhold lifts it', async () => {
    const held = await run([
      'hold',
      PG_URL,
      'job/poison',
      '--reason',
      'crashes every worker',
      '--operator',
      'alice',
      '--schema',
      ns,
    ]);
    expect(held.code).toBe(0);
    expect(held.stdout).toMatch(/job\/poison is on hold: acquire and claim fail ON_HOLD/);
    expect(await codeOf(backend.acquire('job/poison', 'w-3', 600_000))).toBe('ON_HOLD');
    // The live lease goes on.
    second = await backend.renew(second, 600_000);

    const again = await run([
      'hold',
      PG_URL,
      'job/poison',
      '--reason',
      'y',
      '--operator',
      'bob',
      '--schema',
      ns,
    ]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(
      /was already on hold \(by alice at .*: crashes every worker\); nothing changed/,
    );

    const show = await run(['show', PG_URL, 'job/poison', '--schema', ns]);
    expect(show.stdout).toMatch(/on hold\s+.* by alice: crashes every worker \(acquire fails ON_HOLD\)/);
    const showJson = JSON.parse((await run(['show', PG_URL, 'job/poison', '--json', '--schema', ns])).stdout);
    expect(showJson.lease.hold).toMatchObject({ operator: 'alice', reason: 'crashes every worker' });

    const unheld = await run([
      'unhold',
      PG_URL,
      'job/poison',
      '--reason',
      'fixed',
      '--operator',
      'alice',
      '--json',
      '--schema',
      ns,
    ]);
    expect(unheld.code).toBe(0);
    expect(JSON.parse(unheld.stdout)).toMatchObject({ workId: 'job/poison', hold: null, status: 'live' });
    const audit = await backend.admin.audit({ workId: 'job/poison' });
    expect(audit.map((a) => `${a.action} ${a.operator}`)).toEqual(['unhold alice', 'hold alice']);
  });

  it('history prints a table newest first, pages with --before, and --json parses', async () => {
    const table = await run(['history', PG_URL, 'job/poison', '--schema', ns]);
    expect(table.code).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^AT\s+WHEN\s+CHANGE\s+HOLDER\s+TOKEN\s+CHECKPOINT\s+OPERATOR\s+REASON$/);
    expect(lines.slice(1, 6).map((l) => l.split(/\s{2,}/)[2])).toEqual([
      'unheld',
      'held',
      'acquired',
      'released',
      'acquired',
    ]);
    expect(lines[1]).toMatch(new RegExp(`unheld\\s+w-2\\s+${second.fencingToken}\\s+-\\s+alice\\s+fixed$`));
    expect(lines[3]).toMatch(new RegExp(`acquired\\s+w-2\\s+${second.fencingToken}\\s+10 B`));
    expect(lines.at(-1)).toMatch(/^5 entries for job\/poison, newest first; no older entries; server time /);

    const json = JSON.parse((await run(['history', PG_URL, 'job/poison', '--json', '--schema', ns])).stdout);
    expect(json[0]).toMatchObject({
      kind: 'unheld',
      holderId: 'w-2',
      token: String(second.fencingToken),
      operator: 'alice',
      reason: 'fixed',
      checkpointBytes: null,
    });
    expect(json[4]).toMatchObject({ kind: 'acquired', holderId: 'w-1', token: String(first.fencingToken) });

    const page = await run(['history', PG_URL, 'job/poison', '--limit', '2', '--schema', ns]);
    const hint = /older: --before (\S+);/.exec(page.stdout);
    expect(hint).not.toBeNull();
    const rest = JSON.parse(
      (await run(['history', PG_URL, 'job/poison', '--before', hint![1]!, '--json', '--schema', ns])).stdout,
    );
    expect(rest.map((e: { kind: string }) => e.kind)).toEqual(['acquired', 'released', 'acquired']);

    const none = await run(['history', PG_URL, 'job/never', '--schema', ns]);
    expect(none.code).toBe(0);
    expect(none.stdout).toMatch(/^no history for job\/never on /);
  });

  it('prune --force keeps held items out and applies --history-keep', async () => {
    await backend.release(second);
    await backend.release(await backend.acquire('job/held', 'w-9', 600_000));
    await backend.admin.hold('job/held', { operator: 'alice', reason: 'keep' });
    await new Promise((r) => setTimeout(r, 20));
    const dry = JSON.parse(
      (await run(['prune', PG_URL, '--older-than', '1ms', '--json', '--schema', ns])).stdout,
    );
    expect(dry.candidates.map((c: { workId: string }) => c.workId)).toEqual(['job/poison']);
    const pruned = await run([
      'prune',
      PG_URL,
      '--older-than',
      '1ms',
      '--force',
      '--history-keep',
      '2',
      '--schema',
      ns,
    ]);
    expect(pruned.code).toBe(0);
    expect(await backend.admin.get('job/poison')).toBeNull();
    expect((await backend.admin.get('job/held'))?.hold).toMatchObject({ reason: 'keep' });
    expect((await backend.admin.history('job/poison')).map((e) => e.kind)).toEqual(['released', 'unheld']);
    expect((await backend.admin.history('job/held')).map((e) => e.kind)).toEqual(['held', 'released']);
  });
});
