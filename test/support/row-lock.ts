/**
 * Another session's lock on one lease row (PostgreSQL), for tests of a call that must wait for it:
 * `holdRow` opens a transaction that locks the row with SELECT … FOR UPDATE; `waiting` resolves
 * once a statement of the backend opened on `schema` (its connections' application_name) waits
 * on a lock, read on a second session (inside a transaction pg_stat_activity does not change);
 * `query` runs more statements in the locking transaction, `commit` ends it (freeing the row),
 * and `close` ends both sessions (rolling back what is still open).
 */
import pg from 'pg';
import { expect } from 'vitest';
import { applicationName } from '../../src/backends/postgres/index.ts';
import { quoteIdent } from '../../src/backends/sql/statements.ts';
import { PG_URL } from './backends.ts';

export interface RowLock {
  waiting(): Promise<void>;
  query(text: string, values?: unknown[]): Promise<pg.QueryResult>;
  commit(): Promise<void>;
  close(): Promise<void>;
}

export async function holdRow(schema: string, workId: string): Promise<RowLock> {
  const session = new pg.Client({ connectionString: PG_URL });
  const watcher = new pg.Client({ connectionString: PG_URL });
  await session.connect();
  await watcher.connect();
  try {
    await session.query('BEGIN');
    await session.query(`SELECT 1 FROM ${quoteIdent(schema)}.leases WHERE work_id = $1 FOR UPDATE`, [workId]);
  } catch (err) {
    await session.end();
    await watcher.end();
    throw err;
  }
  return {
    async waiting() {
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
        .toBe(1);
    },
    query: (text, values) => session.query(text, values),
    async commit() {
      await session.query('COMMIT');
    },
    async close() {
      await session.end();
      await watcher.end();
    },
  };
}
