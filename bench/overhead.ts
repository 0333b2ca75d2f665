/**
 * `npm run bench:overhead` (also `npm run bench -- --backends overhead`) — what the library adds to
 * a lease call on top of its own statement or script, on PostgreSQL and Redis.
 *
 * For acquire (a first acquire of a new work id), renew and checkpoint (1 KiB) it times three
 * calls that take turns call by call at 1 in flight: the bench's raw baseline (the raw upsert,
 * the raw one-key script: see `npm run bench`), the call's own statement or script sent straight
 * through the same client library (`pg.Pool` with the backend's plan mode; ioredis EVALSHA), and
 * the call through an opened backend (`backend.acquire`, `backend.renew`, `backend.checkpoint`).
 * The statement's ratio is what the server's work leaves of the target; the gap between statement and library is the library's own work: argument
 * checks, telemetry, the deadline, decoding the answer. At 1 in flight the client sleeps between
 * round trips and its caches are cold, so that work costs several times what a hot loop shows.
 *
 * Each cell is the median of `--rounds` runs of `--ops` turns; `adds us` is the library's time per
 * call over the statement's (medians). On standalone Redis the backend writes its scripts on a
 * connection of its own (src/backends/redis/wire.ts), not through ioredis as the script row does,
 * so `adds us` can be below zero there: the client work that connection saves is more than the
 * library's own. Schemas and keys live under a random `bench_…` namespace,
 * removed at the end.
 *
 * Usage: npm run bench:overhead -- [--pg <url>] [--redis <url>] [--rounds 5] [--ops 2000]
 *          [--backends postgres,redis]
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { Layout } from '../src/backends/redis/layout.ts';
import { S } from '../src/backends/redis/send.ts';
import { buildStatements } from '../src/backends/sql/statements.ts';
import { type LeaseBackend, type LeaseRecord, openBackend } from '../src/index.ts';
import { benchArgs, intArg } from './args.ts';
import { pgBaseline, redisBaseline } from './baselines.ts';
import { dropSchema, unlinkPrefix } from './cleanup.ts';
import { type Call, type Contender, interleave, isMain, loadText, spread } from './compare.ts';

const TTL_MS = 3_600_000;
const STATE_1K = Buffer.alloc(1024, 0x5a);

interface Side {
  /** The raw baseline of `npm run bench`. */
  raw: Call;
  /** The call's own statement or script for `lease`, sent through the client library. */
  direct(call: 'renew' | 'checkpoint', lease: LeaseRecord): Call;
  /** acquire's own statement or script, a first acquire of `${prefix}:${i}` on turn i. */
  directAcquire(prefix: string): Call;
  close(): Promise<void>;
}

async function postgresSide(url: string, ns: string): Promise<Side> {
  const base = await pgBaseline(url, ns, 1);
  // The backend's plan mode (postgres/index.ts): generic plans for the CTE-shaped statements.
  const pool = new pg.Pool({
    connectionString: url,
    max: 1,
    options: '-c plan_cache_mode=force_generic_plan',
  });
  const version = Number((await pool.query('SHOW server_version_num')).rows[0].server_version_num);
  const sql = buildStatements(ns, { serverVersionNum: version });
  return {
    raw: () => base.run(0),
    directAcquire: (prefix) => (i) =>
      pool.query({ ...sql.acquire, values: [`${prefix}:${i}`, 'bench', TTL_MS, null] }),
    direct: (call, lease) => {
      const token = lease.fencingToken.toString();
      return call === 'renew'
        ? () => pool.query({ ...sql.renew, values: [lease.workId, token, TTL_MS] })
        : () => pool.query({ ...sql.checkpoint, values: [lease.workId, token, STATE_1K, TTL_MS] });
    },
    close: async () => {
      await base.close();
      await pool.end();
    },
  };
}

async function redisSide(url: string, ns: string): Promise<Side> {
  const base = await redisBaseline(url, ns);
  const redis = new Redis(url);
  const buckets = Number(await redis.hget(`${ns}:meta`, 'buckets'));
  const layout = new Layout(ns, buckets);
  // acquire's script checks the dataset id the backend opened (scripts.ts, ACQUIRE_IDENTITY).
  const datasets = await Promise.all(layout.id.map((k) => redis.get(k)));
  return {
    raw: () => base.run(0),
    directAcquire: (prefix) => (i) => {
      const workId = `${prefix}:${i}`;
      const b = layout.bucketOf(workId);
      // The script standalone Redis runs (scripts.ts, WAKE), as the backend sends it.
      const sc = S.acquire.standalone ?? S.acquire;
      return redis.evalsha(
        sc.sha,
        sc.numberOfKeys,
        layout.m[b]!,
        layout.chg[b]!,
        layout.historyKey(b, workId),
        workId,
        'bench',
        String(TTL_MS),
        '', // no deadline (scripts.ts, acquire)
        datasets[b]!,
      );
    },
    direct: (call, lease) => {
      const b = layout.bucketOf(lease.workId);
      const token = lease.fencingToken.toString();
      return call === 'renew'
        ? () => redis.evalsha(S.renew.sha, 1, layout.m[b]!, lease.workId, token, String(TTL_MS))
        : () =>
            redis.evalsha(
              S.checkpoint.sha,
              2,
              layout.m[b]!,
              layout.stateKey(b, lease.workId),
              lease.workId,
              token,
              String(TTL_MS),
              STATE_1K,
            );
    },
    close: async () => {
      await base.close();
      redis.disconnect();
    },
  };
}

async function benchSide(
  kind: 'postgres' | 'redis',
  url: string,
  rounds: number,
  ops: number,
): Promise<void> {
  const ns = `bench_${randomBytes(4).toString('hex')}`;
  const backend: LeaseBackend = await openBackend(
    url,
    kind === 'postgres' ? { schema: ns } : { keyPrefix: ns },
  );
  const side = kind === 'postgres' ? await postgresSide(url, ns) : await redisSide(url, ns);
  try {
    // The direct statement and the library each work on a lease of their own.
    const direct = await backend.acquire('overhead-direct', 'bench', TTL_MS);
    const lib = await backend.acquire('overhead-library', 'bench', TTL_MS);
    // Loads the scripts into the server's cache (the backend sends EVALSHA, then EVAL once).
    await backend.renew(lib, TTL_MS);
    await backend.checkpoint(lib, STATE_1K, TTL_MS);
    console.log(`\n${kind} (${backend.url}), 1 in flight, calls taking turns, median of ${rounds} x ${ops}`);
    console.log(`${'call'.padEnd(30)}${'us/call'.padStart(9)}${'ratio'.padStart(8)}${'adds us'.padStart(9)}`);
    const own = kind === 'postgres' ? 'statement' : 'script';
    const contender = (name: string, fn: Call): Contender => ({ name, prepare: async () => fn });
    // First acquires: every turn of every round takes a new work id, both ways.
    let round = 0;
    const fresh = (name: string, make: (prefix: string) => Call): Contender => ({
      name,
      prepare: async () => make(`${name}-${++round}`),
    });
    const contenders = {
      acquire: [
        fresh(own, side.directAcquire),
        fresh('library', (prefix) => (i) => backend.acquire(`${prefix}:${i}`, 'bench', TTL_MS)),
      ],
      renew: [
        contender(own, side.direct('renew', direct)),
        contender('library', () => backend.renew(lib, TTL_MS)),
      ],
      checkpoint: [
        contender(own, side.direct('checkpoint', direct)),
        contender('library', () => backend.checkpoint(lib, STATE_1K, TTL_MS)),
      ],
    };
    for (const call of ['acquire', 'renew', 'checkpoint'] as const) {
      const [base, stmt, library] = await interleave(contender('raw', side.raw), contenders[call], {
        ops,
        inFlight: 1,
        rounds,
      });
      const us = (rate: number): number => 1e6 / rate;
      const label = call === 'checkpoint' ? 'checkpoint 1 KiB' : call;
      console.log(
        `${`${label}: raw baseline`.padEnd(30)}${us(base!.rate).toFixed(1).padStart(9)}${'1.00x'.padStart(8)}`,
      );
      for (const r of [stmt!, library!]) {
        const adds = r === library ? (us(library.rate) - us(stmt!.rate)).toFixed(1) : '';
        console.log(
          `${`${label}: ${r.name}`.padEnd(30)}${us(r.rate).toFixed(1).padStart(9)}${`${r.ratio.toFixed(2)}x`.padStart(8)}${adds.padStart(9)}${spread(r.ratios)}`.trimEnd(),
        );
      }
    }
    console.log(`load average ${loadText()}`);
  } finally {
    await side.close();
    await backend.close();
    if (kind === 'postgres') await dropSchema(url, ns);
    else await unlinkPrefix(url, ns);
  }
}

export async function benchOverhead(o: {
  pg: string;
  redis: string;
  rounds: number;
  ops: number;
  backends: readonly string[];
}): Promise<void> {
  if (o.backends.includes('postgres')) await benchSide('postgres', o.pg, o.rounds, o.ops);
  if (o.backends.includes('redis')) await benchSide('redis', o.redis, o.rounds, o.ops);
}

if (isMain(import.meta.filename)) {
  const f = import.meta.filename;
  const a = benchArgs(f, {
    pg: {
      type: 'string',
      default: process.env.WORKLEASE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    },
    redis: { type: 'string', default: process.env.WORKLEASE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379' },
    rounds: { type: 'string', default: '5' },
    ops: { type: 'string', default: '2000' },
    backends: { type: 'string', default: 'postgres,redis' },
  });
  const backends = a.backends.split(',').map((s) => s.trim());
  for (const b of backends) {
    if (b !== 'postgres' && b !== 'redis') {
      process.stderr.write(`--backends: unknown backend ${b} (postgres, redis)\n`);
      process.exit(2);
    }
  }
  await benchOverhead({
    pg: a.pg,
    redis: a.redis,
    rounds: intArg(f, 'rounds', a.rounds),
    ops: intArg(f, 'ops', a.ops),
    backends,
  });
}
