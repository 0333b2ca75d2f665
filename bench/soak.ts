/**
 * `npm run bench:soak` — does a process that holds thousands of leases for a long time stay flat?
 * One process holds `--leases` leases (default 5 000) for `--minutes` (default 10) through the
 * long-lived constructs, the leases split evenly over those named by `--constructs` (default all):
 * - `heartbeat`: `claim` + `heartbeat()`;
 * - `withLease`: a job that runs until the end;
 * - `lead`: one election per lease, a leader and a waiting candidate each (the candidate's
 *   waiting claim polls every 10 s, as by default);
 * - `group`: one `joinGroup` member holding all its items (plus its membership lease).
 * Every lease is renewed every `--interval` ms (default 10 000; ttl three times that, so 30 s).
 *
 * Prints a line when all leases are held and one interval has passed (the start), one a minute,
 * and one at the end: heap used (after a full GC: the script runs under `--expose-gc`), RSS, the
 * active handles (sockets, timers), the event-loop delay since the line before (p50, p99, max),
 * the renewals answered and lost leases, and the load average. Then the start against the end:
 * heap, RSS and handles, bytes of heap per renewal, and the delay's p99 of the first minute
 * against the last; and the heap's range over all samples with its trend in bytes a renewal (a
 * least-squares fit: one sample moves by a few MB with what is in flight when it is taken). Before the holders were fixed, 5 000 leases grew the heap by about 460 bytes
 * a renewal (30 → 164 MB in 10 minutes); a flat process stays within a few MB.
 *
 * Runs on the shared Redis under a random key prefix (`--backend postgres`: a random `bench_…`
 * schema; `pglite`: in memory), removed at the end.
 *
 * Usage: npm run bench:soak -- [--leases 5000] [--minutes 10] [--interval 10000]
 *        [--constructs heartbeat,withLease,lead,group] [--backend redis|postgres|pglite]
 *        [--redis <url>] [--pg <url>]
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import {
  claim,
  joinGroup,
  type Leadership,
  type LeaseBackend,
  type LeaseHolder,
  lead,
  openBackend,
  withLease,
} from '../src/index.ts';
import { benchArgs, intArg, listArg, numberArg } from './args.ts';
import { dropSchema, unlinkPrefix } from './cleanup.ts';

const file = import.meta.filename;
const args = benchArgs(file, {
  leases: { type: 'string', default: '5000' },
  minutes: { type: 'string', default: '10' },
  interval: { type: 'string', default: '10000' },
  constructs: { type: 'string', default: 'heartbeat,withLease,lead,group' },
  backend: { type: 'string', default: 'redis' },
  redis: { type: 'string', default: process.env.WORKLEASE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379' },
  pg: {
    type: 'string',
    default: process.env.WORKLEASE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  },
});
const LEASES = intArg(file, 'leases', args.leases);
// Fractions allowed, for a quick look (`--minutes 0.5`).
const MINUTES = numberArg(file, 'minutes', args.minutes);
const INTERVAL_MS = intArg(file, 'interval', args.interval);
const TTL_MS = 3 * INTERVAL_MS;
const CONSTRUCTS = listArg(file, 'constructs', args.constructs, [
  'heartbeat',
  'withLease',
  'lead',
  'group',
] as const);
const [BACKEND] = listArg(file, 'backend', args.backend, ['redis', 'postgres', 'pglite'] as const);

const gc = (globalThis as { gc?: () => void }).gc;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Counts the renewals answered; passes every call through unchanged. */
function counting(inner: LeaseBackend): { backend: LeaseBackend; renewals: () => number } {
  let renewals = 0;
  const backend: LeaseBackend = {
    kind: inner.kind,
    url: inner.url,
    maxStateBytes: inner.maxStateBytes,
    acquire: inner.acquire.bind(inner),
    checkpoint: inner.checkpoint.bind(inner),
    renew: (record, ttlMs) => {
      const p = inner.renew(record, ttlMs);
      p.then(
        () => renewals++,
        () => renewals++,
      );
      return p;
    },
    release: inner.release.bind(inner),
    readCheckpoint: inner.readCheckpoint.bind(inner),
    admin: inner.admin,
    close: () => inner.close(),
  };
  return { backend, renewals: () => renewals };
}

interface Running {
  held: () => number;
  stop: () => Promise<void>;
}

let lost = 0;

async function startConstruct(
  backend: LeaseBackend,
  kind: (typeof CONSTRUCTS)[number],
  n: number,
): Promise<Running> {
  const ids = Array.from({ length: n }, (_, i) => `${kind}-${String(i).padStart(5, '0')}`);
  const onLost = (): void => {
    lost++;
  };
  if (kind === 'heartbeat') {
    const holders: LeaseHolder[] = [];
    const stops: (() => void)[] = [];
    for (let i = 0; i < n; i += 64) {
      const batch = await Promise.all(
        ids.slice(i, i + 64).map((id) => claim(backend, id, 'soak', { ttlMs: TTL_MS })),
      );
      for (const h of batch) {
        holders.push(h);
        stops.push(h.heartbeat({ intervalMs: INTERVAL_MS, onLost }));
      }
    }
    return {
      held: () => holders.filter((h) => !h.lost).length,
      async stop() {
        for (const s of stops) s();
        await Promise.all(holders.map((h) => h.release().catch(() => {})));
      },
    };
  }
  if (kind === 'withLease') {
    let finish!: () => void;
    const finished = new Promise<void>((r) => {
      finish = r;
    });
    const holders = new Set<LeaseHolder>();
    const jobs = ids.map((id) =>
      withLease(backend, id, 'soak', { ttlMs: TTL_MS, intervalMs: INTERVAL_MS, onLost }, async (h) => {
        holders.add(h);
        await finished;
      }).catch(() => {}),
    );
    while (holders.size < n) await sleep(50);
    return {
      held: () => [...holders].filter((h) => !h.lost).length,
      async stop() {
        finish();
        await Promise.all(jobs);
      },
    };
  }
  if (kind === 'lead') {
    let leading = 0;
    const options = {
      ttlMs: TTL_MS,
      intervalMs: INTERVAL_MS,
      onElected: () => {
        leading++;
      },
      onDeposed: (d: { reason: string }) => {
        leading--;
        if (d.reason !== 'released') lost++;
      },
    };
    const all: Leadership[] = [];
    for (const id of ids)
      all.push(lead(backend, id, 'leader', options), lead(backend, id, 'candidate', options));
    while (leading < n) await sleep(50);
    return {
      held: () => leading,
      async stop() {
        await Promise.all(all.map((l) => l.stop()));
      },
    };
  }
  const member = await joinGroup(backend, {
    group: `soak-${randomBytes(3).toString('hex')}`,
    holderId: 'soak',
    workIds: ids,
    ttlMs: TTL_MS,
    intervalMs: INTERVAL_MS,
    // Nothing moves in a group of one: a rebalance a minute is enough.
    rebalanceMs: Math.min(TTL_MS, 60_000),
    onAssigned: () => {},
    onRevoked: (_id, reason) => {
      if (reason === 'lost') lost++;
    },
  });
  while (member.held.length < n) await member.rebalance();
  return { held: () => member.held.length + 1, stop: () => member.leave() };
}

interface Sample {
  at: number;
  heap: number;
  rss: number;
  handles: Record<string, number>;
  delay: { p50: number; p99: number; max: number };
  renewals: number;
}

const MB = (bytes: number): string => (bytes / 1024 / 1024).toFixed(1);
const ms = (ns: number): string => (ns / 1e6).toFixed(1);
const load = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const handlesText = (h: Record<string, number>): string =>
  Object.entries(h)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');

/** The least-squares slope of y over x. */
function slope(points: [number, number][]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

async function main(): Promise<void> {
  const ns = `bench_soak_${randomBytes(4).toString('hex')}`;
  const url = BACKEND === 'redis' ? args.redis : BACKEND === 'postgres' ? args.pg : 'pglite://memory';
  const opened = await openBackend(url, BACKEND === 'redis' ? { keyPrefix: ns } : { schema: ns });
  const { backend, renewals } = counting(opened);
  const delay = monitorEventLoopDelay({ resolution: 10 });
  const running: Running[] = [];
  try {
    console.log(
      `soak on ${BACKEND}: ${LEASES} leases over ${CONSTRUCTS.join(', ')}, renewed every ${INTERVAL_MS} ms (ttl ${TTL_MS} ms), for ${MINUTES} min${gc === undefined ? '; no --expose-gc: heap without a forced GC' : ''}`,
    );
    const started = performance.now();
    for (const [i, kind] of CONSTRUCTS.entries()) {
      const share = Math.floor(LEASES / CONSTRUCTS.length) + (i < LEASES % CONSTRUCTS.length ? 1 : 0);
      running.push(await startConstruct(backend, kind, share));
    }
    console.log(
      `all held after ${((performance.now() - started) / 1000).toFixed(1)} s; warming up one interval`,
    );
    await sleep(INTERVAL_MS);
    const sample = async (): Promise<Sample> => {
      // The delay of the window first: the forced GCs below would add their own pauses to it.
      const window = { p50: delay.percentile(50), p99: delay.percentile(99), max: delay.max };
      for (let i = 0; i < 4 && gc !== undefined; i++) {
        gc();
        await new Promise((r) => setImmediate(r));
      }
      const handles: Record<string, number> = {};
      for (const type of process.getActiveResourcesInfo()) handles[type] = (handles[type] ?? 0) + 1;
      const memory = process.memoryUsage();
      const s: Sample = {
        at: performance.now(),
        heap: memory.heapUsed,
        rss: memory.rss,
        handles,
        delay: window,
        renewals: renewals(),
      };
      delay.reset();
      return s;
    };
    const print = (label: string, s: Sample, prev: Sample | null): void => {
      const rate =
        prev === null ? '' : ` (${((s.renewals - prev.renewals) / ((s.at - prev.at) / 1000)).toFixed(0)}/s)`;
      const held = running.reduce((a, r) => a + r.held(), 0);
      console.log(
        `${label.padEnd(6)} heap ${MB(s.heap)} MB, rss ${MB(s.rss)} MB, handles ${handlesText(s.handles)}, ` +
          `loop delay p50 ${ms(s.delay.p50)} p99 ${ms(s.delay.p99)} max ${ms(s.delay.max)} ms, ` +
          `renewals ${s.renewals}${rate}, held ${held}, lost ${lost}, load ${load()}`,
      );
    };
    delay.enable();
    await sleep(Math.min(60_000, MINUTES * 60_000));
    const start = await sample();
    print('start', start, null);
    let prev = start;
    const samples: Sample[] = [start];
    const end = start.at + MINUTES * 60_000;
    while (performance.now() < end - 1000) {
      await sleep(Math.min(60_000, end - performance.now()));
      const s = await sample();
      print(
        performance.now() >= end - 1000 ? 'end' : `${((s.at - start.at) / 60_000).toFixed(0)} min`,
        s,
        prev,
      );
      prev = s;
      samples.push(s);
    }
    const last = prev;
    const grown = last.heap - start.heap;
    const count = last.renewals - start.renewals;
    console.log(
      `start → end over ${((last.at - start.at) / 60_000).toFixed(1)} min, ${count} renewals: ` +
        `heap ${MB(start.heap)} → ${MB(last.heap)} MB (${grown >= 0 ? '+' : ''}${MB(grown)} MB, ` +
        `${count === 0 ? '-' : (grown / count).toFixed(1)} bytes a renewal), rss ${MB(start.rss)} → ${MB(last.rss)} MB, ` +
        `handles ${handlesText(start.handles)} → ${handlesText(last.handles)}, ` +
        `loop delay p99 ${ms(start.delay.p99)} ms (first minute) → ${ms(last.delay.p99)} ms (last), lost ${lost}, load ${load()}`,
    );
    // One sample's heap moves by a few MB with what is in flight at that moment; the trend over all
    // of them is the growth.
    const heaps = samples.map((x) => x.heap);
    console.log(
      `heap over ${samples.length} samples: ${MB(Math.min(...heaps))}-${MB(Math.max(...heaps))} MB; ` +
        `trend (least squares against renewals) ${slope(samples.map((x) => [x.renewals, x.heap])).toFixed(1)} bytes a renewal`,
    );
  } finally {
    delay.disable();
    await Promise.all(running.map((r) => r.stop().catch(() => {})));
    await opened.close();
    if (BACKEND === 'redis') await unlinkPrefix(args.redis, ns);
    if (BACKEND === 'postgres') await dropSchema(args.pg, ns);
  }
}

await main();
