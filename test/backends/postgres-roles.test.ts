/**
 * Least privilege on the real server: a migration role that creates and upgrades the schema, and a
 * runtime role with only the grants docs/postgres.md lists, which opens the up-to-date schema with
 * the default options (nothing to migrate: nothing created), runs a lease cycle and every read
 * the console makes. A missing grant is FORBIDDEN naming it; the CLI exits 13 for it, not 10.
 * Role names are unique per run and dropped after.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LeaseBackend } from '../../src/index.ts';
import { openBackend } from '../../src/index.ts';
import { run } from '../cli/support.ts';
import { codeOf, PG_URL } from '../support/backends.ts';

const tag = randomBytes(4).toString('hex');
const MIGRATOR = `wl_migrate_${tag}`;
const RUNTIME = `wl_app_${tag}`;
const SCHEMA = `roles_${tag}`;
const DATABASE = new URL(PG_URL).pathname.slice(1);
const as = (role: string): string => PG_URL.replace(/\/\/[^@/]*@/, `//${role}@`);
const opened: LeaseBackend[] = [];
let admin: pg.Client;

/** The runtime role's grants, as docs/postgres.md lists them (run by the schema's owner). */
function runtimeGrants(schema: string, role: string): string[] {
  const s = `"${schema}"`;
  return [
    `GRANT USAGE ON SCHEMA ${s} TO ${role}`,
    `GRANT SELECT ON ${s}.schema_migrations TO ${role}`,
    `GRANT SELECT, INSERT, UPDATE ON ${s}.leases TO ${role}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON ${s}.lease_states TO ${role}`,
    `GRANT SELECT, INSERT ON ${s}.audit TO ${role}`,
    `GRANT SELECT, INSERT, DELETE ON ${s}.history TO ${role}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON ${s}.handoff_states TO ${role}`,
  ];
}

beforeAll(async () => {
  admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE ROLE ${MIGRATOR} LOGIN`);
  await admin.query(`CREATE ROLE ${RUNTIME} LOGIN`);
  await admin.query(`GRANT CONNECT, CREATE ON DATABASE "${DATABASE}" TO ${MIGRATOR}`);
  await admin.query(`GRANT CONNECT ON DATABASE "${DATABASE}" TO ${RUNTIME}`);
});

afterAll(async () => {
  for (const b of opened) await b.close().catch(() => {});
  await admin.query(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`);
  for (const role of [RUNTIME, MIGRATOR]) {
    await admin.query(`DROP OWNED BY ${role}`).catch(() => {});
    await admin.query(`DROP ROLE IF EXISTS ${role}`);
  }
  await admin.end();
});

async function open(url: string, options: Parameters<typeof openBackend>[1] = {}): Promise<LeaseBackend> {
  const b = await openBackend(url, { schema: SCHEMA, ...options });
  opened.push(b);
  return b;
}

describe('PostgreSQL with a migration role and a least-privilege runtime role', () => {
  it('the runtime role opens an up-to-date schema and runs a lease cycle and the console reads', async () => {
    // The migration role creates the schema (and owns it), then grants the runtime role its share.
    const migrated = await open(as(MIGRATOR));
    await migrated.close();
    const owner = new pg.Client({ connectionString: as(MIGRATOR) });
    await owner.connect();
    try {
      for (const grant of runtimeGrants(SCHEMA, RUNTIME)) await owner.query(grant);
    } finally {
      await owner.end();
    }

    // Default options (migrate: true): the schema is up to date, so nothing needs CREATE.
    const b = await open(as(RUNTIME));
    const rec = await b.acquire('job-1', 'worker', 30_000);
    await b.checkpoint(rec, new TextEncoder().encode('{"n":1}'), 30_000);
    const renewed = await b.renew(rec, 30_000);
    expect((await b.readCheckpoint(renewed)).state).toEqual(new TextEncoder().encode('{"n":1}'));
    await b.release(renewed);
    const again = await b.acquire('job-1', 'worker-2', 30_000);

    // What the console reads, and an operator's force-release.
    const cursor = await b.admin.changeCursor();
    expect((await b.admin.list()).items.map((i) => i.workId)).toEqual(['job-1']);
    expect(await b.admin.count()).toBe(1);
    expect(await b.admin.get('job-1')).toMatchObject({ holderId: 'worker-2', cleanHandoff: true });
    expect((await b.admin.readState('job-1'))?.size).toBe(7);
    expect(await b.admin.serverTime()).toBeInstanceOf(Date);
    expect(await b.admin.serverVersion()).toMatch(/^\d+/);
    await b.admin.forceRelease('job-1', {
      expectedToken: again.fencingToken,
      operator: 'op',
      reason: 'test',
    });
    expect((await b.admin.changes({ cursor })).changes.map((c) => c.kind)).toContain('force-released');
    expect((await b.admin.audit()).map((e) => e.action)).toEqual(['force-release']);
    // History and holds (docs/history.md) with the runtime grants.
    expect(new TextDecoder().decode((await b.admin.handoffCheckpoint('job-1'))?.bytes)).toBe('{"n":1}');
    await b.admin.hold('job-1', { operator: 'op', reason: 'poison' });
    expect(await codeOf(b.acquire('job-1', 'worker-3', 30_000))).toBe('ON_HOLD');
    await b.admin.unhold('job-1', { operator: 'op', reason: 'fixed' });
    expect((await b.admin.history('job-1')).map((e) => e.kind)).toEqual([
      'unheld',
      'held',
      'force-released',
      'acquired',
      'released',
      'acquired',
    ]);
    expect(await b.admin.prune({ olderThanMs: 0, history: { olderThanMs: 0 } })).toBe(1);
    expect(await b.admin.history('job-1')).toEqual([]);

    // Nothing was created by the runtime role: the schema and every table are the migration role's.
    const { rows } = await admin.query<{ owner: string }>(
      `SELECT DISTINCT pg_get_userbyid(relowner) AS owner FROM pg_class WHERE relnamespace = $1::regnamespace`,
      [SCHEMA],
    );
    expect(rows.map((r) => r.owner)).toEqual([MIGRATOR]);

    // The CLI's reads with the runtime role.
    const ls = await run(['ls', `${as(RUNTIME)}?schema=${SCHEMA}`]);
    expect(ls.code, ls.stderr).toBe(0);
  });

  it('a missing grant is FORBIDDEN naming it (CLI: exit 13 with a hint), not an authentication failure', async () => {
    await admin.query(`REVOKE SELECT, INSERT ON "${SCHEMA}".audit FROM ${RUNTIME}`);
    const b = await open(as(RUNTIME), { migrate: false });
    const err = await b.admin.audit().then(
      () => null,
      (e: unknown) => e as { code: string; message: string; details: Record<string, unknown> },
    );
    expect(err).toMatchObject({
      code: 'FORBIDDEN',
      details: {
        code: '42501',
        reason: 'privilege',
        grant: expect.stringMatching(/^GRANT SELECT.* ON TABLE audit/),
      },
    });
    expect(err?.message).toMatch(/permission denied for table audit; the role needs: GRANT SELECT/);

    const cli = await run(['audit', `${as(RUNTIME)}?schema=${SCHEMA}`]);
    expect(cli.code).toBe(13);
    expect(cli.stderr).toMatch(
      /^worklease: FORBIDDEN: .*permission denied for table audit.* — logged in, but the role lacks that grant/m,
    );

    // A schema that needs migrating, opened by the runtime role: the CREATE it lacks is named.
    const fresh = await openBackend(as(RUNTIME), { schema: `${SCHEMA}_new` }).then(
      () => null,
      (e: unknown) => e as { code: string; message: string },
    );
    expect(fresh).toMatchObject({ code: 'FORBIDDEN' });
    expect(fresh?.message).toMatch(
      /permission denied for database .*GRANT CONNECT|permission denied for database/,
    );
  });
});
