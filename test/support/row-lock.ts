/**
 * Another session's lock on one lease row (PostgreSQL), for tests of a call that must wait for it:
 * `holdRow` opens a transaction that locks the row with SELECT … FOR UPDATE; `waiting` resolves
 * once `count` statements of the backend opened on `schema` (its connections' application_name)
 * wait on a lock, read on a second session (inside a transaction pg_stat_activity does not
 * change); `query` runs more statements in the locking transaction, `commit` / `rollback` end it
 * (either frees the row), and `close` ends both sessions (rolling back what is still open).
 */
import pg from 'pg';
import { expect } from 'vitest';
import { applicationName } from '../../src/backends/postgres/index.ts';
import { PG_URL } from './backends.ts';

export interface RowLock {
  waiting(count?: number): Promise<void>;
  query(text: string, values?: unknown[]): Promise<pg.QueryResult>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  close(): Promise<void>;
}

export async function holdRow(schema: string, workId: string): Promise<RowLock> {
  const session = new pg.Client({ connectionString: PG_URL });
  const watcher = new pg.Client({ connectionString: PG_URL });
  await session.connect();
  await watcher.connect();
  try {
    await session.query('BEGIN');
    await session.query(
      `SELECT 1 FROM "${schema.replaceAll('"', '""')}".leases WHERE work_id = $1 FOR UPDATE`,
      [workId],
    );
  } catch (err) {
    await session.end();
    await watcher.end();
    throw err;
  }
  return {
    async waiting(count = 1) {
      await expect
        .poll(
          async () =>
            (
              await watcher.query(
                `SELECT count(*)::int AS n FROM pg_stat_activity
                 WHERE application_name = $1 AND wait_event_type = 'Lock'`,
                [applicationName(schema)],
              )
            ).rows[0].n,
          { timeout: 5000 },
        )
        .toBe(count);
    },
    query: (text, values) => session.query(text, values),
    async commit() {
      await session.query('COMMIT');
    },
    async rollback() {
      await session.query('ROLLBACK');
    },
    async close() {
      await session.end();
      await watcher.end();
    },
  };
}
