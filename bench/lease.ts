/**
 * `npm run bench` — calls per second of each lease call against the same
 * client library's raw one-round-trip baseline, measured in the same run.
 *
 * These machines are shared and noisy, so absolute numbers mean little: every
 * figure is printed beside a baseline measured in turns with it, and the ratio
 * (call / baseline) is what to read. Each cell is the median of `--rounds`
 * rounds' ratios, followed by the lowest and highest of them. In a round the
 * baseline and the call take turns: at 1 in flight call by call (base, call,
 * base, call, …, each call timed on its own), since a lone round trip's time
 * moves with how the OS schedules client and server (the same raw script ran at
 * 7.4k/s and at 19k/s in two cells of one run); at more in flight in slices of
 * 500 calls (base, call, call, base, base, …; bench/compare.ts, sliced), since
 * whole measurements one after the other (base, call, base) met different load:
 * Redis checkpoint 1 KiB at 64 in flight, 7 rounds in one run, ranged 0.47–0.88x
 * measured whole at 2000 calls and 0.79–0.96x in slices at 10 000 (medians
 * 0.82 both). `--ops` is the calls per side and round at more than 1 in flight,
 * a quarter of it at 1.
 *
 * Baselines (the cheapest honest single round trip that reads and writes one row):
 * - Postgres: `INSERT … ON CONFLICT (id) DO UPDATE SET n = n + 1 RETURNING *`
 *   on a one-row-per-key table, prepared, on a `pg.Pool` of the same size.
 * - Redis: a one-key Lua script (EVALSHA) that HGETs and HSETs a hash.
 *
 * `redis-wait` measures the `durability` option instead (docs/durability.md): on a private
 * Redis master + one replica started for it (loopback ports), each call with
 * `durability: { replicas: 1 }` (a WAIT after acquire, checkpoint, force-release) against the
 * same call without it, on the same servers, alternating; the ratio is the option's cost.
 *
 * Postgres also prints the share of the lease table's updates that were HOT (no index
 * touched), and the idle change poll's server time and pages at 1 000 and 100 000 stored
 * leases with the stored bytes per lease (the poll must cost the same at both sizes), and what a
 * renew writes: the HOT share of renews alone and its WAL bytes right after a 1 KiB checkpoint
 * beside the raw upsert's.
 *
 * Redis also prints each call's server time beside the raw script's (INFO commandstats), at 1 and
 * 64 in flight: the part of a ratio that no client-side work can recover.
 *
 * The lease calls run as a backend opened with defaults does: on standalone Redis a lone call
 * busy-polls for its reply (OpenOptions.busyPollMs, src/backends/redis/wire.ts), which the raw
 * baselines' clients do not; at 1 in flight that is part of the ratio. `npm run bench:redlock`
 * prints a row with `busyPollMs: 0` beside the default and the client CPU of both.
 *
 * A second table, "same work", reads two calls against a raw statement of their own shape, beside
 * the targets' baseline above (which is not changed by it): acquire, which always takes a work
 * item never seen before, against the raw upsert / script on a key never used before (a new row, a
 * new hash), and checkpoint 1 KiB against the raw upsert / script that also stores the same 1 KiB
 * with its row. What a ratio there misses is what the library adds to that work; what the main
 * table's ratio misses beyond it is the work itself (a new row, 1 KiB carried and stored).
 *
 * Then the cost of instrumentation: renew and checkpoint on a backend opened with an
 * OpenTelemetry meter provider (the SDK's, with a reader) against the same backend opened
 * without one, in alternating rounds; the target is at most 5 % fewer calls per second.
 *
 * Comparisons with other tools (bench/comparisons.ts), by `--backends` name: `redlock`,
 * worklease acquire+release cycles against node-redlock on the same Redis (target at least
 * 1.2x); `redis-clients`, the Redis baseline through ioredis, iovalkey and @redis/client;
 * `pg-clients`, the Postgres baseline through pg, postgres.js and the lease calls' own
 * connections (postgres/hot.ts), with client CPU per call;
 * `overhead` (not run by default), what the library adds at 1 in flight to its own statement or
 * script sent straight through the client library (`npm run bench:overhead`).
 *
 * Usage: npm run bench -- [--backends postgres,redis,redis-wait,pg-pooler,redlock,redis-clients,pg-clients]
 *        [--calls acquire,renew,checkpoint,release,readCheckpoint] [--rounds 3] [--ops 10000]
 *        [--pg <url>] [--redis <url>] [--pool 16] [--telemetry-only]
 */

import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { Redis } from 'ioredis';
import pg from 'pg';
import { changeScanParams, decodeChangeCursor } from '../src/backends/sql/rows.ts';
import { buildStatements } from '../src/backends/sql/statements.ts';
import { startPgBouncer } from '../src/chaos/postgres-servers.ts';
import { startReplicatedRedis } from '../src/chaos/servers.ts';
import { type LeaseBackend, type LeaseRecord, openBackend } from '../src/index.ts';
import { Telemetry } from '../src/lease/telemetry.ts';
import { benchArgs, intArg, listArg } from './args.ts';
import { type Baseline, pgBaseline, redisBaseline } from './baselines.ts';
import { type Call, inTurns, spread } from './compare.ts';
import { COMPARISONS, runComparison } from './comparisons.ts';
import { scriptTimes } from './server-time.ts';

const args = benchArgs(import.meta.filename, {
  backends: { type: 'string', default: 'postgres,redis,redis-wait,redlock,redis-clients,pg-clients' },
  calls: { type: 'string', default: 'acquire,renew,checkpoint,release,readCheckpoint' },
  rounds: { type: 'string', default: '3' },
  ops: { type: 'string', default: '10000' },
  pg: {
    type: 'string',
    default: process.env.WORKLEASE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  },
  redis: { type: 'string', default: process.env.WORKLEASE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379' },
  pool: { type: 'string', default: '16' },
  'telemetry-only': { type: 'boolean', default: false },
});
const ROUNDS = intArg(import.meta.filename, 'rounds', args.rounds);
const OPS = intArg(import.meta.filename, 'ops', args.ops);
const POOL = intArg(import.meta.filename, 'pool', args.pool);
const BACKENDS = listArg(import.meta.filename, 'backends', args.backends, [
  'postgres',
  'redis',
  'redis-wait',
  'pg-pooler',
  ...COMPARISONS,
]);
const CONCURRENCY = [1, 64];
/** PostgreSQL's target is set at 1 and 16 in flight (issue 14): 16 is the bench's pool, one call per connection. */
const PG_CONCURRENCY = [1, 16];
const TTL_MS = 60_000;
/** Calls per measurement: `--ops`, a quarter of it (at least 200) at 1 in flight, where each call is a whole round trip. */
const opsAt = (inFlight: number): number => (inFlight === 1 ? Math.max(200, Math.floor(OPS / 4)) : OPS);
const STATE_1K = randomBytes(1024);

/**
 * Runs `ops` calls of `fn(i, worker)` with `inFlight` of them outstanding at a time (`worker` is the
 * in-flight slot, 0 to inFlight - 1); returns calls per second.
 */
async function rate(
  ops: number,
  inFlight: number,
  fn: (i: number, worker: number) => Promise<unknown>,
): Promise<number> {
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: inFlight }, async (_, worker) => {
      while (next < ops) {
        const i = next++;
        await fn(i, worker);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return ops / seconds;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
};

type CallName = 'acquire' | 'renew' | 'checkpoint 1 KiB' | 'release' | 'readCheckpoint';

/** Prepares `count` leases to operate on (untimed) and returns the timed call. */
async function prepare(
  backend: LeaseBackend,
  call: CallName,
  tag: string,
  ops: number,
  inFlight: number,
): Promise<(i: number, worker: number) => Promise<unknown>> {
  const acquireMany = async (n: number, name: (i: number) => string): Promise<LeaseRecord[]> => {
    const out: LeaseRecord[] = new Array(n);
    await rate(n, 64, async (i) => {
      out[i] = await backend.acquire(name(i), 'bench-holder', TTL_MS);
    });
    return out;
  };
  switch (call) {
    case 'acquire':
      return (i) => backend.acquire(`${tag}:${i}`, 'bench-holder', TTL_MS);
    case 'release': {
      const leases = await acquireMany(ops, (i) => `${tag}:${i}`);
      return (i) => backend.release(leases[i]!);
    }
    default: {
      // One lease per in-flight slot, so concurrent calls never queue on one row's lock. By slot,
      // not by call number: with `i % inFlight` a call slower than the next inFlight ones shared its
      // lease with a later call, which on PostgreSQL waited for its commit, while the baseline spread
      // its calls over 64 keys.
      const leases = await acquireMany(inFlight, (i) => `${tag}:${i}`);
      if (call === 'renew') return (_i, w) => backend.renew(leases[w]!, TTL_MS);
      if (call === 'checkpoint 1 KiB') return (_i, w) => backend.checkpoint(leases[w]!, STATE_1K, TTL_MS);
      return (_i, w) => backend.readCheckpoint(leases[w]!);
    }
  }
}

/** The calls of the tables, by their `--calls` names. */
const CALL_NAMES = {
  acquire: 'acquire',
  renew: 'renew',
  checkpoint: 'checkpoint 1 KiB',
  release: 'release',
  readCheckpoint: 'readCheckpoint',
} as const satisfies Record<string, CallName>;
const CALLS: CallName[] = listArg(
  import.meta.filename,
  'calls',
  args.calls,
  Object.keys(CALL_NAMES) as Array<keyof typeof CALL_NAMES>,
).map((c) => CALL_NAMES[c]);

/**
 * The baseline's timed call: its key by call number at 1 in flight, by slot above (each slot its
 * own row, like the calls).
 */
const baseCall = (b: Baseline, inFlight: number): Call =>
  inFlight === 1 ? (i) => b.run(i) : (_i, w) => b.run(w);

interface Compared {
  calls: number[];
  bases: number[];
  ratios: number[];
}

/**
 * `ROUNDS` measurements of `call` against the baseline `base`, at `inFlight`: call by call in turns
 * at 1 in flight, else in slices ({@link inTurns}).
 * Each round prepares its own leases.
 */
async function compareCall(
  backend: LeaseBackend,
  call: CallName,
  inFlight: number,
  base: Call,
  tag: () => string,
): Promise<Compared> {
  const ops = opsAt(inFlight);
  const out: Compared = { calls: [], bases: [], ratios: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const fn = await prepare(backend, call, tag(), ops, inFlight);
    const [x, m] = await inTurns(ops, inFlight, [base, fn]);
    const b = x!.rate;
    const measured = m!.rate;
    out.calls.push(measured);
    out.bases.push(b);
    out.ratios.push(measured / b);
  }
  return out;
}

/** One table line: the call, its rate, the baseline's, the median ratio and the rounds' range. */
function compareLine(label: string, inFlight: number, c: Compared, target?: number): string {
  const ratio = median(c.ratios);
  const below = target !== undefined && ratio < target ? `  (below the ${target} target)` : '';
  return `${label.padEnd(18)}${String(inFlight).padStart(10)}${median(c.calls).toFixed(0).padStart(12)}${median(c.bases).toFixed(0).padStart(12)}${ratio.toFixed(2).padStart(7)}x${spread(c.ratios)}${below}`;
}

async function benchBackend(kind: 'postgres' | 'redis'): Promise<void> {
  const ns = `bench_${randomBytes(4).toString('hex')}`;
  const url = kind === 'postgres' ? args.pg : args.redis;
  const backend = await openBackend(
    url,
    kind === 'postgres' ? { schema: ns, poolSize: POOL } : { keyPrefix: ns },
  );
  const baseline = kind === 'postgres' ? await pgBaseline(url, ns, POOL) : await redisBaseline(url, ns);
  console.log(`\n${kind} (${backend.url}), pool ${POOL}, ${OPS} calls per measurement, median of ${ROUNDS}`);
  console.log(
    `${'call'.padEnd(18)}${'in flight'.padStart(10)}${'calls/s'.padStart(12)}${'baseline/s'.padStart(12)}${'ratio'.padStart(8)}`,
  );
  let tagNo = 0;
  const tag = (): string => `b${tagNo++}`;
  // Targets of each call against the raw baseline: 0.85x on PostgreSQL, 0.9x on Redis.
  const target = kind === 'postgres' ? 0.85 : 0.9;
  const concurrency = kind === 'postgres' ? PG_CONCURRENCY : CONCURRENCY;
  try {
    // Warm up connections, prepared statements and script caches.
    await rate(500, 64, (i) => baseline.run(i));
    await rate(500, 64, (i) => backend.acquire(`warm:${i}`, 'w', TTL_MS));
    for (const call of CALLS) {
      for (const inFlight of concurrency) {
        const c = await compareCall(backend, call, inFlight, baseCall(baseline, inFlight), tag);
        console.log(compareLine(call, inFlight, c, target));
      }
    }
    if (kind === 'postgres') await printHot(url, ns);
    else await printServerTimes(url, backend, baseline);
    await printSameWork(kind, url, ns, backend, concurrency, tag);
  } finally {
    await baseline.close();
    await cleanup(kind, url, ns, backend);
  }
}

/**
 * The "same work" table (see the header): acquire against the raw baseline on keys never used
 * before, checkpoint 1 KiB against the raw baseline that stores the same 1 KiB. No target is marked
 * here: the targets are the main table's.
 */
async function printSameWork(
  kind: 'postgres' | 'redis',
  url: string,
  ns: string,
  backend: LeaseBackend,
  concurrency: readonly number[],
  tag: () => string,
): Promise<void> {
  const rows = (
    [
      ['acquire', { freshKeys: true }, 'raw on a new key'],
      ['checkpoint 1 KiB', { payload: STATE_1K }, 'raw storing the same 1 KiB'],
    ] as const
  ).filter(([call]) => CALLS.includes(call));
  if (rows.length === 0) return;
  console.log(`
${kind}: same work (each call against a raw baseline of its own shape), median of ${ROUNDS}`);
  console.log(
    `${'call'.padEnd(18)}${'in flight'.padStart(10)}${'calls/s'.padStart(12)}${'baseline/s'.padStart(12)}${'ratio'.padStart(8)}  baseline`,
  );
  for (const [call, options, what] of rows) {
    const base =
      kind === 'postgres' ? await pgBaseline(url, ns, POOL, options) : await redisBaseline(url, ns, options);
    try {
      await rate(500, 64, (i) => base.run(i));
      for (const inFlight of concurrency) {
        const c = await compareCall(backend, call, inFlight, baseCall(base, inFlight), tag);
        console.log(`${compareLine(call, inFlight, c)}  ${what}`);
      }
    } finally {
      await base.close();
    }
  }
}

/**
 * Redis: the server's time per call, beside the raw script's, so a reader can tell the server's
 * share of a ratio above from the client's. Each figure is `usec / calls` of INFO commandstats'
 * lease calls (bench/server-time.ts: EVALSHAs, and EXECs of calls sent as a transaction) read
 * around a pass of that call alone (400 calls at 1 in flight, `--ops` at 64), median of `--rounds`
 * passes; calls of other clients of a shared server during a pass count too. At 1 in flight the
 * server runs each call from cold caches after waiting for it, so every figure there is larger
 * than at 64.
 */
async function printServerTimes(url: string, backend: LeaseBackend, baseline: Baseline): Promise<void> {
  const stats = scriptTimes(url);
  try {
    console.log(
      `\nredis server time per call (INFO commandstats: EVALSHA, or MULTI + EXEC), median of ${ROUNDS}`,
    );
    console.log(
      `${'call'.padEnd(18)}${'in flight'.padStart(10)}${'call us'.padStart(10)}${'raw us'.padStart(9)}${'extra us'.padStart(10)}`,
    );
    let tagNo = 0;
    for (const call of CALLS) {
      for (const inFlight of CONCURRENCY) {
        const ops = inFlight === 1 ? 400 : OPS;
        const times: number[] = [];
        const raws: number[] = [];
        for (let r = 0; r < ROUNDS; r++) {
          const fn = await prepare(backend, call, `s${tagNo++}`, ops, inFlight);
          for (const [out, f] of [
            [raws, (_i: number, w: number) => baseline.run(w)],
            [times, fn],
          ] as const) {
            const t = await stats.during(() => rate(ops, inFlight, f));
            out.push(t.usec / Math.max(1, t.calls));
          }
        }
        const t = median(times);
        const raw = median(raws);
        console.log(
          `${call.padEnd(18)}${String(inFlight).padStart(10)}${t.toFixed(1).padStart(10)}${raw.toFixed(1).padStart(9)}${(t - raw).toFixed(1).padStart(10)}`,
        );
      }
    }
  } finally {
    stats.close();
  }
}

/** How many of the lease table's updates were HOT (no index touched), from the server's statistics. */
async function printHot(url: string, ns: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // Backends flush their table statistics at most once a second.
    await new Promise((r) => setTimeout(r, 1500));
    const { rows } = await client.query(
      'SELECT n_tup_upd::int8 AS upd, n_tup_hot_upd::int8 AS hot FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2',
      [ns, 'leases'],
    );
    const upd = Number(rows[0]?.upd ?? 0);
    const hot = Number(rows[0]?.hot ?? 0);
    console.log(
      `HOT updates of the lease table (n_tup_hot_upd / n_tup_upd): ${hot} / ${upd} = ${upd === 0 ? '-' : `${((100 * hot) / upd).toFixed(1)} %`}`,
    );
  } finally {
    await client.end();
  }
}

/**
 * The idle change poll's server time and pages at 1 000 and 100 000 stored leases (median of 21
 * EXPLAIN ANALYZE runs of the statement with the parameters the driver sends), and the stored
 * bytes per lease (table + indexes + TOAST).
 */
async function benchPgFeed(url: string): Promise<void> {
  const ns = `bench_${randomBytes(4).toString('hex')}`;
  const backend = await openBackend(url, { schema: ns, poolSize: 2 });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await backend.acquire('seed', 'bench-holder', TTL_MS);
    const sql = buildStatements(ns, { serverVersionNum: 150000 }).changes.text;
    console.log(`\npostgres idle change poll (one changes() call with nothing new), median of 21`);
    console.log(
      `${'leases'.padStart(8)}${'server ms'.padStart(11)}${'pages'.padStart(7)}${'bytes/lease'.padStart(13)}`,
    );
    let stored = 1;
    for (const target of [1_000, 100_000]) {
      await client.query(
        `INSERT INTO ${ns}.leases SELECT (jsonb_populate_record(l, jsonb_build_object('work_id', 'bulk-' || g))).*
         FROM ${ns}.leases l, generate_series($1::int, $2::int) g WHERE l.work_id = 'seed'`,
        [stored, target - 1],
      );
      stored = target;
      await client.query(`VACUUM ANALYZE ${ns}.leases`);
      const params = changeScanParams(decodeChangeCursor(await backend.admin.changeCursor()), 1000);
      const times: number[] = [];
      let pages = 0;
      for (let i = 0; i < 21; i++) {
        const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, params);
        const out = (
          rows[0] as { 'QUERY PLAN': [{ Plan: Record<string, number>; 'Execution Time': number }] }
        )['QUERY PLAN'][0];
        times.push(out['Execution Time']);
        pages = (out.Plan['Shared Hit Blocks'] ?? 0) + (out.Plan['Shared Read Blocks'] ?? 0);
      }
      const { rows: size } = await client.query(`SELECT pg_total_relation_size($1)::int8 AS bytes`, [
        `${ns}.leases`,
      ]);
      console.log(
        `${String(target).padStart(8)}${median(times).toFixed(3).padStart(11)}${String(pages).padStart(7)}${(Number(size[0]?.bytes) / target).toFixed(0).padStart(13)}`,
      );
    }
  } finally {
    await client.end();
    await cleanup('postgres', url, ns, backend);
  }
}

/**
 * What a renew writes on PostgreSQL: the share of renews that were HOT updates (n_tup_hot_upd /
 * n_tup_upd of the renews alone: 64 leases with a 1 KiB checkpoint, 10 renews each, statistics
 * flushed by closing the backend), and the WAL one renew logs right after a 1 KiB checkpoint
 * against the raw upsert's (EXPLAIN (ANALYZE, WAL) of each statement, median of 64; commit
 * records excluded for both).
 */
async function benchPgRenewWrites(url: string): Promise<void> {
  const ns = `bench_${randomBytes(4).toString('hex')}`;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let backend = await openBackend(url, { schema: ns, poolSize: POOL });
  try {
    const leases: LeaseRecord[] = [];
    for (let i = 0; i < 64; i++) leases.push(await backend.acquire(`w${i}`, 'bench-holder', TTL_MS));
    for (const r of leases) await backend.checkpoint(r, STATE_1K, TTL_MS);
    const stats = async (): Promise<{ upd: number; hot: number }> => {
      await backend.close(); // a backend flushes its table statistics when it exits
      for (;;) {
        await new Promise((r) => setTimeout(r, 200));
        const { rows } = await client.query(
          'SELECT n_tup_upd::int8 AS upd, n_tup_hot_upd::int8 AS hot FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2',
          [ns, 'leases'],
        );
        if (Number(rows[0]?.upd ?? 0) >= done) return { upd: Number(rows[0].upd), hot: Number(rows[0].hot) };
      }
    };
    let done = leases.length;
    const before = await stats();
    backend = await openBackend(url, { schema: ns, poolSize: POOL });
    await rate(leases.length * 10, 16, (i) => backend.renew(leases[i % leases.length]!, TTL_MS));
    done += leases.length * 10;
    const after = await stats();
    backend = await openBackend(url, { schema: ns, poolSize: 2 });
    const hot = after.hot - before.hot;
    const upd = after.upd - before.upd;
    await client.query(
      `CREATE TABLE ${ns}.bench_raw (id text PRIMARY KEY, n bigint NOT NULL, at timestamptz NOT NULL)`,
    );
    const walOf = async (text: string, params: unknown[]): Promise<number> => {
      const { rows } = await client.query(`EXPLAIN (ANALYZE, WAL, FORMAT JSON) ${text}`, params);
      return (rows[0] as { 'QUERY PLAN': [{ Plan: Record<string, number> }] })['QUERY PLAN'][0].Plan[
        'WAL Bytes'
      ]!;
    };
    const renew = buildStatements(ns, { serverVersionNum: 150000 }).renew.text;
    const renews: number[] = [];
    const raws: number[] = [];
    for (const [i, r] of leases.entries()) {
      await backend.checkpoint(r, STATE_1K, TTL_MS);
      renews.push(await walOf(renew, [r.workId, r.fencingToken, TTL_MS]));
      raws.push(
        await walOf(
          `INSERT INTO ${ns}.bench_raw (id, n, at) VALUES ($1, 1, clock_timestamp())
           ON CONFLICT (id) DO UPDATE SET n = bench_raw.n + 1, at = clock_timestamp() RETURNING *`,
          [`k${i % 8}`],
        ),
      );
    }
    console.log(
      `\npostgres renew writes: HOT ${hot} / ${upd} = ${upd === 0 ? '-' : `${((100 * hot) / upd).toFixed(1)} %`} of renews (64 leases with a 1 KiB checkpoint, 10 renews each); WAL per renew right after a 1 KiB checkpoint ${median(renews)} B, raw upsert ${median(raws)} B (EXPLAIN WAL, median of 64)`,
    );
  } finally {
    await client.end();
    await cleanup('postgres', url, ns, backend);
  }
}

async function cleanup(
  kind: 'postgres' | 'redis',
  url: string,
  ns: string,
  backend: LeaseBackend,
): Promise<void> {
  await backend.close();
  if (kind === 'postgres') {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${ns} CASCADE`);
    await client.end();
  } else {
    const redis = new Redis(url);
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `*${ns}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
    redis.disconnect();
  }
}

/** The durability option's cost: the same calls with and without WAIT on one private master + replica. */
async function benchDurability(): Promise<void> {
  const pair = await startReplicatedRedis();
  const ns = `bench_${randomBytes(4).toString('hex')}`;
  const plain = await openBackend(pair.url, { keyPrefix: ns });
  const durable = await openBackend(pair.url, {
    keyPrefix: ns,
    durability: { replicas: 1, timeoutMs: 1000 },
  });
  console.log(
    `\nredis durability (private master + 1 replica at ${pair.url}): durability { replicas: 1 } against none, ${OPS} calls per measurement, median of ${ROUNDS}`,
  );
  console.log(
    `${'call'.padEnd(18)}${'in flight'.padStart(10)}${'durable/s'.padStart(12)}${'plain/s'.padStart(12)}${'ratio'.padStart(8)}`,
  );
  let tagNo = 0;
  try {
    await rate(500, 64, (i) => durable.acquire(`warm:${i}`, 'w', TTL_MS));
    // renew does not WAIT (docs/durability.md): its row shows the option costs nothing there.
    for (const call of ['acquire', 'checkpoint 1 KiB', 'renew'] as const) {
      for (const inFlight of CONCURRENCY) {
        const ops = opsAt(inFlight);
        const ratios: number[] = [];
        const with_: number[] = [];
        const without: number[] = [];
        for (let r = 0; r < ROUNDS; r++) {
          const sides = [
            await prepare(plain, call, `p${tagNo++}`, ops, inFlight),
            await prepare(durable, call, `d${tagNo++}`, ops, inFlight),
          ];
          const [b0, m0] = await inTurns(ops, inFlight, sides);
          const base = b0!.rate;
          const measured = m0!.rate;
          with_.push(measured);
          without.push(base);
          ratios.push(measured / base);
        }
        console.log(
          `${call.padEnd(18)}${String(inFlight).padStart(10)}${median(with_).toFixed(0).padStart(12)}${median(without).toFixed(0).padStart(12)}${median(ratios).toFixed(2).padStart(7)}x`,
        );
      }
    }
  } finally {
    await plain.close();
    await durable.close();
    await pair.stop();
  }
}

/**
 * What behind-a-pooler costs (docs/postgres.md): the lease calls of a backend connected directly
 * (named statements, parsed once per connection; settings once per connection) against the same
 * backend told `?pooler=transaction` on the same direct connection (every statement unnamed, parsed
 * and planned with each call, after a set_config of the call's settings in the same round trip:
 * the statement mode's own cost) and a backend through PgBouncer 1.18 in transaction mode on a
 * private port (pooler detected: the same statements, plus the pooler's hop), taking turns.
 */
async function benchPgPooler(): Promise<void> {
  const ns = `bench_${randomBytes(4).toString('hex')}`;
  const bouncer = await startPgBouncer({
    serverPort: Number(new URL(args.pg).port || 5432),
    mode: 'transaction',
    poolSize: POOL,
  });
  const direct = await openBackend(args.pg, { schema: ns, poolSize: POOL });
  const unnamed = await openBackend(`${args.pg}?pooler=transaction`, {
    schema: ns,
    poolSize: POOL,
    migrate: false,
  });
  const pooled = await openBackend(bouncer.rewrite(args.pg), { schema: ns, poolSize: POOL, migrate: false });
  console.log(
    `
postgres behind a pooler: direct (named statements) against direct with ?pooler=transaction (unnamed + settings each call) and through PgBouncer (transaction mode, pool ${POOL}), median of ${ROUNDS}, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.log(
    `${'call'.padEnd(18)}${'in flight'.padStart(10)}${'direct/s'.padStart(12)}${'unnamed/s'.padStart(12)}${'ratio'.padStart(8)}${'pgbouncer/s'.padStart(13)}${'ratio'.padStart(8)}`,
  );
  let tagNo = 0;
  try {
    for (const b of [direct, unnamed, pooled])
      await rate(500, 16, (i) => b.acquire(`warm${tagNo++}:${i}`, 'w', TTL_MS));
    for (const call of ['acquire', 'renew', 'checkpoint 1 KiB'] as const) {
      for (const inFlight of PG_CONCURRENCY) {
        const ops = opsAt(inFlight);
        const rates: number[][] = [[], [], []];
        const ratios: number[][] = [[], []];
        for (let r = 0; r < ROUNDS; r++) {
          const sides = [];
          for (const b of [direct, unnamed, pooled])
            sides.push(await prepare(b, call, `p${tagNo++}`, ops, inFlight));
          const got = await inTurns(ops, inFlight, sides);
          for (const [i, m] of got.entries()) rates[i]!.push(m.rate);
          ratios[0]!.push(got[1]!.rate / got[0]!.rate);
          ratios[1]!.push(got[2]!.rate / got[0]!.rate);
        }
        const cell = (xs: number[]): string =>
          `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)})`;
        console.log(
          `${call.padEnd(18)}${String(inFlight).padStart(10)}${median(rates[0]!).toFixed(0).padStart(12)}${median(rates[1]!).toFixed(0).padStart(12)}  ${cell(ratios[0]!)}${median(rates[2]!).toFixed(0).padStart(13)}  ${cell(ratios[1]!)}`,
        );
      }
    }
  } finally {
    await unnamed.close();
    await pooled.close();
    await cleanup('postgres', args.pg, ns, direct);
    await bouncer.stop();
  }
}

/** A reader that is never exported from: the SDK still aggregates every recording. */
class HoldingReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

/** Throughput with a meter configured against without, alternating rounds on the same namespace. */
async function benchTelemetry(kind: 'postgres' | 'redis'): Promise<void> {
  const ns = `bench_${randomBytes(4).toString('hex')}`;
  const url = kind === 'postgres' ? args.pg : args.redis;
  const base = kind === 'postgres' ? { schema: ns, poolSize: POOL } : { keyPrefix: ns };
  const reader = new HoldingReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const plain = await openBackend(url, base);
  const metered = await openBackend(url, { ...base, meterProvider });
  console.log(
    `\n${kind}: instrumentation cost (meter configured / none), median of ${ROUNDS}, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.log(
    `${'call'.padEnd(18)}${'in flight'.padStart(10)}${'none/s'.padStart(12)}${'metered/s'.padStart(12)}${'ratio'.padStart(8)}`,
  );
  let tagNo = 0;
  const plains1: number[] = [];
  try {
    await rate(500, 64, (i) => plain.acquire(`warm:${i}`, 'w', TTL_MS));
    await rate(500, 64, (i) => metered.acquire(`warm2:${i}`, 'w', TTL_MS));
    for (const call of ['renew', 'checkpoint 1 KiB'] as const) {
      for (const inFlight of CONCURRENCY) {
        const ops = opsAt(inFlight);
        const ratios: number[] = [];
        const plains: number[] = [];
        const meters: number[] = [];
        for (let r = 0; r < ROUNDS; r++) {
          const a = await prepare(plain, call, `t${tagNo++}`, ops, inFlight);
          const b = await prepare(metered, call, `t${tagNo++}`, ops, inFlight);
          // In turns, as the main table: a lone call's time moves with how the OS schedules client
          // and server, and two runs one after the other can meet different regimes: run one after
          // the other at 1 in flight, checkpoint printed 0.68x in one run whose measurement of the
          // meter alone (below) was +1.15 us per call.
          const [m0, m1] = await inTurns(ops, inFlight, [a, b]);
          const x = m0!.rate;
          const y = m1!.rate;
          plains.push(x);
          meters.push(y);
          ratios.push(y / x);
        }
        const ratio = median(ratios);
        if (call === 'renew' && inFlight === 1) plains1.push(...plains);
        console.log(
          `${call.padEnd(18)}${String(inFlight).padStart(10)}${median(plains).toFixed(0).padStart(12)}${median(meters).toFixed(0).padStart(12)}${ratio.toFixed(2).padStart(7)}x${ratio < 0.95 ? '  (more than 5 % lost)' : ''}`,
        );
      }
    }
    // The same cost without the server: what one instrumented call adds in CPU time, which
    // the throughput ratios above (on a shared, loaded machine) can only bound.
    const micro = async (t: Telemetry): Promise<number> => {
      const n = 200_000;
      const done = Promise.resolve();
      const start = process.hrtime.bigint();
      for (let i = 0; i < n; i++) await t.call('renew', 'w', () => done);
      return Number(process.hrtime.bigint() - start) / 1000 / n;
    };
    const none = new Telemetry(kind);
    const withMeter = new Telemetry(kind, { meterProvider });
    const nones: number[] = [];
    const withs: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      nones.push(await micro(none));
      withs.push(await micro(withMeter));
    }
    const added = median(withs) - median(nones);
    const perCall = 1e6 / median(plains1);
    console.log(
      `per call: ${median(nones).toFixed(2)} us without a meter, ${median(withs).toFixed(2)} us with one: +${added.toFixed(2)} us, ${((100 * added) / perCall).toFixed(1)} % of a renew at 1 in flight (${perCall.toFixed(0)} us)`,
    );
  } finally {
    await metered.close();
    await meterProvider.shutdown();
    await cleanup(kind, url, ns, plain);
  }
}

console.log(
  `load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
for (const kind of BACKENDS) {
  const compared = { redis: args.redis, pg: args.pg, rounds: ROUNDS, ops: OPS, pool: POOL };
  if (await runComparison(kind, { ...compared, skip: args['telemetry-only'] })) continue;
  if (kind === 'redis-wait') {
    if (!args['telemetry-only']) await benchDurability();
  } else if (kind === 'pg-pooler') {
    if (!args['telemetry-only']) await benchPgPooler();
  } else if (kind === 'postgres' || kind === 'redis') {
    if (!args['telemetry-only']) await benchBackend(kind);
    if (!args['telemetry-only'] && kind === 'postgres') await benchPgFeed(args.pg);
    if (!args['telemetry-only'] && kind === 'postgres') await benchPgRenewWrites(args.pg);
    await benchTelemetry(kind);
  } else throw new Error(`unknown backend ${kind} (postgres, redis, redis-wait, ${COMPARISONS.join(', ')})`);
}
console.log(
  `load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
