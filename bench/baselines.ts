/**
 * The raw one-round-trip baselines the lease calls are compared with (`npm run bench`,
 * `npm run bench:overhead`): the cheapest honest single round trip that reads and writes one row.
 * - PostgreSQL: `INSERT … ON CONFLICT (id) DO UPDATE SET n = n + 1 RETURNING *` on a
 *   one-row-per-key table (created in `schema`), prepared, on a `pg.Pool` of `poolSize`.
 * - Redis: a one-key Lua script (EVALSHA) that HGETs and HSETs a hash under `prefix`.
 * `run(i)` works on key `i % 64`.
 */
import { Redis } from 'ioredis';
import pg from 'pg';

export interface Baseline {
  run(i: number): Promise<unknown>;
  close(): Promise<void>;
}

export async function pgBaseline(url: string, schema: string, poolSize: number): Promise<Baseline> {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  pool.on('error', () => {});
  await pool.query(
    `CREATE TABLE ${schema}.bench_raw (id text PRIMARY KEY, n bigint NOT NULL, at timestamptz NOT NULL)`,
  );
  return {
    run: (i) =>
      pool.query({
        name: 'bench-raw-upsert',
        text: `INSERT INTO ${schema}.bench_raw (id, n, at) VALUES ($1, 1, clock_timestamp())
               ON CONFLICT (id) DO UPDATE SET n = bench_raw.n + 1, at = clock_timestamp() RETURNING *`,
        values: [`k${i % 64}`],
      }),
    close: () => pool.end(),
  };
}

export async function redisBaseline(url: string, prefix: string): Promise<Baseline> {
  const redis = new Redis(url);
  redis.defineCommand('benchRaw', {
    numberOfKeys: 1,
    lua: `local n = tonumber(redis.call('HGET', KEYS[1], 'n') or '0') + 1
          redis.call('HSET', KEYS[1], 'n', n, 'at', ARGV[1])
          return n`,
  });
  const call = (redis as unknown as { benchRaw(key: string, at: string): Promise<number> }).benchRaw.bind(
    redis,
  );
  return {
    run: (i) => call(`${prefix}:raw:${i % 64}`, String(i)),
    close: async () => {
      const keys = await redis.keys(`${prefix}:raw:*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    },
  };
}
