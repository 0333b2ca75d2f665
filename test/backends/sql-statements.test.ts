/**
 * The lease calls' SQL as the server gets it, one file per statement under __snapshots__/: a change
 * to a statement shows in review as a change of its .sql file (statements/*.ts build them).
 * `vitest run -u` rewrites the files after an intended change.
 */
import { describe, expect, it } from 'vitest';
import { buildStatements } from '../../src/backends/sql/statements.ts';

const sql = buildStatements('worklease', { serverVersionNum: 150000 });

describe('lease call statements (schema worklease, PostgreSQL 15)', () => {
  for (const [file, statement] of [
    ['acquire', sql.acquire],
    ['checkpoint', sql.checkpoint],
    ['renew', sql.renew],
    ['release', sql.release],
    ['read-checkpoint', sql.readCheckpoint],
  ] as const) {
    it(`${file}: the expanded statement`, async () => {
      await expect(`-- ${statement.name}\n${statement.text.trim()}\n`).toMatchFileSnapshot(
        `./__snapshots__/${file}.sql`,
      );
    });
  }

  it('every lease call is named within the backend and carries its schema in the text only', () => {
    for (const s of [sql.acquire, sql.checkpoint, sql.renew, sql.release, sql.readCheckpoint]) {
      expect(s.hot).toBe(true);
      expect(s.text).toContain('"worklease".');
    }
    // The deadline: checked on both branches of the upsert, before anything is written.
    expect(sql.acquire.text.match(/acquire_late\(\$5::float8\)/g)).toHaveLength(2);
  });
});
