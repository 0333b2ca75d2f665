/**
 * `node --import tsx bench/console-load-profile.ts [--leases N]` — where the console's initial fleet
 * load spends its time on PostgreSQL: the backend read alone (admin.list pages) against the read plus
 * the build of the fleet index (FleetRows), and the heap per lease once built. Seeds a private schema
 * (one INSERT … SELECT), drops it at the end. Prints the load average.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { DEFAULT_THRESHOLDS } from '../src/console/api.ts';
import { FleetRows } from '../src/console/fleet/rows.ts';
import { openBackend } from '../src/index.ts';
import { benchArgs, intArg } from './args.ts';

const args = benchArgs(import.meta.filename, {
  leases: { type: 'string', default: '100000' },
  pg: {
    type: 'string',
    default: process.env.WORKLEASE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  },
});
const N = intArg(import.meta.filename, 'leases', args.leases);
const url = String(args.pg);
const load = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const schema = `bench_prof_${randomBytes(4).toString('hex')}`;

async function seed(): Promise<void> {
  const b = await openBackend(url, { schema });
  await b.acquire('tmpl', 'w-0', 3_600_000);
  await b.close();
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const cols = (
    await c.query(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'leases'
       AND column_name NOT IN ('work_id', 'holder_id', 'token', 'expires_at', 'ttl_ms') ORDER BY ordinal_position`,
      [schema],
    )
  ).rows.map((r: { column_name: string }) => r.column_name);
  await c.query(
    `INSERT INTO "${schema}".leases (work_id, holder_id, token, expires_at, ttl_ms, ${cols.map((x) => `"${x}"`).join(', ')})
     SELECT 'job-' || lpad(g::text, 7, '0'), 'w-' || (g % 500), t.token + g, now() + interval '1 hour', 3600000,
            ${cols.map((x) => `t."${x}"`).join(', ')}
     FROM "${schema}".leases t, generate_series(0, $1::integer - 1) g WHERE t.work_id = 'tmpl'`,
    [N],
  );
  await c.query(`DELETE FROM "${schema}".leases WHERE work_id = 'tmpl'`);
  await c.query(`ANALYZE "${schema}".leases`);
  await c.end();
}

await seed();
try {
  const backend = await openBackend(`${url}?schema=${schema}`);
  const admin = backend.admin;
  for (let round = 0; round < 3; round++) {
    let t0 = performance.now();
    let cursor: string | null = null;
    let n = 0;
    do {
      const page = await admin.list({ cursor, limit: 10_000 });
      n += page.items.length;
      cursor = page.nextCursor;
    } while (cursor !== null);
    const readMs = performance.now() - t0;
    global.gc?.();
    const mem = (): number => process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
    const heap0 = mem();
    t0 = performance.now();
    const rows = new FleetRows(DEFAULT_THRESHOLDS, Date.now());
    let buildMs = 0;
    cursor = null;
    do {
      const page = await admin.list({ cursor, limit: 10_000 });
      const b0 = performance.now();
      for (const info of page.items) rows.applySnapshotRow(info, null);
      buildMs += performance.now() - b0;
      cursor = page.nextCursor;
    } while (cursor !== null);
    const allMs = performance.now() - t0;
    global.gc?.();
    const perLease = (mem() - heap0) / rows.store.size;
    console.log(
      `round ${round}: ${n} rows; read alone ${readMs.toFixed(0)} ms (${((n / readMs) * 1000).toFixed(0)} rows/s); ` +
        `read + index ${allMs.toFixed(0)} ms, of which index ${buildMs.toFixed(0)} ms; ` +
        `heap + typed arrays ${perLease.toFixed(0)} B/lease; rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB; load ${load()}`,
    );
  }
  await backend.close();
} finally {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await c.end();
}
