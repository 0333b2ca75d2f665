/**
 * `npm run bench:handoff` — how long a waiting acquire takes to get a lease
 * after it is released: N waiters on one work item, H handoffs (each winner
 * saves, then releases); prints the latency from the release call to the next
 * holder's claim resolving, per backend (median, p99, max). The safety poll is
 * set to an hour, so every handoff measured was woken by the backend.
 *
 * Usage: npm run bench:handoff -- [--backends postgres,redis,pglite] [--waiters 50] [--handoffs 200]
 */
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { loadavg } from 'node:os';
import { claim, openBackend } from '../src/index.ts';
import { benchArgs, intArg } from './args.ts';

const args = benchArgs(import.meta.filename, {
  backends: { type: 'string', default: 'postgres,redis,pglite' },
  waiters: { type: 'string', default: '50' },
  handoffs: { type: 'string', default: '200' },
  pg: {
    type: 'string',
    default: process.env.WORKLEASE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  },
  redis: { type: 'string', default: process.env.WORKLEASE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379' },
});
const WAITERS = intArg(import.meta.filename, 'waiters', args.waiters);
const HANDOFFS = intArg(import.meta.filename, 'handoffs', args.handoffs);

async function run(kind: string): Promise<void> {
  const ns = `handoff_${randomBytes(4).toString('hex')}`;
  const url = kind === 'postgres' ? args.pg : kind === 'redis' ? args.redis : 'pglite://memory';
  const backend = await openBackend(url, kind === 'redis' ? { keyPrefix: ns } : { schema: ns });
  const controller = new AbortController();
  setMaxListeners(WAITERS + 10, controller.signal);
  const latencies: number[] = [];
  let handoffs = 0;
  let releasedAt = 0;
  const started = performance.now();
  const waiter = async (n: number): Promise<void> => {
    while (handoffs < HANDOFFS) {
      let h: Awaited<ReturnType<typeof claim>>;
      try {
        h = await claim(backend, 'item', `w${n}`, {
          ttlMs: 60_000,
          waitMs: Number.POSITIVE_INFINITY,
          waitPollMs: 3_600_000,
          signal: controller.signal,
        });
      } catch (err) {
        if (controller.signal.aborted) return;
        throw err;
      }
      if (releasedAt > 0) latencies.push(performance.now() - releasedAt);
      handoffs++;
      await h.save(new TextEncoder().encode(String(handoffs)));
      releasedAt = performance.now();
      if (handoffs >= HANDOFFS) controller.abort();
      await h.release();
    }
  };
  try {
    await Promise.all(Array.from({ length: WAITERS }, (_, n) => waiter(n)));
  } finally {
    await backend.close();
  }
  if (kind === 'postgres') {
    const pg = (await import('pg')).default;
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${ns} CASCADE`);
    await c.end();
  } else if (kind === 'redis') {
    const { Redis } = await import('ioredis');
    const r = new Redis(url);
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${ns}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await r.del(...keys);
    } while (cursor !== '0');
    r.disconnect();
  }
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN;
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `${kind.padEnd(10)} ${WAITERS} waiters, ${HANDOFFS} handoffs in ${seconds.toFixed(1)} s: release -> next claim median ${at(0.5).toFixed(1)} ms, p99 ${at(0.99).toFixed(1)} ms, max ${(latencies.at(-1) ?? Number.NaN).toFixed(1)} ms (bound: every handoff within ${Math.ceil(latencies.at(-1) ?? 0)} ms)`,
  );
}

console.log(
  `load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
for (const kind of args.backends.split(',')) await run(kind);
