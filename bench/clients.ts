/**
 * `npm run bench:clients` (also part of `npm run bench`) — the maintained client libraries on
 * the raw one-round-trip baselines of `npm run bench`, so that the choice of client rests on
 * figures rather than on a client of our own.
 *
 * - Redis: the one-key Lua script of bench/lease.ts (EVALSHA; HGET then HSET on one hash, 64
 *   hashes) through ioredis (the baseline), ioredis with `enableAutoPipelining`, iovalkey
 *   (ioredis' fork) and @redis/client (node-redis 5+; with RESP3, its default, and with RESP2
 *   as ioredis speaks), each with its own single connection and its own script helper
 *   (defineCommand / defineScript), the same script text; at 1 and 64 in flight.
 * - PostgreSQL: the prepared one-row upsert of bench/lease.ts (`INSERT … ON CONFLICT (id) DO
 *   UPDATE SET n = n + 1 … RETURNING *`, 64 rows) through `pg` (a `pg.Pool`, the baseline),
 *   postgres.js (`postgres`, `sql.unsafe(text, params, { prepare: true })`) and the
 *   connections that carry worklease's lease calls (src/backends/postgres/hot.ts: opened by `pg`,
 *   then frames and replies of their own), each with `--pool` connections; at 1 and 16 in flight.
 *
 * Rounds alternate baseline, every other client (order rotated each round), baseline; each
 * ratio is the client's calls per second over the mean of the two baseline rates around it,
 * median of `--rounds` (the median of the per-round ratios, which compare neighbouring
 * measurements: it can differ from the ratio of the median rates when the load moves).
 * `cpu us/call` is this process's CPU time (user + system, V8's helper threads included) over
 * the measurement, per call: the client's cost, which the ratios on a loaded 2-core machine
 * can hide. Keys and the table live under a random `bench_…` prefix /
 * schema, removed at the end.
 *
 * Usage: npm run bench:clients -- [--backends redis,postgres] [--rounds 3] [--ops 10000]
 *        [--redis <url>] [--pg <url>] [--pool 16]
 */
import { randomBytes } from 'node:crypto';
import { createClient, defineScript } from '@redis/client';
import { Redis } from 'ioredis';
import { Redis as Valkey } from 'iovalkey';
import pg from 'pg';
import postgres from 'postgres';
import { HotPool } from '../src/backends/postgres/hot.ts';
import { benchArgs, intArg } from './args.ts';
import { dropSchema, unlinkPrefix } from './cleanup.ts';
import { type Contender, formatRow, header, interleave, isMain, loadText, measure } from './compare.ts';

/** The same script as bench/lease.ts's Redis baseline. */
const RAW_SCRIPT = `local n = tonumber(redis.call('HGET', KEYS[1], 'n') or '0') + 1
redis.call('HSET', KEYS[1], 'n', n, 'at', ARGV[1])
return n`;

interface Opts {
  rounds: number;
  ops: number;
}

type RawCall = (key: string, at: string) => Promise<unknown>;

/** ioredis and iovalkey share their API: one connection, the script as a defined command. */
function ioredisLike(client: Redis | Valkey): RawCall {
  client.defineCommand('benchRaw', { numberOfKeys: 1, lua: RAW_SCRIPT });
  const c = client as unknown as { benchRaw(key: string, at: string): Promise<unknown> };
  return c.benchRaw.bind(c);
}

async function table(
  title: string,
  base: Contender,
  others: Contender[],
  levels: number[],
  opts: Opts,
): Promise<void> {
  console.log(`\n${title}, median of ${opts.rounds}, load average ${loadText()}`);
  console.log(header());
  for (const inFlight of levels) {
    for (const row of await interleave(base, others, { ops: opts.ops, inFlight, rounds: opts.rounds }))
      console.log(formatRow(row));
  }
  console.log(`load average ${loadText()}`);
}

export async function benchRedisClients(opts: Opts & { url: string }): Promise<void> {
  const ns = `bench_${randomBytes(4).toString('hex')}`;
  const io = new Redis(opts.url);
  const ioAuto = new Redis(opts.url, { enableAutoPipelining: true });
  const valkey = new Valkey(opts.url);
  const scripts = {
    benchRaw: defineScript({
      SCRIPT: RAW_SCRIPT,
      NUMBER_OF_KEYS: 1,
      parseCommand(parser, key: string, at: string) {
        parser.pushKey(key);
        parser.push(at);
      },
      transformReply: undefined as unknown as () => number,
    }),
  };
  const node = createClient({ url: opts.url, scripts });
  // RESP2, as ioredis speaks: the same replies on the wire.
  const node2 = createClient({ url: opts.url, scripts, RESP: 2 });
  for (const c of [node, node2]) {
    c.on('error', () => {});
    await c.connect();
  }
  const contender = (name: string, call: RawCall): Contender => ({
    name,
    prepare: async () => (i) => call(`${ns}:raw:${i % 64}`, String(i)),
  });
  const clients = [
    contender('ioredis 5', ioredisLike(io)),
    contender('ioredis 5 autopipelining', ioredisLike(ioAuto)),
    contender('iovalkey', ioredisLike(valkey)),
    contender('@redis/client', (key, at) => node.benchRaw(key, at)),
    contender('@redis/client RESP2', (key, at) => node2.benchRaw(key, at)),
  ];
  try {
    // Warm up: connections, script caches, JIT.
    for (const c of clients) await measure(1000, 64, await c.prepare(1000, 64));
    await table(
      `redis (${opts.url}): one-key Lua script (EVALSHA, HGET+HSET), ${opts.ops} calls per measurement, ratio against ioredis`,
      clients[0]!,
      clients.slice(1),
      [1, 64],
      opts,
    );
  } finally {
    io.disconnect();
    ioAuto.disconnect();
    valkey.disconnect();
    node.destroy();
    node2.destroy();
    await unlinkPrefix(opts.url, ns);
  }
}

export async function benchPgClients(opts: Opts & { url: string; pool: number }): Promise<void> {
  const ns = `bench_${randomBytes(4).toString('hex')}`;
  const text = `INSERT INTO ${ns}.bench_raw (id, n, at) VALUES ($1, 1, clock_timestamp())
               ON CONFLICT (id) DO UPDATE SET n = bench_raw.n + 1, at = clock_timestamp() RETURNING *`;
  const pool = new pg.Pool({ connectionString: opts.url, max: opts.pool });
  pool.on('error', () => {});
  const sql = postgres(opts.url, { max: opts.pool, onnotice: () => {} });
  // worklease's own lease calls connections (src/backends/postgres/hot.ts), opened by `pg`.
  const hot = new HotPool(
    () => new pg.Client({ connectionString: opts.url }),
    opts.pool,
    10_000,
    opts.url,
    () => {},
    () => Promise.reject(new Error('unused')),
  );
  const hotStatement = { name: 'bench-raw-upsert', text, hot: true as const };
  try {
    await pool.query(`CREATE SCHEMA ${ns}`);
    await pool.query(
      `CREATE TABLE ${ns}.bench_raw (id text PRIMARY KEY, n bigint NOT NULL, at timestamptz NOT NULL)`,
    );
    const clients: Contender[] = [
      {
        name: 'pg 8 (Pool)',
        prepare: async () => (i) => pool.query({ name: 'bench-raw-upsert', text, values: [`k${i % 64}`] }),
      },
      {
        name: 'postgres.js 3',
        prepare: async () => (i) => sql.unsafe(text, [`k${i % 64}`], { prepare: true }).execute(),
      },
      {
        name: 'worklease lease calls conns',
        prepare: async () => (i) => hot.query(hotStatement, [`k${i % 64}`])!,
      },
    ];
    // Warm up: every connection of both pools opened, the statement prepared on each.
    for (const c of clients) await measure(1000, opts.pool, await c.prepare(1000, opts.pool));
    await table(
      `postgres (${opts.url}): prepared one-row upsert, ${opts.pool} connections, ${opts.ops} calls per measurement, ratio against pg`,
      clients[0]!,
      clients.slice(1),
      [1, 16],
      opts,
    );
  } finally {
    await pool.end();
    await sql.end();
    hot.close();
    await dropSchema(opts.url, ns);
  }
}

if (isMain(import.meta.filename)) {
  const file = import.meta.filename;
  const args = benchArgs(file, {
    backends: { type: 'string', default: 'redis,postgres' },
    rounds: { type: 'string', default: '3' },
    ops: { type: 'string', default: '10000' },
    redis: { type: 'string', default: process.env.WORKLEASE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379' },
    pg: {
      type: 'string',
      default: process.env.WORKLEASE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    },
    pool: { type: 'string', default: '16' },
  });
  const opts = { rounds: intArg(file, 'rounds', args.rounds), ops: intArg(file, 'ops', args.ops) };
  const pool = intArg(file, 'pool', args.pool);
  const kinds = args.backends.split(',');
  for (const kind of kinds)
    if (kind !== 'redis' && kind !== 'postgres') {
      process.stderr.write(`--backends: unknown backend ${kind} (redis, postgres)\n`);
      process.exit(2);
    }
  console.log(`load average ${loadText()}`);
  for (const kind of kinds) {
    if (kind === 'redis') await benchRedisClients({ ...opts, url: args.redis });
    else await benchPgClients({ ...opts, url: args.pg, pool });
  }
}
