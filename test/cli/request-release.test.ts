/**
 * `worklease request-release` and what `show` prints of a request, as a user
 * runs them (bin/worklease as a child process) on PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LeaseBackend, type LeaseRecord, openBackend } from '../../src/index.ts';
import { PG_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';
import { run } from './support.ts';

const target = { kind: 'postgres' as const, url: PG_URL };
const ns = uniqueNamespace('clirr');
let backend: LeaseBackend;
let rec: LeaseRecord;

beforeAll(async () => {
  backend = await openBackend(PG_URL, { schema: ns });
  rec = await backend.acquire('job/asked', 'w-asked', 600_000);
});
afterAll(async () => {
  await backend?.close();
  await dropNamespace(target, ns);
});

const errorLine = (stderr: string): string => {
  const lines = stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  return lines[0]!;
};

describe('worklease request-release', () => {
  it('refuses a missing token, an empty reason and a stale token; nothing is written', async () => {
    const noToken = await run(['request-release', PG_URL, 'job/asked', '--reason', 'x', '--schema', ns]);
    expect(noToken.code).toBe(2);
    expect(errorLine(noToken.stderr)).toMatch(/^worklease: INVALID_ARGUMENT: --token is required/);
    const t = String(rec.fencingToken);
    const blank = await run([
      'request-release',
      PG_URL,
      'job/asked',
      '--token',
      t,
      '--reason',
      '  ',
      '--schema',
      ns,
    ]);
    expect(blank.code).toBe(2);
    expect(errorLine(blank.stderr)).toMatch(/^worklease: INVALID_ARGUMENT: --reason must not be empty/);
    const stale = await run([
      'request-release',
      PG_URL,
      'job/asked',
      '--token',
      '7',
      '--reason',
      'x',
      '--schema',
      ns,
    ]);
    expect(stale.code).toBe(4);
    expect(errorLine(stale.stderr)).toMatch(
      /^worklease: CONFLICT: request-release of work item 'job\/asked' refused/,
    );
    const unknown = await run([
      'request-release',
      PG_URL,
      'job/none',
      '--token',
      t,
      '--reason',
      'x',
      '--schema',
      ns,
    ]);
    expect(unknown.code).toBe(3);
    expect((await backend.admin.get('job/asked'))?.releaseRequest).toBeNull();
    expect(await backend.admin.audit({ workId: 'job/asked' })).toEqual([]);
  });

  it('marks the lease with operator and reason; the holder hears it at its renew; show prints it with its age', async () => {
    const r = await run(
      [
        'request-release',
        'job/asked',
        '--token',
        String(rec.fencingToken),
        '--reason',
        'draining node 7',
        '--operator',
        'alice',
        '--schema',
        ns,
      ],
      { WORKLEASE_URL: PG_URL },
    );
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout.trim()).toBe(
      `requested release of job/asked (token ${rec.fencingToken}) from holder w-asked: it hands over at its next renew or checkpoint (operator alice, recorded in the audit log)`,
    );
    const renewed = await backend.renew(rec, 600_000);
    expect(renewed.releaseRequested).toMatchObject({ operator: 'alice', reason: 'draining node 7' });
    expect(renewed.fencingToken).toBe(rec.fencingToken);
    const [entry] = await backend.admin.audit({ workId: 'job/asked' });
    expect(entry).toMatchObject({ action: 'request-release', operator: 'alice', newToken: rec.fencingToken });

    const shown = await run(['show', PG_URL, 'job/asked', '--schema', ns]);
    expect(shown.code).toBe(0);
    const line = shown.stdout.split('\n').find((l) => l.startsWith('release requested'));
    expect(line).toMatch(
      /^release requested\s+\d{4}-\d\d-\d\dT[0-9:.]+Z \([0-9.]+ (ms|s|min) ago\) by alice: draining node 7$/,
    );
    const json = JSON.parse((await run(['show', PG_URL, 'job/asked', '--schema', ns, '--json'])).stdout);
    expect(json.lease.releaseRequest).toEqual({
      at: renewed.releaseRequested!.at.toISOString(),
      operator: 'alice',
      reason: 'draining node 7',
    });

    // Asking again changes nothing and says who asked first; --expected-token is accepted too.
    const again = await run([
      'request-release',
      PG_URL,
      'job/asked',
      '--expected-token',
      String(rec.fencingToken),
      '--reason',
      'again',
      '--operator',
      'bob',
      '--schema',
      ns,
    ]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('already requested by alice');
    expect(await backend.admin.audit({ workId: 'job/asked' })).toHaveLength(1);

    // After the holder releases, show has no request any more.
    await backend.release(rec);
    const after = await run(['show', PG_URL, 'job/asked', '--schema', ns]);
    expect(after.stdout.split('\n').find((l) => l.startsWith('release requested'))).toMatch(
      /^release requested\s+-$/,
    );
  });
});
