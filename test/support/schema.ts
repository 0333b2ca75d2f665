/** PostgreSQL schemas as an older worklease left them, for the tests of an upgrade. */
import type pg from 'pg';
import { MIGRATIONS } from '../../src/backends/sql/migrations.ts';

/**
 * Creates `schema` as the migrations up to `version` left it, recorded in its schema_migrations
 * table as the runner does, so that opening it upgrades it. Returns the quoted name.
 */
export async function createSchemaAt(admin: pg.Client, schema: string, version: number): Promise<string> {
  const s = `"${schema.replaceAll('"', '""')}"`;
  await admin.query(`CREATE SCHEMA ${s}`);
  await admin.query(
    `CREATE TABLE ${s}.schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
       applied_at timestamptz NOT NULL DEFAULT clock_timestamp())`,
  );
  for (const m of MIGRATIONS.filter((x) => x.version <= version)) {
    await admin.query(m.sql(s));
    await admin.query(`INSERT INTO ${s}.schema_migrations (version, name) VALUES ($1, $2)`, [
      m.version,
      m.name,
    ]);
  }
  return s;
}
