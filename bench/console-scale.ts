/**
 * `npm run bench:console-scale` — the console server's fleet index at 10 000, 100 000 and
 * 1 000 000 leases (issue 43), on PostgreSQL and Redis, through the real console service:
 *
 * - first rows: from the service's start to the first `fleet.view` answer with rows (the index
 *   answers while it loads, marked loading);
 * - whole-fleet counts: to the first answer whose `loading` is null (counts exact), and to the
 *   first answer carrying the backend's aggregate counts (`loading.counted`, exact at their time);
 * - view queries: p50 / p95 of `fleet.view` (limit 100) for a search, a status filter, a holder
 *   filter, a work-id prefix, sort by expiry and by holder, each round interleaved; the first
 *   query of each sort (which builds that order) is printed apart;
 * - heartbeat checks: the interval, and the last checks' duration and rows read (due + visible);
 * - serve RSS after a GC (this process: the service, plus the bench's own small client);
 * - idle load: the console's calls per second to the backend over 10 s idle (`callsPerSecond`).
 *
 * The fleet is seeded fast: PostgreSQL by one INSERT … SELECT generate_series cloning one
 * acquired row into the lease table (tokens, holders and expiries varied); Redis through the
 * public `acquire` at high concurrency (the connection pipelines). 1 in 100 leases has a 20 s
 * ttl so checks have due rows; the rest 1 h. 500 holders. The load average is printed per size.
 * Everything created is removed at the end.
 *
 * Usage: npm run bench:console-scale -- [--backends postgres,redis] [--sizes 10000,100000,1000000]
 *        [--rounds 15] [--pg <url>] [--redis <url>]
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { createConsoleService } from '../src/console/service.ts';
import { openBackend } from '../src/index.ts';
import { benchArgs, intArg } from './args.ts';

const args = benchArgs(import.meta.filename, {
  backends: { type: 'string', default: 'postgres,redis' },
  sizes: { type: 'string', default: '10000,100000,1000000' },
  rounds: { type: 'string', default: '15' },
  pg: {
    type: 'string',
    default: process.env.WORKLEASE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  },
  redis: { type: 'string', default: process.env.WORKLEASE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379' },
});
const ROUNDS = intArg(import.meta.filename, 'rounds', args.rounds);
const SIZES = String(args.sizes)
  .split(',')
  .map((s) => intArg(import.meta.filename, 'sizes', s));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};
const load = (): string => {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return 'unknown';
  }
};
const id = (i: number): string => `job-${String(i).padStart(7, '0')}`;

async function seedPostgres(url: string, schema: string, n: number): Promise<void> {
  const backend = await openBackend(url, { schema });
  try {
    await backend.acquire('tmpl', 'w-0', 3_600_000);
  } finally {
    await backend.close();
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const cols = (
      await client.query(
        `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'leases'
         AND column_name NOT IN ('work_id', 'holder_id', 'token', 'expires_at', 'ttl_ms') ORDER BY ordinal_position`,
        [schema],
      )
    ).rows.map((r: { column_name: string }) => r.column_name);
    const list = cols.map((c) => `"${c}"`).join(', ');
    await client.query(
      `INSERT INTO "${schema}".leases (work_id, holder_id, token, expires_at, ttl_ms, ${list})
       SELECT 'job-' || lpad(g::text, 7, '0'), 'w-' || (g % 500), t.token + g,
              CASE WHEN g % 100 = 0 THEN now() + interval '20 seconds' ELSE now() + interval '1 hour' END,
              CASE WHEN g % 100 = 0 THEN 20000 ELSE 3600000 END, ${cols.map((c) => `t."${c}"`).join(', ')}
       FROM "${schema}".leases t, generate_series(0, $1::integer - 1) g WHERE t.work_id = 'tmpl'`,
      [n],
    );
    await client.query(`DELETE FROM "${schema}".leases WHERE work_id = 'tmpl'`);
    await client.query(`ANALYZE "${schema}".leases`);
  } finally {
    await client.end();
  }
}

async function seedRedis(url: string, keyPrefix: string, n: number): Promise<void> {
  const backend = await openBackend(url, { keyPrefix });
  try {
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < n; i = next++) {
        await backend.acquire(id(i), `w-${i % 500}`, i % 100 === 0 ? 20_000 : 3_600_000);
      }
    };
    await Promise.all(Array.from({ length: 512 }, worker));
  } finally {
    await backend.close();
  }
}

async function dropRedis(url: string, keyPrefix: string): Promise<void> {
  const { Redis } = await import('ioredis');
  const r = new Redis(url);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await r.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
}

async function dropPostgres(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

const QUERIES = {
  search: { filter: { search: '12345' } },
  'status filter': { filter: { statuses: ['expiring', 'expired'] } },
  holder: { filter: { holder: 'w-42' } },
  prefix: { filter: { workIdPrefix: 'job-00051' } },
  'sort expiry': { sort: { column: 'expiresAt', dir: 'desc' } },
  'sort holder': { sort: { column: 'holderId', dir: 'asc' } },
  'sort token, page 2': { sort: { column: 'fencingToken', dir: 'asc' }, offset: 100 },
} as const;

async function measure(kind: 'postgres' | 'redis', url: string, n: number): Promise<void> {
  const ns = `bench_scale_${randomBytes(4).toString('hex')}`;
  const s0 = performance.now();
  if (kind === 'postgres') await seedPostgres(url, ns, n);
  else await seedRedis(url, ns, n);
  const seeded = performance.now() - s0;
  const param = kind === 'postgres' ? 'schema' : 'keyPrefix';
  global.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const t0 = performance.now();
  const service = createConsoleService({ connections: [{ name: kind, url: `${url}?${param}=${ns}` }] });
  try {
    const cid = service.connections()[0]!.id;
    let firstRows = Number.NaN;
    let counted = Number.NaN;
    let shownLoading = 0;
    let aggregate = Number.NaN;
    const tenths: number[] = [];
    for (;;) {
      const v = await service.call('fleet.view', { connectionId: cid, limit: 100 }).catch(() => null);
      if (v !== null && v.rows.length > 0 && Number.isNaN(firstRows)) firstRows = performance.now() - t0;
      if (v !== null && v.loading !== null && v.rows.length > 0) shownLoading++;
      if (v?.loading?.counted !== undefined && Number.isNaN(aggregate)) aggregate = performance.now() - t0;
      // When the index passed each tenth of the fleet: the load's rate early and late.
      const read = v === null ? 0 : v.loading === null ? v.counts.total : v.loading.read;
      while (tenths.length < 10 && read >= ((tenths.length + 1) * n) / 10)
        tenths.push(performance.now() - t0);
      if (v !== null && v.loading === null && v.counts.total >= n) {
        counted = performance.now() - t0;
        break;
      }
      if (performance.now() - t0 > 600_000) throw new Error('the index did not load within 10 minutes');
      await sleep(20);
    }
    const firsts: Record<string, number> = {};
    const times: Record<string, number[]> = {};
    for (let r = 0; r < ROUNDS; r++) {
      for (const [name, q] of Object.entries(QUERIES)) {
        const q0 = performance.now();
        await service.call('fleet.view', { connectionId: cid, limit: 100, ...q } as never);
        const ms = performance.now() - q0;
        if (r === 0) firsts[name] = ms;
        else {
          times[name] ??= [];
          times[name].push(ms);
        }
      }
    }
    await sleep(6000);
    const info = service.connections()[0]!;
    const hb = info.heartbeats!;
    global.gc?.();
    const mem = process.memoryUsage();
    const rss = mem.rss;
    await sleep(10_000);
    const idle = service.connections()[0]!.callsPerSecond ?? Number.NaN;
    const hb2 = service.connections()[0]!.heartbeats!;
    console.log(
      `${kind} ${n.toLocaleString('en')}: seeded in ${(seeded / 1000).toFixed(1)} s; first rows ${(firstRows / 1000).toFixed(2)} s ` +
        `(${shownLoading} loading answers before), whole-fleet counts ${(counted / 1000).toFixed(2)} s ` +
        `(by one aggregate read while loading: ${(aggregate / 1000).toFixed(2)} s); ` +
        `checks every ${hb.intervalMs} ms, last ${hb.lastMs} ms / ${hb.lastRows} rows, then ${hb2.lastMs} ms / ${hb2.lastRows} rows; ` +
        `serve RSS ${((rss - rssBefore) / 2 ** 20).toFixed(0)} MiB over the bench's own (${(rss / 2 ** 20).toFixed(0)} MiB in all: JS heap ${(mem.heapUsed / 2 ** 20).toFixed(0)} MiB ` +
        `of ${(mem.heapTotal / 2 ** 20).toFixed(0)}, typed arrays ${(mem.arrayBuffers / 2 ** 20).toFixed(0)} MiB); ` +
        `idle ${idle} backend calls/s; load ${load()}`,
    );
    // Rows per second between the index passing a/10 and b/10 of the fleet (0: the service's start).
    const rate = (a: number, b: number): string => {
      const ms = (tenths[b - 1] ?? Number.NaN) - (a === 0 ? 0 : (tenths[a - 1] ?? Number.NaN));
      return (((b - a) * n) / 10 / (ms / 1000)).toFixed(0);
    };
    console.log(
      `  index load: ${rate(0, 1)} rows/s over the first tenth, ${rate(8, 10)} rows/s over the last two`,
    );
    for (const name of Object.keys(QUERIES)) {
      const xs = times[name]!;
      console.log(
        `  ${name.padEnd(20)} p50 ${pct(xs, 50).toFixed(1)} ms  p95 ${pct(xs, 95).toFixed(1)} ms  first ${firsts[name]!.toFixed(1)} ms`,
      );
    }
  } finally {
    await service.close();
    if (kind === 'postgres') await dropPostgres(url, ns);
    else await dropRedis(url, ns);
  }
}

console.log(
  `bench:console-scale, load average ${load()}, gc ${global.gc === undefined ? 'not exposed' : 'exposed'}`,
);
for (const size of SIZES) {
  for (const kind of String(args.backends).split(',') as Array<'postgres' | 'redis'>) {
    await measure(kind, kind === 'postgres' ? String(args.pg) : String(args.redis), size);
  }
}
