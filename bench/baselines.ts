/**
 * The raw one-round-trip baselines the lease calls are compared with (`npm run bench`,
 * `npm run bench:overhead`): the cheapest honest single round trip that reads and writes one row.
 * - PostgreSQL: `INSERT … ON CONFLICT (id) DO UPDATE SET n = n + 1 RETURNING *` on a
 *   one-row-per-key table (created in `schema`), prepared, on a `pg.Pool` of `poolSize`.
 * - Redis: a one-key Lua script (EVALSHA) that HGETs and HSETs a hash under `prefix`.
 * `run(i)` works on key `i % 64`.
 *
 * Two variants do the same kind of work as a call that a plain one does not, so that a call can
 * also be read against a raw statement of its own shape (`npm run bench`, the "same work" table):
 * - `payload`: the upsert / script also stores these bytes (a checkpoint's state) with the row;
 *   the reply stays the same (PostgreSQL returns the id, count and time, not the bytes).
 * - `freshKeys`: every run works on a key never used before (a first acquire creates its row or
 *   hash field): a PostgreSQL INSERT of a new row, a Redis script that creates a new hash.
 */
import { Redis } from 'ioredis';
import pg from 'pg';

export interface Baseline {
  run(i: number): Promise<unknown>;
  close(): Promise<void>;
}

export interface BaselineOptions {
  /** Bytes stored with the row on every run (none by default). */
  payload?: Buffer;
  /** Every run on a new key instead of key `i % 64`. */
  freshKeys?: boolean;
}

/** The key of run `i`: `i % 64`, or a new one per run with `freshKeys`. */
function keys(o: BaselineOptions): (i: number) => string {
  let fresh = 0;
  return o.freshKeys === true ? () => `new${fresh++}` : (i) => `k${i % 64}`;
}

export async function pgBaseline(
  url: string,
  schema: string,
  poolSize: number,
  o: BaselineOptions = {},
): Promise<Baseline> {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  pool.on('error', () => {});
  // A table per variant: each has its own rows and its own prepared statement.
  const table = `bench_raw${o.payload === undefined ? '' : '_payload'}${o.freshKeys === true ? '_fresh' : ''}`;
  await pool.query(
    `CREATE TABLE ${schema}.${table} (id text PRIMARY KEY, n bigint NOT NULL, at timestamptz NOT NULL${o.payload === undefined ? '' : ', s bytea'})`,
  );
  const key = keys(o);
  const text =
    o.payload === undefined
      ? `INSERT INTO ${schema}.${table} (id, n, at) VALUES ($1, 1, clock_timestamp())
               ON CONFLICT (id) DO UPDATE SET n = ${table}.n + 1, at = clock_timestamp() RETURNING *`
      : `INSERT INTO ${schema}.${table} (id, n, at, s) VALUES ($1, 1, clock_timestamp(), $2)
               ON CONFLICT (id) DO UPDATE SET n = ${table}.n + 1, at = clock_timestamp(), s = EXCLUDED.s
               RETURNING id, n, at`;
  const name = `bench-${table.replaceAll('_', '-')}`;
  return {
    run: (i) => pool.query({ name, text, values: o.payload === undefined ? [key(i)] : [key(i), o.payload] }),
    close: () => pool.end(),
  };
}

export async function redisBaseline(url: string, prefix: string, o: BaselineOptions = {}): Promise<Baseline> {
  const redis = new Redis(url);
  redis.defineCommand('benchRaw', {
    numberOfKeys: 1,
    lua: `local n = tonumber(redis.call('HGET', KEYS[1], 'n') or '0') + 1
          redis.call('HSET', KEYS[1], 'n', n, 'at', ARGV[1])
          return n`,
  });
  const call = (
    redis as unknown as { benchRaw(key: string, at: string | Buffer): Promise<number> }
  ).benchRaw.bind(redis);
  const key = keys(o);
  const payload = o.payload;
  // The same script; `at` carries the payload when there is one.
  const run =
    payload === undefined
      ? (i: number) => call(`${prefix}:raw:${key(i)}`, String(i))
      : (i: number) => call(`${prefix}:raw:${key(i)}`, payload);
  return {
    run,
    close: async () => {
      const found = await redis.keys(`${prefix}:raw:*`);
      for (let i = 0; i < found.length; i += 1000) await redis.del(...found.slice(i, i + 1000));
      redis.disconnect();
    },
  };
}
