/**
 * `npm run bench:console` — the admin console against a large fleet:
 *
 * 1. Snapshot: how long the console's fleet model takes to load 100 000
 *    leases (change cursor + paged `admin.list`) until it is live. Target < 1 s.
 * 2. Latency: ownership changes at 1 000 changes/s (each hot work item
 *    released, then acquired again, in turn: what the change feed carries),
 *    measured from the moment each write returned to the moment a WebSocket
 *    subscriber of the web mode received the row. p50 and p99; target p99 ≤ 250 ms.
 * 3. Idle load: what one idle console connection costs the backend with the
 *    100 000 leases in place, per second. Counted three ways: backend API calls
 *    (a counting wrapper around the backend the console opens), and the
 *    server's own count — Postgres: `xact_commit` of a database the bench
 *    creates for itself (so other clients of the server do not show up);
 *    Redis: MONITOR lines naming the bench's key prefix. Target for the feed
 *    ≤ 1/s; the heartbeat checks (4) add 1 + pages calls per sweep.
 * 4. Heartbeat checks: the cost of one sweep (`serverTime` + every `admin.list`
 *    page, applied to the model) at 1 000 leases and at --leases, ms per sweep
 *    (median, min, max of --sweeps sweeps, run back to back at the model's cost
 *    bound) and rows/s, and the interval the model then keeps (the configured
 *    2 s, or 5 × a sweep where that is longer). The renew → model latency is
 *    bounded by that interval plus a sweep.
 *
 * The load average (`/proc/loadavg`) is printed at the start and after each
 * backend: the machine is shared, so the figures are only as quiet as it was.
 *
 * The fleet is created through the public `acquire` call at high concurrency.
 * Everything the bench creates is removed at the end.
 *
 * Usage: npm run bench:console -- [--backends postgres,redis] [--leases 100000]
 *        [--rate 1000] [--seconds 10] [--idle-seconds 10] [--sweeps 7]
 *        [--pg <server url>] [--redis <url>]
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import pg from 'pg';
import { WebSocket } from 'ws';
import { ConsoleEventSchema } from '../src/console/api.ts';
import { ServerClock } from '../src/console/clock.ts';
import { FleetModel } from '../src/console/model.ts';
import { createConsoleService } from '../src/console/service.ts';
import {
  type LeaseAdmin,
  type LeaseBackend,
  type LeaseRecord,
  type OpenOptions,
  openBackend,
} from '../src/index.ts';
import { startWebServer } from '../src/server/http.ts';
import { benchArgs, intArg } from './args.ts';

const args = benchArgs(import.meta.filename, {
  backends: { type: 'string', default: 'postgres,redis' },
  leases: { type: 'string', default: '100000' },
  rate: { type: 'string', default: '1000' },
  seconds: { type: 'string', default: '10' },
  'idle-seconds': { type: 'string', default: '10' },
  sweeps: { type: 'string', default: '7' },
  pg: {
    type: 'string',
    default: process.env.WORKLEASE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  },
  redis: { type: 'string', default: process.env.WORKLEASE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379' },
});
const LEASES = intArg(import.meta.filename, 'leases', args.leases);
const RATE = intArg(import.meta.filename, 'rate', args.rate);
const SECONDS = intArg(import.meta.filename, 'seconds', args.seconds);
const IDLE_SECONDS = intArg(import.meta.filename, 'idle-seconds', args['idle-seconds']);
const SWEEPS = intArg(import.meta.filename, 'sweeps', args.sweeps);
/** The fleet sizes the sweep is measured at: 1 000 and --leases. */
const SWEEP_SIZES = [...new Set([Math.min(1000, LEASES), LEASES])];
const TTL_MS = 3_600_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};
const fmt = (n: number, d = 1) => n.toFixed(d);

/** Counts every admin call made through the backend the console opened. */
function counting(backend: LeaseBackend, counts: Map<string, number>): LeaseBackend {
  const admin = {} as Record<string, unknown>;
  for (const [name, fn] of Object.entries(backend.admin)) {
    admin[name] = (...a: unknown[]) => {
      counts.set(name, (counts.get(name) ?? 0) + 1);
      return (fn as (...x: unknown[]) => unknown).apply(backend.admin, a);
    };
  }
  return { ...backend, admin: admin as unknown as LeaseAdmin };
}

function loadAverage(): string {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return 'unknown';
  }
}

/**
 * `count` sweeps of the fleet by a model of its own (after its snapshot), back to back as far as
 * the model's cost bound lets them (heartbeatCheckMs 1: the next starts 5 sweeps' time after the
 * last began), each one's duration and rows as the model measured them.
 */
async function measureSweeps(
  backend: LeaseBackend,
  count: number,
): Promise<{ ms: number[]; rows: number; intervalMs: number; defaultIntervalMs: number }> {
  const clock = new ServerClock(() => backend.admin.serverTime());
  await clock.measure();
  const model = new FleetModel(backend.admin, clock, { heartbeatCheckMs: 1 });
  model.start();
  const ms: number[] = [];
  let rows = 0;
  try {
    await model.swept();
    for (let i = 0; i < count; i++) {
      await model.swept();
      const check = model.heartbeatCheck;
      ms.push(check.lastMs ?? Number.NaN);
      rows = check.lastRows;
    }
  } finally {
    await model.close();
  }
  const median = pct(ms, 50);
  // What the default model (2 s, 5 × a sweep) would run at for this fleet.
  return {
    ms,
    rows,
    intervalMs: model.heartbeatCheck.intervalMs,
    defaultIntervalMs: Math.max(2000, 5 * median),
  };
}

function printSweeps(size: number, r: Awaited<ReturnType<typeof measureSweeps>>): void {
  const median = pct(r.ms, 50);
  console.log(
    `  (4) heartbeat check (sweep) of ${size} leases (${r.rows} rows read): ${fmt(median, 1)} ms per sweep ` +
      `(median of ${r.ms.length}; min ${fmt(Math.min(...r.ms), 1)}, max ${fmt(Math.max(...r.ms), 1)}), ` +
      `${fmt(r.rows / (median / 1000), 0)} rows/s; default interval here ${fmt(r.defaultIntervalMs, 0)} ms ` +
      `(sweeps take ${fmt((100 * median) / r.defaultIntervalMs, 1)} % of the time); load average ${loadAverage()}`,
  );
}

async function createFleet(backend: LeaseBackend, n: number, from = 0): Promise<LeaseRecord[]> {
  const held: LeaseRecord[] = new Array(n - from);
  let next = from;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 256 }, async () => {
      while (next < n) {
        const i = next++;
        held[i - from] = await backend.acquire(
          `job-${String(i).padStart(6, '0')}`,
          `worker-${i % 500}`,
          TTL_MS,
        );
      }
    }),
  );
  const s = (performance.now() - t0) / 1000;
  console.log(
    `  created ${n - from} leases (${n} in all) through acquire in ${fmt(s)} s (${fmt((n - from) / s, 0)} acquires/s)`,
  );
  return held;
}

interface Target {
  kind: 'postgres' | 'redis';
  /** URL the console opens (namespace as a query parameter). */
  consoleUrl: string;
  open(extra?: OpenOptions): Promise<LeaseBackend>;
  /** Server-side operation count for the idle window: start → stop returns ops/s. */
  serverOps(): Promise<() => Promise<{ perSecond: number; what: string }>>;
  cleanup(): Promise<void>;
}

async function postgresTarget(): Promise<Target> {
  const db = `wl_bench_console_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: args.pg });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${db}`);
  const url = new URL(args.pg);
  url.pathname = `/${db}`;
  const dbUrl = url.toString();
  return {
    kind: 'postgres',
    consoleUrl: `${dbUrl}?schema=bench`,
    open: (extra = {}) => openBackend(dbUrl, { schema: 'bench', poolSize: 20, ...extra }),
    async serverOps() {
      const read = async () => {
        // The stats collector flushes at most every ~0.5 s (PG ≥ 15: on commit of idle backends, up to 1 s late).
        await admin.query('SELECT pg_stat_clear_snapshot()');
        const r = await admin.query<{ n: string }>(
          'SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1',
          [db],
        );
        return Number(r.rows[0]?.n ?? 0);
      };
      const before = await read();
      const t0 = performance.now();
      return async () => {
        const after = await read();
        const s = (performance.now() - t0) / 1000;
        return {
          perSecond: (after - before) / s,
          what: `transactions/s in database ${db} (pg_stat_database)`,
        };
      };
    },
    async cleanup() {
      await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
      await admin.end();
    },
  };
}

async function redisTarget(): Promise<Target> {
  const prefix = `wlbench_${randomBytes(3).toString('hex')}`;
  return {
    kind: 'redis',
    consoleUrl: `${args.redis}?keyPrefix=${prefix}`,
    open: (extra = {}) => openBackend(args.redis, { keyPrefix: prefix, ...extra }),
    async serverOps() {
      // MONITOR sees every command of every client; counting the lines that
      // name our prefix isolates this console from the rest of the server.
      const mon = new Redis(args.redis);
      mon.on('error', () => {});
      let calls = 0;
      let inLua = 0;
      const monitor = await mon.monitor();
      // ioredis's MONITOR parser can trip on very busy servers; a lost count is reported, not fatal.
      monitor.on('error', () => {});
      monitor.on('monitor', (_time: string, argv: string[], source: string) => {
        if (!argv.some((a) => a.includes(prefix))) return;
        // Commands a Lua script runs show up too (source "lua"); they are not round trips.
        if (String(source).includes('lua')) inLua++;
        else calls++;
      });
      const t0 = performance.now();
      return async () => {
        const s = (performance.now() - t0) / 1000;
        monitor.disconnect();
        mon.disconnect();
        return {
          perSecond: calls / s,
          what: `Redis commands/s from clients (+ ${fmt(inLua / s, 1)}/s run inside Lua) touching prefix ${prefix} (MONITOR)`,
        };
      };
    },
    async cleanup() {
      const r = new Redis(args.redis);
      let cursor = '0';
      do {
        const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 5000);
        cursor = next;
        if (keys.length > 0) await r.unlink(...keys);
      } while (cursor !== '0');
      r.disconnect();
    },
  };
}

async function benchTarget(t: Target): Promise<void> {
  console.log(`\n== ${t.kind} ==`);
  const writer = await t.open();
  try {
    // (4) at the smaller sizes first, growing the fleet to each.
    const reader = await t.open({ migrate: false });
    const held: LeaseRecord[] = [];
    for (const size of SWEEP_SIZES) {
      held.push(...(await createFleet(writer, size, held.length)));
      printSweeps(size, await measureSweeps(reader, SWEEPS));
    }

    // (1) Snapshot into the model.
    const times: number[] = [];
    for (let round = 0; round < 3; round++) {
      const clock = new ServerClock(() => reader.admin.serverTime());
      await clock.measure();
      const model = new FleetModel(reader.admin, clock, { pageSize: 10_000 });
      const t0 = performance.now();
      const live = new Promise<void>((resolve) =>
        model.subscribe((e) => {
          if (e.type === 'state' && e.state === 'live') resolve();
        }),
      );
      model.start();
      await live;
      times.push(performance.now() - t0);
      if (model.size !== LEASES) throw new Error(`model holds ${model.size} rows, expected ${LEASES}`);
      await model.close();
    }
    await reader.close();
    console.log(
      `  (1) snapshot of ${LEASES} leases into the model: ${times.map((x) => fmt(x, 0)).join(' / ')} ms (best ${fmt(Math.min(...times), 0)} ms; target < 1000 ms)`,
    );

    // A console (service + web mode) on the fleet, counting its backend calls.
    const counts = new Map<string, number>();
    const service = createConsoleService({
      connections: [{ name: t.kind, url: t.consoleUrl }],
      openBackend: async (url, options) => counting(await openBackend(url, options), counts),
    });
    const server = await startWebServer({ service, port: 0 });
    try {
      const id = service.connections()[0]!.id;
      await service.waitLive(id, 60_000);

      // (3) Idle load: let the poll back off, then count. Postgres flushes an
      // idle backend's statistics up to 10 s late, so the writer's last acquires
      // must be counted before the window opens.
      await sleep(t.kind === 'postgres' ? 12_000 : 3000);
      counts.clear();
      const stop = await t.serverOps();
      // At least two heartbeat-check intervals (5 × a sweep at 100 000 leases: ~10 s), so the window
      // holds the sweeps' calls and not only by luck of phase.
      const interval = service.connections()[0]!.heartbeats?.intervalMs ?? 2000;
      const idleS = Math.max(IDLE_SECONDS, Math.ceil((2 * interval) / 1000));
      await sleep(idleS * 1000);
      const server1 = await stop();
      const calls = [...counts.values()].reduce((a, b) => a + b, 0);
      console.log(
        `  (3) idle load, one connection, ${LEASES} leases, heartbeat checks every ${interval} ms: ${fmt(calls / idleS, 2)} backend calls/s ` +
          `(${[...counts].map(([k, v]) => `${k} ${v}`).join(', ')} in ${idleS} s); ` +
          `${fmt(server1.perSecond, 2)} ${server1.what}; target ≤ 1/s for the feed (changes, serverTime ` +
          `between polls), plus each heartbeat check's serverTime and list pages`,
      );

      // (2) Latency at RATE changes/s through the WebSocket.
      const ws = new WebSocket(`ws://127.0.0.1:${server.port}/api/events`, {
        headers: { authorization: `Bearer ${server.token}` },
      });
      await new Promise((resolve, reject) => {
        ws.once('open', resolve);
        ws.once('error', reject);
      });
      // Each hot work item is released, then acquired again, in turn, one write per item every
      // hot.length / RATE seconds, so at most one write per item is in flight: a released row with
      // the record's token reflects a release, a row held under a higher token an acquire.
      interface Write {
        start: number;
        /** The lease the write starts from (release: the held record; acquire: the released one). */
        token: bigint;
        release: boolean;
        done: number | null;
        seen: number | null;
      }
      const pending = new Map<string, Write>();
      const fromStart: number[] = [];
      const fromDone: number[] = [];
      const writeMs: number[] = [];
      // The first writes find the feed idle, polling every pollMaxMs (1 s): their
      // latency is the idle poll interval by design. Steady state starts after 1 s.
      const warmupEnd = performance.now() + 1000;
      const warmup: number[] = [];
      const settle = (w: Write, workId: string): void => {
        if (w.done === null || w.seen === null) return;
        pending.delete(workId);
        // The event can beat the writer's own reply: that counts as zero.
        const afterReply = Math.max(0, w.seen - w.done);
        if (w.start < warmupEnd) {
          warmup.push(afterReply);
          return;
        }
        fromStart.push(w.seen - w.start);
        fromDone.push(afterReply);
      };
      ws.on('message', (data) => {
        const now = performance.now();
        const event = ConsoleEventSchema.parse(JSON.parse(String(data)));
        if (event.type !== 'leases') return;
        for (const row of event.upserts) {
          const w = pending.get(row.workId);
          if (w === undefined || w.seen !== null) continue;
          const token = BigInt(row.fencingToken);
          const shows = w.release ? row.ended === 'released' && token === w.token : token > w.token;
          if (!shows) continue;
          w.seen = now;
          settle(w, row.workId);
        }
      });
      const hot = held.slice(0, 10_000);
      /** Whether hot[slot] is held now (else released by the bench, to be acquired again). */
      const isHeld = hot.map(() => true);
      const dead = hot.map(() => false);
      let writes = 0;
      let failures = 0;
      const t0 = performance.now();
      const total = RATE * SECONDS;
      let inFlight = 0;
      for (let i = 0; i < total; i++) {
        const due = t0 + (i * 1000) / RATE;
        const wait = due - performance.now();
        if (wait > 1) await sleep(wait);
        const slot = i % hot.length;
        // A slot whose write failed (a timeout may have written anyway) leaves the rotation.
        if (dead[slot]) continue;
        const rec = hot[slot]!;
        const release = isHeld[slot]!;
        const start = performance.now();
        const w: Write = { start, token: rec.fencingToken, release, done: null, seen: null };
        pending.set(rec.workId, w);
        inFlight++;
        const write = release
          ? writer.release(rec).then(() => {
              isHeld[slot] = false;
            })
          : writer.acquire(rec.workId, rec.holderId, TTL_MS).then((next) => {
              hot[slot] = next;
              isHeld[slot] = true;
            });
        write
          .then(() => {
            writes++;
            w.done = performance.now();
            writeMs.push(w.done - start);
            settle(w, rec.workId);
          })
          .catch(() => {
            failures++;
            dead[slot] = true;
            pending.delete(rec.workId);
          })
          .finally(() => inFlight--);
      }
      while (inFlight > 0) await sleep(5);
      const elapsed = (performance.now() - t0) / 1000;
      await sleep(1500);
      ws.close();
      console.log(
        `  (2) ownership change (release / acquire) → WebSocket subscriber at ${fmt(writes / elapsed, 0)} changes/s for ${fmt(elapsed)} s ` +
          `(${fromDone.length + warmup.length} of ${writes} writes seen, ${pending.size} unseen, ${failures} failed; target p99 ≤ 250 ms):\n` +
          `      first second, the feed waking from idle polling: p50 ${fmt(pct(warmup, 50))} ms, max ${fmt(pct(warmup, 100))} ms\n` +
          `      steady state after the first second:\n` +
          `      from the write's reply: p50 ${fmt(pct(fromDone, 50))} ms, p99 ${fmt(pct(fromDone, 99))} ms, max ${fmt(pct(fromDone, 100))} ms\n` +
          `      from the write's start: p50 ${fmt(pct(fromStart, 50))} ms, p99 ${fmt(pct(fromStart, 99))} ms ` +
          `(the write itself: p50 ${fmt(pct(writeMs, 50))} ms, p99 ${fmt(pct(writeMs, 99))} ms)`,
      );
    } finally {
      await server.close();
      await service.close();
    }
  } finally {
    await writer.close();
    await t.cleanup();
    console.log(`  load average after ${t.kind}: ${loadAverage()}`);
  }
}

console.log(
  `console bench: ${LEASES} leases, ${RATE} changes/s for ${SECONDS} s, idle window ${IDLE_SECONDS} s, ` +
    `${SWEEPS} sweeps per size (node ${process.version}); load average ${loadAverage()}`,
);
for (const kind of args.backends.split(',')) {
  const target = kind === 'postgres' ? await postgresTarget() : kind === 'redis' ? await redisTarget() : null;
  if (target === null) throw new Error(`unknown backend ${kind}`);
  try {
    await benchTarget(target);
  } catch (err) {
    console.error(`  ${kind} failed:`, err);
    process.exitCode = 1;
  }
}
