/**
 * `durability.synchronousCommit` on a private PostgreSQL (initdb'd into a temporary directory,
 * loopback port) whose `synchronous_standby_names` names a standby that never connects: every
 * commit that waits for it cannot be confirmed. What the option must show (docs/durability.md):
 * - the setting reaches every pooled session ('local' commits at once on this server, 'on' waits);
 * - a commit that waits for an absent synchronous standby is never reported as a success: the call
 *   fails with BACKEND_UNAVAILABLE after callTimeoutMs (statement_timeout does not cancel that wait);
 * - such a write may or may not survive: it is invisible while the commit waits, and committed
 *   locally once the waiting session ends (here: pg_terminate_backend).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/chaos/servers.ts';
import type { LeaseBackend } from '../../src/index.ts';
import { openBackend, WorkleaseError } from '../../src/index.ts';

const LIVE = 30_000;
let dir = '';
let url = '';
const opened: LeaseBackend[] = [];

/** Runs a PostgreSQL tool as the postgres user (initdb refuses root). */
function asPostgres(command: string): void {
  execFileSync('su', ['postgres', '-c', command], { stdio: 'ignore', timeout: 60_000 });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'worklease-pg-sync-'));
  // The folder was made for this test alone; postgres must own it to run initdb in it.
  execFileSync('chown', ['postgres', dir]);
  chmodSync(dir, 0o700);
  const port = await freePort();
  asPostgres(`initdb -D ${dir}/data -A trust -U postgres`);
  writeFileSync(
    join(dir, 'data', 'postgresql.auto.conf'),
    `port = ${port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${dir}'\nsynchronous_standby_names = 'absent_standby'\n`,
  );
  asPostgres(`pg_ctl -D ${dir}/data -l ${dir}/log -w start`);
  url = `postgres://postgres@127.0.0.1:${port}/postgres`;
}, 90_000);

afterAll(async () => {
  for (const b of opened) await b.close().catch(() => {});
  if (dir !== '') {
    try {
      asPostgres(`pg_ctl -D ${dir}/data -m immediate -w stop`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});

async function open(options: Parameters<typeof openBackend>[1]): Promise<LeaseBackend> {
  const b = await openBackend(url, options);
  opened.push(b);
  return b;
}

describe('PostgreSQL synchronous_commit (a synchronous standby that never confirms)', () => {
  it('waits for the standby with "on" and fails the call, never succeeds; "local" commits at once', {
    timeout: 60_000,
  }, async () => {
    // 'local' does not wait for the standby, so this backend can migrate and write.
    const local = await open({ schema: 'sync_t', durability: { synchronousCommit: 'local' } });
    const rec = await local.acquire('local-write', 'h', LIVE);
    expect(await local.admin.get('local-write')).toMatchObject({ fencingToken: rec.fencingToken });

    const waiting = await open({
      schema: 'sync_t',
      migrate: false,
      callTimeoutMs: 1500,
      durability: { synchronousCommit: 'on' },
    });
    const started = Date.now();
    const err = await waiting.acquire('unconfirmed', 'h', LIVE).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WorkleaseError);
    expect((err as WorkleaseError).code).toBe('BACKEND_UNAVAILABLE');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
    // Reads need no commit: they still work on the waiting backend's pool.
    expect(await waiting.admin.get('local-write')).toMatchObject({ holderId: 'h' });
    // The write is not visible while its commit waits for the standby...
    expect(await local.admin.get('unconfirmed')).toBeNull();

    // ...and once the waiting session ends it is committed locally: it may survive after all.
    const admin = new pg.Client({ connectionString: url, options: '-c synchronous_commit=local' });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ n: number }>(
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE wait_event = 'SyncRep'`,
      );
      expect(rows[0]?.n).toBeGreaterThanOrEqual(1);
    } finally {
      await admin.end();
    }
    const deadline = Date.now() + 10_000;
    while ((await local.admin.get('unconfirmed')) === null && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await local.admin.get('unconfirmed')).toMatchObject({ holderId: 'h' });
  });
});
