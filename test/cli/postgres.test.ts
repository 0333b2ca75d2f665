/**
 * The CLI end to end on real PostgreSQL: each test spawns `bin/worklease`
 * (about 1 s of tsx start-up each, so the runs are few and each checks a lot).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildProgram } from '../../src/cli/program.ts';
import { type LeaseBackend, type LeaseRecord, openBackend } from '../../src/index.ts';
import { PG_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';
import { run, start } from './support.ts';

// Each spawn pays ~1 s of tsx start-up, several when the machine is busy: be generous.
vi.setConfig({ testTimeout: 90_000 });
const target = { kind: 'postgres' as const, url: PG_URL };
const ns = uniqueNamespace('cli');
const demoNs = uniqueNamespace('clidemo');
const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const BINARY = new Uint8Array([0x57, 0x4c, 0x44, 0x4d, 0x00, 0x01, 0xff, 0x10, 0x80, 0x7f, 0x41, 0x42]);

let backend: LeaseBackend;
const records: Record<string, LeaseRecord> = {};

/** The single line a failing command prints. */
function errorLine(stderr: string): string {
  const lines = stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

beforeAll(async () => {
  const migrated = await run(['migrate', PG_URL, '--schema', ns]);
  expect(migrated).toMatchObject({ code: 0, stderr: '' });
  expect(migrated.stdout).toContain(`schema up to date on ${PG_URL} (schema ${ns})`);

  backend = await openBackend(PG_URL, { schema: ns, migrate: false });
  const acquire = async (workId: string, holder: string, state?: Uint8Array, ttlMs = 60_000) => {
    const r = await backend.acquire(workId, holder, ttlMs, { stepId: 'step-1' });
    if (state !== undefined) await backend.checkpoint(r, state, ttlMs);
    records[workId] = r;
    return r;
  };
  await acquire('job/json', 'w-json', enc('{"processed":3,"cursor":"c-3","lastBatch":["a","b"]}'));
  await acquire('job/text', 'w-text', enc('processed 3 of 9\nlast offset 12288\n'));
  await acquire('job/bin', 'w-bin', BINARY);
  await backend.release(await acquire('job/released', 'w-rel', enc('"done"')));
  await acquire('other/x', 'w-json');
  await acquire('job/short', 'w-short', undefined, 1);
});

afterAll(async () => {
  await backend?.close();
  await dropNamespace(target, ns);
  await dropNamespace(target, demoNs);
});

describe('worklease ls', () => {
  it('prints a table with derived statuses and a summary', async () => {
    const r = await run(['ls', PG_URL, '--schema', ns]);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^WORK ID\s+STATUS\s+HOLDER\s+TOKEN\s+EXPIRES\s+CHECKPOINT\s+STEP$/);
    expect(lines.find((l) => l.startsWith('job/json'))).toMatch(
      new RegExp(`^job/json\\s+live\\s+w-json\\s+${records['job/json']!.fencingToken}\\s+in \\d`),
    );
    expect(lines.find((l) => l.startsWith('job/released'))).toMatch(/released\s+w-rel/);
    expect(lines.find((l) => l.startsWith('job/short'))).toMatch(/expired\s+w-short/);
    expect(lines.at(-1)).toMatch(/^6 leases \(live 4, expired 1, released 1\); server time \d{4}-/);
  });

  it('filters by status and prefix, and prints JSON with string tokens and ISO times', async () => {
    const r = await run(['ls', '--status', 'live', '--prefix', 'job/', '--json', '--schema', ns], {
      WORKLEASE_URL: PG_URL,
    });
    expect(r.code).toBe(0);
    const rows = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    expect(rows.map((x) => x.workId)).toEqual(['job/bin', 'job/json', 'job/text']);
    expect(rows[1]).toMatchObject({
      workId: 'job/json',
      status: 'live',
      holderId: 'w-json',
      fencingToken: String(records['job/json']!.fencingToken),
      stepId: 'step-1',
      checkpointSize: 52,
      ended: null,
    });
    expect(rows[1]!.acquiredAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(typeof rows[1]!.version).toBe('string');
  });

  it('filters by holder and status list; refuses an unknown status with exit 2', async () => {
    const byHolder = await run([
      'ls',
      PG_URL,
      '--schema',
      ns,
      '--holder',
      'w-json',
      '--status',
      'live,expired',
      '--status',
      'released',
      '--json',
    ]);
    expect((JSON.parse(byHolder.stdout) as Array<{ workId: string }>).map((x) => x.workId)).toEqual([
      'job/json',
      'other/x',
    ]);
    const bad = await run(['ls', PG_URL, '--schema', ns, '--status', 'lively']);
    expect(bad.code).toBe(2);
    expect(errorLine(bad.stderr)).toBe(
      "worklease: INVALID_ARGUMENT: unknown status 'lively': use one of live, expiring, expired, released, stuck, force-released",
    );
  });
});

describe('worklease show', () => {
  it('shows every field and a JSON checkpoint pretty-printed (URL from WORKLEASE_URL)', async () => {
    const r = await run(['show', 'job/json', '--schema', ns], { WORKLEASE_URL: PG_URL });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^work id\s+job\/json$/m);
    expect(r.stdout).toMatch(/^status\s+live$/m);
    expect(r.stdout).toMatch(/^holder\s+w-json$/m);
    expect(r.stdout).toMatch(new RegExp(`^fencing token\\s+${records['job/json']!.fencingToken}$`, 'm'));
    expect(r.stdout).toMatch(/^step\s+step-1$/m);
    expect(r.stdout).toMatch(/^handoff\s+clean$/m);
    expect(r.stdout).toContain('--- checkpoint (bytes 0-51 of 52, shown as json) ---');
    expect(r.stdout).toContain(
      '{\n  "processed": 3,\n  "cursor": "c-3",\n  "lastBatch": [\n    "a",\n    "b"\n  ]\n}',
    );
  });

  it('shows a text checkpoint as text', async () => {
    const r = await run(['show', PG_URL, 'job/text', '--schema', ns]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('shown as text) ---\nprocessed 3 of 9\nlast offset 12288\n');
  });

  it('shows a binary checkpoint as a hex dump, and as base64 in JSON', async () => {
    const r = await run(['show', PG_URL, 'job/bin', '--schema', ns, '--json']);
    expect(r.code).toBe(0);
    const body = JSON.parse(r.stdout) as {
      lease: { fencingToken: string };
      checkpoint: { size: number; base64: string; decoded: { kind: string; text: string } };
    };
    expect(body.lease.fencingToken).toBe(String(records['job/bin']!.fencingToken));
    expect(body.checkpoint.size).toBe(BINARY.length);
    expect(Buffer.from(body.checkpoint.base64, 'base64')).toEqual(Buffer.from(BINARY));
    expect(body.checkpoint.decoded).toEqual({
      kind: 'hex',
      text: '00000000  57 4c 44 4d 00 01 ff 10  80 7f 41 42              |WLDM......AB|',
    });
  });

  it('exits 3 with one NOT_FOUND line for an unknown work id', async () => {
    const r = await run(['show', PG_URL, 'no/such', '--schema', ns]);
    expect(r.code).toBe(3);
    expect(r.stdout).toBe('');
    expect(errorLine(r.stderr)).toBe(`worklease: NOT_FOUND: no work item 'no/such' on ${PG_URL}`);
  });
});

describe('worklease release', () => {
  it('refuses without --force (exit 2, nothing written)', async () => {
    const r = await run([
      'release',
      PG_URL,
      'job/json',
      '--expected-token',
      String(records['job/json']!.fencingToken),
      '--reason',
      'x',
      '--schema',
      ns,
    ]);
    expect(r.code).toBe(2);
    expect(errorLine(r.stderr)).toMatch(
      /^worklease: INVALID_ARGUMENT: refusing to force-release 'job\/json' without --force/,
    );
    expect((await backend.admin.get('job/json'))?.fencingToken).toBe(records['job/json']!.fencingToken);
  });

  it('refuses a stale token with exit 4 and a CONFLICT line', async () => {
    const r = await run([
      'release',
      PG_URL,
      'job/json',
      '--force',
      '--expected-token',
      '7',
      '--reason',
      'stale',
      '--schema',
      ns,
    ]);
    expect(r.code).toBe(4);
    expect(errorLine(r.stderr)).toMatch(/^worklease: CONFLICT: /);
    expect((await backend.admin.get('job/json'))?.fencingToken).toBe(records['job/json']!.fencingToken);
  });

  it('force-releases with the right token: the holder is fenced and the audit log names operator and reason', async () => {
    const r = await run(
      [
        'release',
        'job/text',
        '--force',
        '--expected-token',
        String(records['job/text']!.fencingToken),
        '--reason',
        'stuck since 09:12',
        '--operator',
        'alice',
        '--schema',
        ns,
      ],
      { WORKLEASE_URL: PG_URL },
    );
    expect(r.code).toBe(0);
    const old = records['job/text']!.fencingToken;
    const now = (await backend.admin.get('job/text'))!.fencingToken;
    expect(now > old).toBe(true);
    expect(r.stdout.trim()).toBe(
      `force-released job/text: token ${old} -> ${now}; holder w-text is fenced out (operator alice, recorded in the audit log)`,
    );
    await expect(backend.renew(records['job/text']!, 1000)).rejects.toMatchObject({ code: 'FENCED' });
    const [entry] = await backend.admin.audit({ workId: 'job/text' });
    expect(entry).toMatchObject({
      operator: 'alice',
      reason: 'stuck since 09:12',
      oldToken: old,
      newToken: now,
    });
  });
});

describe('failures', () => {
  it('exits 5 quickly on an unreachable backend, without leaking the password; --debug adds the stack', async () => {
    const r = await run(['ls', 'postgres://postgres:hunter2@127.0.0.1:1/x', '--timeout', '2000', '--debug']);
    expect(r.code).toBe(5);
    expect(r.ms).toBeLessThan(15_000);
    const [first, ...rest] = r.stderr.trim().split('\n');
    expect(first).toMatch(
      /^worklease: BACKEND_UNAVAILABLE: .*postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/x/,
    );
    expect(rest.join('\n')).toMatch(/\n\s+at /);
    expect(r.stderr).not.toContain('hunter2');
  });

  it('exits 6 with the migrate hint when the schema is missing (no migration by ls)', async () => {
    const missing = uniqueNamespace('nope');
    const r = await run(['ls', PG_URL, '--schema', missing]);
    expect(r.code).toBe(6);
    expect(errorLine(r.stderr)).toMatch(/^worklease: SCHEMA_MISMATCH: .*worklease migrate/);
  });

  it('exits 2 without a URL, and for bad arguments', async () => {
    const r = await run(['show', 'job/json', '--offset', 'many']);
    expect(r.code).toBe(2);
    expect(errorLine(r.stderr)).toBe(
      "worklease: INVALID_ARGUMENT: option '--offset <bytes>' argument 'many' is invalid. expected a whole number ≥ 0.",
    );
    const noUrl = await run(['ls']);
    expect(noUrl.code).toBe(2);
    expect(errorLine(noUrl.stderr)).toMatch(/^worklease: INVALID_ARGUMENT: no backend URL/);
  });
});

describe('worklease watch', () => {
  it('prints a change made after it started', async () => {
    const watch = start(['watch', PG_URL, '--schema', ns, '--max-interval', '200']);
    try {
      await watch.waitFor(/watching postgres:/, 'stderr');
      const watched = await backend.acquire('job/watched', 'w-watch', 30_000);
      const [line] = await watch.waitFor(/^.*job\/watched.*$/m);
      expect(line).toMatch(
        new RegExp(
          `^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z {2}job/watched {2}acquired {2}holder=w-watch {2}token=${watched.fencingToken}$`,
        ),
      );
    } finally {
      expect(await watch.stop()).toBe(0);
    }
  });
});

describe('help', () => {
  it('every command has help with examples', () => {
    const program = buildProgram();
    let root = '';
    program.configureOutput({ writeOut: (s) => (root += s) });
    program.outputHelp();
    expect(root).toContain('Exit status:');
    expect(root).toContain('6  schema missing or too old');
    for (const cmd of program.commands) {
      let text = '';
      cmd.configureOutput({ writeOut: (s) => (text += s) });
      cmd.outputHelp();
      expect(text, cmd.name()).toContain(`Usage: worklease ${cmd.name()}`);
      expect(text, cmd.name()).toContain('Examples:');
    }
  });

  it('--help exits 0 through the real binary', async () => {
    const r = await run(['release', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('--expected-token <n>');
    expect(r.stdout).toContain('Examples:');
  });
});

describe('worklease serve', () => {
  it('prints a URL with a token and answers an authorised API call', async () => {
    const token = 'test-token-0123456789abcdef';
    const serve = start(['serve', '--connect', PG_URL, '--schema', ns, '--port', '0'], {
      WORKLEASE_TOKEN: token,
    });
    try {
      const [, base] = await serve.waitFor(/open: (http:\/\/127\.0\.0\.1:\d+\/)\?token=(\S+)/);
      expect(serve.stdout()).toContain(`?token=${token}`);
      const call = (auth: string) =>
        fetch(new URL('/api/call', base), {
          method: 'POST',
          headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json' },
          body: JSON.stringify({ method: 'connections.list', params: {} }),
        });
      const denied = await call('wrong-token-0123456789');
      expect(denied.status).toBe(401);
      const ok = await call(token);
      expect(ok.status).toBe(200);
      const body = (await ok.json()) as { ok: boolean; result: Array<{ url: string; kind: string }> };
      expect(body.ok).toBe(true);
      expect(body.result).toHaveLength(1);
      expect(body.result[0]).toMatchObject({ kind: 'postgres' });
    } finally {
      expect(await serve.stop()).toBe(0);
    }
  });
});

describe('worklease demo', () => {
  it('runs a fleet on Postgres that ls can see, and stops cleanly on Ctrl-C', async () => {
    const demo = start([
      'demo',
      '--backend',
      PG_URL,
      '--schema',
      demoNs,
      '--no-serve',
      '--workers',
      '6',
      '--items',
      '12',
      '--tick',
      '150',
      '--ttl',
      '2000',
    ]);
    try {
      await demo.waitFor(/demo fleet: 6 workers on postgres:/);
      const deadline = Date.now() + 15_000;
      let count = 0;
      while (Date.now() < deadline && count < 6) {
        await new Promise((r) => setTimeout(r, 300));
        const b = await openBackend(PG_URL, { schema: demoNs, migrate: false }).catch(() => null);
        if (b === null) continue;
        count = (await b.admin.list()).items.length;
        await b.close();
      }
      expect(count).toBeGreaterThanOrEqual(6);
      expect(count).toBeLessThanOrEqual(12);
    } finally {
      expect(await demo.stop()).toBe(0);
    }
  });
});
