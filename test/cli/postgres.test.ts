/**
 * The CLI end to end on real PostgreSQL: each test spawns `bin/worklease`
 * (about 1 s of tsx start-up each, so the runs are few and each checks a lot).
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LATEST_VERSION } from '../../src/backends/sql/migrations.ts';
import { buildProgram } from '../../src/cli/program.ts';
import { type LeaseBackend, type LeaseRecord, openBackend } from '../../src/index.ts';
import { PG_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';
import { createSchemaAt } from '../support/schema.ts';
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
  expect(migrated.stdout.trim().split('\n')).toEqual([
    `created schema ${ns} at version ${LATEST_VERSION}`,
    `schema up to date on ${PG_URL}?schema=${ns} (schema ${ns})`,
  ]);

  backend = await openBackend(PG_URL, { schema: ns, migrate: false });
  // Ten minutes: the file runs for minutes, and its later cases still need these leases live.
  const acquire = async (workId: string, holder: string, state?: Uint8Array, ttlMs = 600_000) => {
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

  it('escapes bidi, zero-width and C1 characters it prints; --json still parses to the stored value', async () => {
    const rec = await backend.acquire('job/tricky', 'w-tricky', 60_000);
    records['job/tricky'] = rec;
    await backend.checkpoint(rec, enc('{"note":"\u202Eevil\u200B \u009b2J end"}'), 60_000);
    const r = await run(['show', PG_URL, 'job/tricky', '--schema', ns]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('"note": "\\u202Eevil\\u200B \\u009B2J end"');
    expect(r.stdout).not.toMatch(/[\u202E\u200B\u009B]/);
    const j = await run(['show', PG_URL, 'job/tricky', '--schema', ns, '--json']);
    expect(j.stdout).not.toMatch(/[\u202E\u200B\u009B]/);
    const body = JSON.parse(j.stdout) as { checkpoint: { decoded: { json: { note: string } } } };
    expect(body.checkpoint.decoded.json.note).toBe('\u202Eevil\u200B \u009b2J end');
  });

  it('refuses an operator name with an escape sequence (nothing is written)', async () => {
    const r = await run([
      'release',
      PG_URL,
      'job/tricky',
      '--schema',
      ns,
      '--force',
      '--expected-token',
      String(records['job/tricky']!.fencingToken),
      '--reason',
      'test',
      '--operator',
      'root\u001b[2J',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/control or invisible/);
    expect((await backend.admin.get('job/tricky'))?.ended).toBeNull();
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
    expect(errorLine(r.stderr)).toBe(
      `worklease: NOT_FOUND: no work item 'no/such' on ${PG_URL}?schema=${ns}`,
    );
  });
});

describe('worklease ls --limit and the URL grammar', () => {
  it('pages on the server and prints "N of M"; ?schema= in the URL is the same as --schema', async () => {
    const total = await backend.admin.count();
    expect(total).toBeGreaterThan(2);
    // A long stuck threshold: this file runs for minutes, and the status is not what is tested here.
    const r = await run(['ls', `${PG_URL}?schema=${ns}`, '--limit', '2', '--stuck-after', '3600000']);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines.slice(1, -1).map((l) => l.split(/\s+/)[0])).toEqual(['job/bin', 'job/json']);
    expect(lines.at(-1)).toMatch(
      new RegExp(`^2 of ${total} leases \\(first 2 by work id\\) \\(live 2\\); server time `),
    );
    // The same value both ways is fine; different values are refused before any I/O.
    const same = await run(['ls', `${PG_URL}?schema=${ns}`, '--schema', ns, '--limit', '1', '--json']);
    expect(same.code).toBe(0);
    expect((JSON.parse(same.stdout) as unknown[]).length).toBe(1);
    const clash = await run(['ls', `${PG_URL}?schema=${ns}`, '--schema', 'other']);
    expect(clash.code).toBe(2);
    expect(errorLine(clash.stderr)).toBe(
      `worklease: INVALID_ARGUMENT: option 'schema' is '${ns}' in the backend URL but 'other' in the options: give it once`,
    );
  });

  it('ls --status --limit counts the total on the server by status and reads only the pages it shows', async () => {
    // Ended leases keep their status whatever the time: the same fleet gives the same total twice.
    for (const id of ['zz/ended-1', 'zz/ended-2'])
      await backend.release(await backend.acquire(id, 'w-ended', 60_000));
    const all = await run(['ls', `${PG_URL}?schema=${ns}`, '--status', 'released,force-released']);
    expect(all.code).toBe(0);
    const n = Number(/^(\d+) leases? /m.exec(all.stdout.trim().split('\n').at(-1)!)?.[1]);
    expect(n).toBeGreaterThan(1);
    const limited = await run([
      'ls',
      `${PG_URL}?schema=${ns}`,
      '--status',
      'released,force-released',
      '--limit',
      '1',
    ]);
    expect(limited.code).toBe(0);
    const lines = limited.stdout.trim().split('\n');
    expect(lines.at(-1)).toMatch(
      new RegExp(`^1 of ${n} leases \\(first 1 by work id\\) \\((released|force-released) 1\\)`),
    );
    expect(lines[1]!.split(/\s+/)[0]).toBe(all.stdout.trim().split('\n')[1]!.split(/\s+/)[0]);
  });

  it('refuses an unknown URL option with exit 2, naming the known ones', async () => {
    const r = await run(['ls', `${PG_URL}?shema=${ns}`]);
    expect(r.code).toBe(2);
    expect(errorLine(r.stderr)).toMatch(
      /^worklease: INVALID_ARGUMENT: unknown option 'shema' in backend URL '.*' \(known for postgres: schema, callTimeoutMs, .*sslmode/,
    );
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

describe('worklease audit', () => {
  it('lists the force-release above, filtered by work id, operator and time, as text and JSON', async () => {
    const [byOperator, byWork, none, recent, old] = await Promise.all([
      run(['audit', PG_URL, '--schema', ns, '--operator', 'alice', '--json']),
      run(['audit', PG_URL, '--schema', ns, '--work-id', 'job/text']),
      run(['audit', PG_URL, '--schema', ns, '--operator', 'bob', '--json']),
      run(['audit', PG_URL, '--schema', ns, '--since', '1h', '--json']),
      run(['audit', PG_URL, '--schema', ns, '--until', '2000-01-01T00:00:00Z', '--json']),
    ]);
    // Tokens come from the server clock: the expected ones are the audit's own.
    const [stored] = await backend.admin.audit({ workId: 'job/text' });
    const oldToken = String(stored?.oldToken);
    const newToken = String(stored?.newToken);
    expect(BigInt(newToken) > BigInt(oldToken)).toBe(true);
    expect(byOperator.code).toBe(0);
    const entries = JSON.parse(byOperator.stdout) as Array<Record<string, unknown>>;
    expect(entries).toEqual([
      expect.objectContaining({
        action: 'force-release',
        workId: 'job/text',
        operator: 'alice',
        reason: 'stuck since 09:12',
        oldHolderId: 'w-text',
        oldToken,
        newToken,
      }),
    ]);
    expect(byWork.code).toBe(0);
    expect(byWork.stdout).toMatch(/^AT\s+WHEN\s+WORK ID\s+ACTION\s+OPERATOR\s+TOKEN\s+OLD HOLDER\s+REASON$/m);
    expect(byWork.stdout).toMatch(
      new RegExp(
        `job/text\\s+force-release\\s+alice\\s+${oldToken} -> ${newToken}\\s+w-text\\s+stuck since 09:12`,
      ),
    );
    expect(byWork.stdout.trim().split('\n').at(-1)).toMatch(/^1 entry, newest first; server time /);
    expect(JSON.parse(none.stdout)).toEqual([]);
    expect((JSON.parse(recent.stdout) as unknown[]).length).toBe(1);
    expect(JSON.parse(old.stdout)).toEqual([]);
  });

  it('refuses a bad time with exit 2 before any I/O', async () => {
    const r = await run(['audit', PG_URL, '--schema', ns, '--since', 'yesterday']);
    expect(r.code).toBe(2);
    expect(errorLine(r.stderr)).toMatch(
      /^worklease: INVALID_ARGUMENT: option '--since <time>' argument 'yesterday' is invalid/,
    );
  });
});

describe('worklease prune', () => {
  it('is a dry run by default; with --force it prunes ended items and keeps their fencing tokens', async () => {
    // This file runs for minutes: keep the leases that are still live well clear of their expiry,
    // so that exactly the ended ones are candidates.
    for (const rec of Object.values(records)) await backend.renew(rec, 600_000).catch(() => {});
    const now = (await backend.admin.serverTime()).getTime();
    const ended = (await backend.admin.list()).items
      .filter((i) => i.expiresAt.getTime() < now)
      .map((i) => i.workId);
    // At least: job/released (released), job/short (ran out), job/text (force-released above).
    expect(ended).toEqual(expect.arrayContaining(['job/released', 'job/short', 'job/text']));
    expect(ended).not.toContain('job/json');

    const dry = await run(['prune', PG_URL, '--schema', ns, '--older-than', '0s']);
    expect(dry.code).toBe(0);
    const listed = dry.stdout
      .trim()
      .split('\n')
      .slice(1, -1)
      .map((l) => l.split(/\s+/)[0]);
    expect(listed).toEqual(ended);
    expect(dry.stdout.trim().split('\n').at(-1)).toMatch(
      new RegExp(
        `^dry run: ${ended.length} work items ended more than 0 ms ago on .* would be pruned .*fencing tokens are kept.*add --force to prune\\.$`,
      ),
    );
    expect(await backend.admin.get('job/text')).not.toBeNull();

    const lastToken = (await backend.admin.get('job/text'))!.fencingToken;
    const done = await run(['prune', PG_URL, '--schema', ns, '--older-than', '0s', '--force', '--json']);
    expect(done.code).toBe(0);
    const body = JSON.parse(done.stdout) as {
      dryRun: boolean;
      pruned: number;
      candidates: Array<{ workId: string }>;
    };
    expect(body).toMatchObject({ dryRun: false, pruned: ended.length });
    expect(body.candidates.map((c) => c.workId)).toEqual(ended);
    expect(await backend.admin.get('job/text')).toBeNull();
    expect(await backend.admin.get('job/json')).not.toBeNull();
    // The next lease of the pruned job/text continues above its last token, never from 1.
    const again = await backend.acquire('job/text', 'w-new', 60_000);
    expect(again.fencingToken > lastToken).toBe(true);
  });

  it('needs --older-than and refuses a bad duration (exit 2)', async () => {
    const [missing, bad] = await Promise.all([
      run(['prune', PG_URL, '--schema', ns]),
      run(['prune', PG_URL, '--schema', ns, '--older-than', 'week']),
    ]);
    expect(missing.code).toBe(2);
    expect(errorLine(missing.stderr)).toMatch(/required option '--older-than <duration>' not specified/);
    expect(bad.code).toBe(2);
    expect(errorLine(bad.stderr)).toMatch(/argument 'week' is invalid\. expected a duration such as 7d/);
  });
});

describe('worklease migrate', () => {
  it('--check exits 6 when a migration is needed and creates nothing; 0 when up to date', async () => {
    const fresh = uniqueNamespace('clichk');
    const needed = await run(['migrate', '--check', `${PG_URL}?schema=${fresh}`]);
    expect(needed.code).toBe(6);
    expect(errorLine(needed.stderr)).toMatch(
      new RegExp(`^worklease: SCHEMA_MISMATCH: migration needed: schema "${fresh}" .*--schema ${fresh}`),
    );
    // Still missing: --check wrote nothing.
    await expect(openBackend(PG_URL, { schema: fresh, migrate: false })).rejects.toMatchObject({
      code: 'SCHEMA_MISMATCH',
    });
    const ok = await run(['migrate', '--check', PG_URL, '--schema', ns]);
    expect(ok.code).toBe(0);
    expect(ok.stdout.trim()).toBe(
      `schema up to date on ${PG_URL}?schema=${ns} (schema ${ns}): no migration needed`,
    );
  });

  it('says which migrations it applied to a schema of an older worklease', async () => {
    const old = uniqueNamespace('cliold');
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    try {
      // The schema as the worklease before the latest migration left it.
      await createSchemaAt(admin, old, LATEST_VERSION - 1);
      const r = await run(['migrate', PG_URL, '--schema', old]);
      expect(r).toMatchObject({ code: 0, stderr: '' });
      expect(r.stdout.trim().split('\n')).toEqual([
        `upgraded schema ${old} from version ${LATEST_VERSION - 1} to ${LATEST_VERSION} (applied migration ${LATEST_VERSION})`,
        `schema up to date on ${PG_URL}?schema=${old} (schema ${old})`,
      ]);
      const { rows } = await admin.query(`SELECT max(version)::int AS v FROM "${old}".schema_migrations`);
      expect(rows[0].v).toBe(LATEST_VERSION);
    } finally {
      await admin.query(`DROP SCHEMA IF EXISTS "${old}" CASCADE`);
      await admin.end();
    }
  });

  it('a schema newer than this worklease: exit 6 and "upgrade worklease", never "run worklease migrate"', async () => {
    const newer = uniqueNamespace('clinew');
    const created = await run(['migrate', PG_URL, '--schema', newer]);
    expect(created.code).toBe(0);
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    try {
      await admin.query(`INSERT INTO "${newer}".schema_migrations (version, name) VALUES ($1, 'future')`, [
        LATEST_VERSION + 1,
      ]);
      for (const args of [['ls'], ['migrate', '--check'], ['migrate']]) {
        const r = await run([...args, PG_URL, '--schema', newer]);
        expect(r.code, args.join(' ')).toBe(6);
        const line = errorLine(r.stderr);
        expect(line, args.join(' ')).toMatch(/newer than this worklease .*; upgrade worklease$/);
        expect(line, args.join(' ')).not.toContain('migration needed');
        expect(line, args.join(' ')).not.toContain('run `worklease migrate');
      }
    } finally {
      await admin.query(`DROP SCHEMA IF EXISTS "${newer}" CASCADE`);
      await admin.end();
    }
  });

  it('prints the schema given in the URL', async () => {
    const r = await run(['migrate', `${PG_URL}?schema=${ns}`]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(`schema up to date on ${PG_URL}?schema=${ns} (schema ${ns})`);
  });
});

describe('connection failures: one line, their own exit status', () => {
  it("unknown database: exit 9 with the server's words", async () => {
    const db = uniqueNamespace('nodb');
    const r = await run(['ls', PG_URL.replace(/\/[^/]*$/, `/${db}`)]);
    expect(r.code).toBe(9);
    expect(errorLine(r.stderr)).toMatch(
      new RegExp(
        `^worklease: NOT_FOUND: connecting failed on .*/${db}\\?schema=worklease: database "${db}" does not exist — check the database name`,
      ),
    );
  });

  it("unknown role: exit 10 with the server's words", async () => {
    const role = uniqueNamespace('norole');
    const r = await run(['ls', PG_URL.replace(/\/\/[^@/]*@/, `//${role}@`)]);
    expect(r.code).toBe(10);
    expect(errorLine(r.stderr)).toMatch(
      new RegExp(
        `^worklease: FORBIDDEN: connecting failed on .*: role "${role}" does not exist — check the user and password`,
      ),
    );
  });

  it('DNS failure: exit 11 naming ENOTFOUND', async () => {
    const r = await run(['ls', 'postgres://postgres@nohost.invalid:5432/test', '--timeout', '5000']);
    expect(r.code).toBe(11);
    expect(errorLine(r.stderr)).toMatch(
      /^worklease: BACKEND_UNAVAILABLE: .*ENOTFOUND nohost\.invalid.* — check the host name/,
    );
  });
});

describe('read-only commands on a PGlite directory that does not exist', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'wl-cli-ro-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('ls, show, watch and audit fail with exit 9 and create nothing', async () => {
    const url = `pglite://${join(dir, 'missing')}`;
    const results = await Promise.all([
      run(['ls', url]),
      run(['show', url, 'job/1']),
      run(['watch', url]),
      run(['audit', url]),
    ]);
    for (const r of results) {
      expect(r.code).toBe(9);
      expect(errorLine(r.stderr)).toBe(
        `worklease: NOT_FOUND: no PGlite database in ${join(dir, 'missing')}; create it with \`worklease migrate ${url} --schema worklease\` — check the database name (the path) in the URL`,
      );
    }
    expect(existsSync(join(dir, 'missing'))).toBe(false);
  });
});

describe('failures', () => {
  it('exits 12 quickly on a refused connection, without leaking the password; --debug adds the stack', async () => {
    const r = await run(['ls', 'postgres://postgres:hunter2@127.0.0.1:1/x', '--timeout', '2000', '--debug']);
    expect(r.code).toBe(12);
    expect(r.ms).toBeLessThan(15_000);
    const [first, ...rest] = r.stderr.trim().split('\n');
    expect(first).toMatch(
      /^worklease: BACKEND_UNAVAILABLE: .*postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/x.*ECONNREFUSED.*nothing listens there/,
    );
    expect(rest.join('\n')).toMatch(/\n\s+at /);
    expect(r.stderr).not.toContain('hunter2');
  });

  it('exits 6 with the migrate hint when the schema is missing (no migration by ls)', async () => {
    const missing = uniqueNamespace('nope');
    const r = await run(['ls', PG_URL, '--schema', missing]);
    expect(r.code).toBe(6);
    // The hint is a CLI command with the flag, not library advice.
    expect(errorLine(r.stderr)).toBe(
      `worklease: SCHEMA_MISMATCH: schema "${missing}" on ${PG_URL}?schema=${missing} has no worklease tables; run \`worklease migrate ${PG_URL} --schema ${missing}\` to create or upgrade it`,
    );
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

  it('prints ownership changes only, says so, and refuses the heartbeat kinds', async () => {
    const watch = start(['watch', PG_URL, '--schema', ns, '--max-interval', '200']);
    try {
      const [started] = await watch.waitFor(/watching postgres:.*$/m, 'stderr');
      expect(started).toContain('renews and checkpoints are not in the change feed');
      let rec = await backend.acquire('job/beats', 'w-beats', 30_000);
      rec = await backend.renew(rec, 30_000);
      await backend.checkpoint(rec, new TextEncoder().encode('{}'), 30_000);
      await backend.release(rec);
      await watch.waitFor(/job\/beats {2}released/m);
      const lines = watch
        .stdout()
        .split('\n')
        .filter((l) => l.includes('job/beats'));
      // The renew and the checkpoint are not ownership changes (and, after issue 14, not in the feed).
      expect(lines.map((l) => l.split('  ')[2])).toEqual(['acquired', 'released']);
    } finally {
      expect(await watch.stop()).toBe(0);
    }
    const bad = await run(['watch', PG_URL, '--schema', ns, '--kind', 'acquired,renewed']);
    expect(bad.code).toBe(2);
    expect(errorLine(bad.stderr)).toBe(
      "worklease: INVALID_ARGUMENT: 'renewed' is not in the change feed: it carries ownership changes only (acquired, released, force-released, release-requested, pruned); a lease's last heartbeat and checkpoint are in 'worklease show' and the console",
    );
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
      // The global options its examples use are listed in its own help.
      expect(text, cmd.name()).toContain('Global Options:');
      for (const flag of ['--schema <name>', '--key-prefix <prefix>', '--timeout <ms>', '--debug']) {
        expect(text, `${cmd.name()} ${flag}`).toContain(flag);
      }
    }
    expect(program.commands.map((c) => c.name())).toEqual(
      expect.arrayContaining([
        'migrate',
        'ls',
        'show',
        'release',
        'audit',
        'prune',
        'watch',
        'serve',
        'demo',
      ]),
    );
    for (const code of [
      '8  port in use',
      '9  unknown database',
      '10 authentication failed',
      '11 host name does not resolve',
      '12 connection refused',
    ]) {
      expect(root).toContain(code);
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
  it('never prints a given token, and answers an authorised API call', async () => {
    const token = randomBytes(32).toString('hex');
    const serve = start(['serve', '--connect', PG_URL, '--schema', ns, '--port', '0'], {
      WORKLEASE_TOKEN: token,
    });
    try {
      const [, base] = await serve.waitFor(/open: (http:\/\/127\.0\.0\.1:\d+\/)$/m);
      expect(serve.stdout()).not.toContain(token);
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

describe('worklease serve: port errors', () => {
  let taken: Server;
  let port: number;
  beforeAll(async () => {
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', () => resolve()));
    port = (taken.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => taken.close(resolve));
  });

  it('a port in use: exit 8 and the way out (--port 0), for serve and before the demo starts its backend', async () => {
    const [serve, demo] = await Promise.all([
      run(['serve', '--connect', PG_URL, '--schema', ns, '--port', String(port)]),
      run(['demo', '--port', String(port)]),
    ]);
    for (const r of [serve, demo]) {
      expect(r.code).toBe(8);
      expect(errorLine(r.stderr)).toBe(
        `worklease: INVALID_ARGUMENT: cannot serve the console on 127.0.0.1:${port}: the port is in use (EADDRINUSE) — stop the other process, or use another --port (--port 0 picks a free one)`,
      );
    }
  });

  it('an invalid port: exit 2 naming --port, not an internal error', async () => {
    const r = await run(['serve', '--connect', PG_URL, '--port', '99999']);
    expect(r.code).toBe(2);
    expect(errorLine(r.stderr)).toBe(
      "worklease: INVALID_ARGUMENT: option '--port <port>' argument '99999' is invalid. expected a port from 0 to 65535 (0 picks a free one).",
    );
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
      let groupIds: string[] = [];
      // The demo's consumer group (3 members, 9 partitions) beside the fleet's own work items.
      const inGroup = (id: string) => id.startsWith('group:ingest:member:') || id.startsWith('demo/ingest-p');
      while (Date.now() < deadline && (count < 6 || groupIds.length < 12)) {
        await new Promise((r) => setTimeout(r, 300));
        const b = await openBackend(PG_URL, { schema: demoNs, migrate: false }).catch(() => null);
        if (b === null) continue;
        const ids = (await b.admin.list()).items.map((i) => i.workId);
        await b.close();
        count = ids.filter((id) => !inGroup(id)).length;
        groupIds = ids.filter(inGroup);
      }
      expect(count).toBeGreaterThanOrEqual(6);
      expect(count).toBeLessThanOrEqual(12);
      expect(groupIds).toHaveLength(12);
    } finally {
      expect(await demo.stop()).toBe(0);
    }
  });
});
