/**
 * `npm run bench:growth` — does a renew cost the same with 1 000 or 1 000 000 leases stored,
 * and how many bytes does a stored lease take, on Redis and PostgreSQL.
 *
 * For each backend a fresh namespace is grown to each of `--sizes` in turn (default 1 000,
 * 100 000, 1 000 000) through the library's own `acquire` calls (`--fill` in flight, ttl 1 h,
 * work ids `g<n>`); the fill's time and rate are printed. Then, at that size:
 * - Redis: the time of the first read after the fill, which brings the listing and expiry
 *   indexes up to the fill's change entries (layout.ts, Indexes), and of a rebuild of them all;
 * - bytes per lease: Redis `INFO memory` `used_memory` now (indexes included) minus right after
 *   the backend opened, over the stored leases; PostgreSQL `pg_total_relation_size` (heap + indexes +
 *   TOAST) of every table of the schema, over the stored leases, read before any renew at
 *   that size;
 * - renews per second at 1 and 64 in flight, on 4 096 leases spread evenly over all those
 *   stored (in-flight calls never share one), in interleaved rounds against the raw baseline
 *   of `npm run bench` (the one-key Lua script / the prepared one-row upsert on 64 keys, which
 *   does not grow): the ratio column is renews over baseline, median of the per-round ratios, so a flat
 *   ratio from the smallest to the largest size is flat renew cost even when the machine's
 *   load moved between sizes.
 * - In the same rounds, the raw baseline on a store grown with the leases, on the same 4 096
 *   spread keys: PostgreSQL the raw upsert on a table of one row per stored lease (as wide as the
 *   lease rows on average, fillfactor 90 like the lease table), Redis the raw script on one hash
 *   per stored lease (their memory is kept out of bytes/lease), sent on a connection like the
 *   lease calls' own (src/backends/redis/wire.ts) without busy poll: `raw N/s`, and `vs raw N`, renews
 *   over it (median of the per-round ratios). Where the first ratio falls with size and this one
 *   does not, the cost that grew is the server's for touching that much data (PostgreSQL pages,
 *   Redis memory), which any one-row write pays, not worklease's.
 *
 * Redis runs on a private `redis-server` (no persistence, loopback port, its own folder,
 * stopped and removed at the end) so that `used_memory` counts this bench's keys only and a
 * million leases do not land on the shared server; `--redis <url>` uses that server instead
 * (a random key prefix, its keys unlinked at the end). PostgreSQL uses a random `bench_…`
 * schema on `--pg`, dropped at the end. The load average is printed with every table.
 *
 * Usage: npm run bench:growth -- [--backends redis,postgres] [--sizes 1000,100000,1000000]
 *        [--rounds 3] [--ops 2000] [--fill 256] [--redis private|<url>] [--pg <url>] [--pool 16]
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { parseRedisUrl } from '../src/backends/redis/connection.ts';
import { DEFAULT_BUCKETS, Layout } from '../src/backends/redis/layout.ts';
import { Wire } from '../src/backends/redis/wire.ts';
import { startRedisServer } from '../src/chaos/servers.ts';
import { type LeaseBackend, type LeaseRecord, openBackend } from '../src/index.ts';
import { benchArgs, intArg } from './args.ts';
import { dropSchema, unlinkPrefix } from './cleanup.ts';
import { type Call, type Contender, interleave, loadText, measure, median } from './compare.ts';

const file = import.meta.filename;
const args = benchArgs(file, {
  backends: { type: 'string', default: 'redis,postgres' },
  sizes: { type: 'string', default: '1000,100000,1000000' },
  rounds: { type: 'string', default: '3' },
  ops: { type: 'string', default: '2000' },
  fill: { type: 'string', default: '256' },
  redis: { type: 'string', default: 'private' },
  pg: {
    type: 'string',
    default: process.env.WORKLEASE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  },
  pool: { type: 'string', default: '16' },
});
/** Exits 2 with `message`, as bench/args.ts does for its own errors. */
function usageError(message: string): never {
  process.stderr.write(`${message}\n(--help for more)\n`);
  process.exit(2);
}
const SIZES = args.sizes.split(',').map((s) => intArg(file, 'sizes', s));
for (let k = 1; k < SIZES.length; k++)
  if (SIZES[k]! <= SIZES[k - 1]!) usageError(`--sizes must be increasing, got ${args.sizes}`);
const ROUNDS = intArg(file, 'rounds', args.rounds);
const OPS = intArg(file, 'ops', args.ops);
const FILL = intArg(file, 'fill', args.fill);
const POOL = intArg(file, 'pool', args.pool);
const KINDS = args.backends.split(',');
for (const kind of KINDS)
  if (kind !== 'redis' && kind !== 'postgres')
    usageError(`--backends: unknown backend ${kind} (redis, postgres)`);

const TTL_MS = 3_600_000;
/** Renewed leases per size, spread evenly over the stored ones. */
const SAMPLE = 4096;
const IN_FLIGHT = [1, 64];
const RAW_SCRIPT = `local n = tonumber(redis.call('HGET', KEYS[1], 'n') or '0') + 1
redis.call('HSET', KEYS[1], 'n', n, 'at', ARGV[1])
return n`;

interface Target {
  url: string;
  backend: LeaseBackend;
  /** The raw baseline call. */
  raw: (i: number) => Promise<unknown>;
  /** What one stored lease takes, in bytes, with `leases` stored. */
  bytesPerLease(leases: number): Promise<number>;
  /**
   * Redis: brings the listing and expiry indexes up to date after a fill (they are part of what a
   * lease takes) and times that and a rebuild from scratch; returns the line to print.
   */
  indexes?(leases: number, added: number): Promise<string>;
  /**
   * The raw baseline on a store grown with the leases (PostgreSQL: a table, one row per lease;
   * Redis: one hash per lease). `grow(from, to)` adds the rows of fill indices [from, to)
   * (untimed); `call(at)` writes the rows of fill indices `at`, call i on `at[i % at.length]`.
   */
  sized?: { grow(from: number, to: number): Promise<void>; call(at: readonly number[]): Call };
  close(): Promise<void>;
}

async function redisTarget(): Promise<Target> {
  const server = args.redis === 'private' ? await startRedisServer() : null;
  const url = server?.url ?? args.redis;
  const ns = `bench_${randomBytes(4).toString('hex')}`;
  const admin = new Redis(url);
  let wire: Wire | null = null;
  const used = async (): Promise<number> => {
    const info = await admin.info('memory');
    return Number(/^used_memory:(\d+)/m.exec(info)?.[1]);
  };
  try {
    const backend = await openBackend(url, { keyPrefix: ns });
    admin.defineCommand('benchRaw', { numberOfKeys: 1, lua: RAW_SCRIPT });
    const raw = (admin as unknown as { benchRaw(key: string, at: string): Promise<number> }).benchRaw.bind(
      admin,
    );
    // The baseline's 64 hashes exist before the first reading, so they are not counted as leases'.
    for (let i = 0; i < 64; i++) await raw(`${ns}:raw:${i}`, '0');
    /** What the grown baseline's hashes (Target.sized) took, kept out of the leases' bytes. */
    let rawGrown = 0;
    // The grown baseline is sent on a connection like the lease calls' own (wire.ts): through
    // ioredis it is bound by the client at 64 in flight (81–101k/s here, where renews ran at
    // 122–162k/s), so it could not show what the server pays for touching more memory.
    const sha = String(await admin.script('LOAD', RAW_SCRIPT));
    wire = new Wire(parseRedisUrl(url), {
      name: 'bench-growth',
      connectTimeoutMs: 5000,
      callTimeoutMs: 10_000,
      tickMs: 100,
      busyPollMs: 0,
    });
    wire.start();
    for (let i = 0; !wire.ready; i++) {
      if (i === 500) throw new Error('bench: the connection of the grown baseline did not get ready in 5 s');
      await new Promise((r) => setTimeout(r, 10));
    }
    const w = wire;
    // After the connections are up: their buffers are not the leases'.
    const used0 = await used();
    return {
      url: `${backend.url}${server === null ? '' : ' (private redis-server)'}`,
      backend,
      raw: (i) => raw(`${ns}:raw:${i % 64}`, String(i)),
      bytesPerLease: async (leases) => ((await used()) - used0 - rawGrown) / leases,
      // The raw script on one hash per stored lease, made as the script makes them.
      sized: {
        grow: async (from, to) => {
          const before = await used();
          for (let n = from; n < to; n += 10_000) {
            const batch = admin.pipeline();
            for (let k = n; k < Math.min(to, n + 10_000); k++)
              batch.hset(`${ns}:rawN:${k}`, 'n', '1', 'at', '0');
            await batch.exec();
          }
          rawGrown += (await used()) - before;
        },
        call: (at) => (i) => w.call('EVALSHA', [sha, 1, `${ns}:rawN:${at[i % at.length]}`, String(i)], false),
      },
      indexes: async (leases, added) => {
        // The first read after the fill applies its change entries (or rebuilds the indexes of a
        // bucket whose stream was trimmed past them); then a rebuild of all of them (layout.ts, Indexes).
        let t0 = performance.now();
        await backend.admin.count();
        const first = performance.now() - t0;
        for (const key of new Layout(ns, DEFAULT_BUCKETS).ix) await admin.del(key);
        t0 = performance.now();
        await backend.admin.count();
        const rebuild = performance.now() - t0;
        return `indexes: first read after adding ${added} leases ${first.toFixed(0)} ms (${((first * 1000) / added).toFixed(1)} us per lease added), rebuild of all ${leases} ${rebuild.toFixed(0)} ms (${((rebuild * 1000) / leases).toFixed(1)} us per lease)`;
      },
      close: async () => {
        wire?.close();
        await backend.close();
        if (server !== null) {
          admin.disconnect();
          await server.stop();
        } else {
          admin.disconnect();
          await unlinkPrefix(url, ns);
        }
      },
    };
  } catch (err) {
    wire?.close();
    admin.disconnect();
    await server?.stop();
    throw err;
  }
}

async function pgTarget(): Promise<Target> {
  const url = args.pg;
  const ns = `bench_${randomBytes(4).toString('hex')}`;
  const pool = new pg.Pool({ connectionString: url, max: POOL });
  pool.on('error', () => {});
  let backend: LeaseBackend | null = null;
  try {
    backend = await openBackend(url, { schema: ns, poolSize: POOL });
    await pool.query(
      `CREATE TABLE ${ns}.bench_raw (id text PRIMARY KEY, n bigint NOT NULL, at timestamptz NOT NULL)`,
    );
    const text = `INSERT INTO ${ns}.bench_raw (id, n, at) VALUES ($1, 1, clock_timestamp())
               ON CONFLICT (id) DO UPDATE SET n = bench_raw.n + 1, at = clock_timestamp() RETURNING *`;
    // The raw upsert on one row per stored lease (Target.sized). Its rows get a pad that makes
    // them as wide as the lease rows on average, measured after the first fill, so that the same
    // number of rows shares a page in both tables.
    await pool.query(
      `CREATE TABLE ${ns}.bench_raw_sized (id text PRIMARY KEY, n bigint NOT NULL, at timestamptz NOT NULL,
         pad text NOT NULL) WITH (fillfactor = 90)`,
    );
    const sizedText = `INSERT INTO ${ns}.bench_raw_sized (id, n, at, pad) VALUES ($1, 1, clock_timestamp(), '')
               ON CONFLICT (id) DO UPDATE SET n = bench_raw_sized.n + 1, at = clock_timestamp() RETURNING id, n, at`;
    let pad: number | null = null;
    const b = backend;
    return {
      url: backend.url,
      backend,
      raw: (i) => pool.query({ name: 'bench-raw-upsert', text, values: [`k${i % 64}`] }),
      sized: {
        grow: async (from, to) => {
          if (pad === null) {
            const { rows } = await pool.query(
              `SELECT (SELECT avg(pg_column_size(l.*)) FROM ${ns}.leases l)::int AS lease,
                      pg_column_size(ROW('g123456'::text, 1::int8, now(), ''::text)) AS raw`,
            );
            pad = Math.max(0, Number(rows[0]?.lease) - Number(rows[0]?.raw));
          }
          await pool.query(
            `INSERT INTO ${ns}.bench_raw_sized (id, n, at, pad)
               SELECT 'g' || g, 1, clock_timestamp(), repeat('x', $3) FROM generate_series($1::int, $2::int - 1) g`,
            [from, to, pad],
          );
        },
        call: (at) => (i) =>
          pool.query({ name: 'bench-raw-sized', text: sizedText, values: [`g${at[i % at.length]}`] }),
      },
      bytesPerLease: async (leases) => {
        // Every table the library created in the schema (the baseline's excluded), with its
        // indexes and TOAST.
        const { rows } = await pool.query(
          `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::int8 AS bytes
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND c.relname NOT IN ('bench_raw', 'bench_raw_sized')`,
          [ns],
        );
        return Number(rows[0]?.bytes) / leases;
      },
      close: async () => {
        await b.close();
        await pool.end();
        await dropSchema(url, ns);
      },
    };
  } catch (err) {
    await backend?.close();
    await pool.end();
    await dropSchema(url, ns);
    throw err;
  }
}

async function growth(kind: 'redis' | 'postgres'): Promise<void> {
  const t = kind === 'redis' ? await redisTarget() : await pgTarget();
  try {
    // Which fill indices each size renews: SAMPLE of them, evenly spread over [0, size).
    const sampleAt = SIZES.map((size) =>
      Array.from({ length: Math.min(SAMPLE, size) }, (_, k) =>
        Math.floor((k * size) / Math.min(SAMPLE, size)),
      ),
    );
    const wanted = new Set(sampleAt.flat());
    const kept = new Map<number, LeaseRecord>();
    console.log(
      `\n${kind} (${t.url}): renews with N leases stored, ${OPS} renews per measurement, median of ${ROUNDS}, load average ${loadText()}`,
    );
    const sizedHead = t.sized === undefined ? '' : `${'raw N/s'.padStart(10)}${'vs raw N'.padStart(10)}`;
    console.log(
      `${'leases'.padStart(9)}${'fill s'.padStart(9)}${'fill/s'.padStart(9)}${'bytes/lease'.padStart(13)}${'in flight'.padStart(11)}${'renews/s'.padStart(10)}${'baseline/s'.padStart(12)}${'ratio'.padStart(8)}${'cpu us/renew'.padStart(14)}${sizedHead}`,
    );
    let stored = 0;
    for (const [s, size] of SIZES.entries()) {
      const from = stored;
      const fill = await measure(size - from, FILL, async (i) => {
        const n = from + i;
        const lease = await t.backend.acquire(`g${n}`, 'bench-holder', TTL_MS);
        if (wanted.has(n)) kept.set(n, lease);
      });
      stored = size;
      const indexes = (await t.indexes?.(size, size - from)) ?? null;
      const bytes = await t.bytesPerLease(size);
      await t.sized?.grow(from, size);
      const leases = sampleAt[s]!.map((n) => kept.get(n)!);
      const renew: Contender = {
        name: 'renew',
        prepare: async () => (i) => t.backend.renew(leases[i % leases.length]!, TTL_MS),
      };
      const base: Contender = { name: 'baseline', prepare: async () => t.raw };
      const sizedCall = t.sized?.call(sampleAt[s]!);
      const contenders =
        sizedCall === undefined ? [renew] : [renew, { name: 'raw N', prepare: async () => sizedCall }];
      // Untimed, after the size was read: JIT, script cache and these leases' pages warm.
      await measure(OPS, 64, await renew.prepare(OPS, 64));
      await measure(OPS, 64, t.raw);
      if (sizedCall !== undefined) await measure(OPS, 64, sizedCall);
      for (const inFlight of IN_FLIGHT) {
        const [b, r, n] = await interleave(base, contenders, { ops: OPS, inFlight, rounds: ROUNDS });
        const first = inFlight === IN_FLIGHT[0];
        // Renews over the sized raw upsert, round by round (both ratios share the round's baseline).
        const sized =
          n === undefined
            ? ''
            : `${n.rate.toFixed(0).padStart(10)}${median(r!.ratios.map((x, k) => x / n.ratios[k]!))
                .toFixed(2)
                .padStart(9)}x`;
        console.log(
          `${(first ? String(size) : '').padStart(9)}${(first ? ((size - from) / fill.rate).toFixed(1) : '').padStart(9)}${(first ? fill.rate.toFixed(0) : '').padStart(9)}${(first ? bytes.toFixed(0) : '').padStart(13)}${String(inFlight).padStart(11)}${r!.rate.toFixed(0).padStart(10)}${b!.rate.toFixed(0).padStart(12)}${r!.ratio.toFixed(2).padStart(7)}x${r!.cpuUs.toFixed(1).padStart(14)}${sized}`,
        );
      }
      if (indexes !== null) console.log(`${''.padStart(9)}${indexes}`);
    }
    console.log(`load average ${loadText()}`);
  } finally {
    await t.close();
  }
}

console.log(`load average ${loadText()}`);
for (const kind of KINDS) await growth(kind as 'redis' | 'postgres');
