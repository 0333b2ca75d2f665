/**
 * Run by flat.test.ts under `node --expose-gc`: the long-lived constructs of the holder layer,
 * each in a phase of its own on one Redis backend, renewing a few hundred leases every
 * `INTERVAL_MS` — `claim` + `heartbeat`, `withLease` around long jobs, `lead` (a leader and a
 * waiting candidate per name), `joinGroup` (two members sharing the items) and waiting `claim`s
 * on held items (retrying every 10 ms). Each phase warms up, takes the heap (after a full GC)
 * and the active resources, runs until `CALLS` more renews (acquires for the waiting phase) were
 * answered, takes them again, stops everything and takes the resources once more. Prints one
 * JSON line: per phase the heap before/after, the calls counted between, and the resources.
 *
 * Usage: node --expose-gc --import tsx test/holder/flat-child.ts URL KEY_PREFIX CALLS [PHASE,…]
 */
import {
  claim,
  joinGroup,
  type LeaseBackend,
  type LeaseHolder,
  lead,
  openBackend,
  withLease,
} from '../../src/index.ts';

const [url = '', keyPrefix = '', callsText = '40000', phaseList = ''] = process.argv.slice(2);
const CALLS = Number(callsText);
const INTERVAL_MS = 20;
/** Generous: a holder must not lose its lease when the machine's load stalls this process for seconds. */
const TTL_MS = 20_000;
const LEASES = 300;
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Counts the lease calls answered, by name; passes everything through unchanged. */
function counting(inner: LeaseBackend): { backend: LeaseBackend; answered: Record<string, number> } {
  const answered: Record<string, number> = { acquire: 0, renew: 0 };
  const count =
    <A extends unknown[], R>(name: string, fn: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> => {
      const p = fn(...args);
      p.then(
        () => {
          answered[name] = (answered[name] ?? 0) + 1;
        },
        () => {
          answered[name] = (answered[name] ?? 0) + 1;
        },
      );
      return p;
    };
  const backend: LeaseBackend = {
    kind: inner.kind,
    url: inner.url,
    maxStateBytes: inner.maxStateBytes,
    acquire: count('acquire', inner.acquire.bind(inner)),
    checkpoint: inner.checkpoint.bind(inner),
    renew: count('renew', inner.renew.bind(inner)),
    release: inner.release.bind(inner),
    readCheckpoint: inner.readCheckpoint.bind(inner),
    admin: inner.admin,
    close: () => inner.close(),
  };
  return { backend, answered };
}

async function heap(): Promise<number> {
  for (let i = 0; i < 4; i++) {
    gc!();
    await new Promise((r) => setImmediate(r));
  }
  return process.memoryUsage().heapUsed;
}

/** Active resources by type (sockets, timers, …), as Node reports them. */
function resources(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const type of process.getActiveResourcesInfo()) out[type] = (out[type] ?? 0) + 1;
  return out;
}

/** The active resources once they stop changing (closing sockets take a moment), within 10 s. */
async function settled(): Promise<Record<string, number>> {
  let last = JSON.stringify(resources());
  for (let i = 0; i < 50; i++) {
    await sleep(200);
    const now = JSON.stringify(resources());
    if (now === last) break;
    last = now;
  }
  return JSON.parse(last) as Record<string, number>;
}

interface Running {
  /** Stops the construct and hands every lease back; resolves when it is done. */
  stop(): Promise<void>;
  /** Leases lost while it ran (should be 0). */
  lost(): number;
}

type Phase = (backend: LeaseBackend, tag: string) => Promise<Running>;

const phases: Record<string, { counts: 'renew' | 'acquire'; start: Phase }> = {
  heartbeat: {
    counts: 'renew',
    async start(backend, tag) {
      let lost = 0;
      const holders: { holder: LeaseHolder; stop: () => void }[] = [];
      for (let i = 0; i < LEASES; i++) {
        const holder = await claim(backend, `${tag}-${i}`, 'h', { ttlMs: TTL_MS });
        const stop = holder.heartbeat({ intervalMs: INTERVAL_MS, onLost: () => lost++ });
        holders.push({ holder, stop });
      }
      return {
        lost: () => lost,
        async stop() {
          for (const h of holders) h.stop();
          await Promise.all(holders.map((h) => h.holder.release()));
        },
      };
    },
  },
  withLease: {
    counts: 'renew',
    async start(backend, tag) {
      let lost = 0;
      let finish!: () => void;
      const finished = new Promise<void>((r) => {
        finish = r;
      });
      const jobs = Array.from({ length: LEASES }, (_, i) =>
        withLease(
          backend,
          `${tag}-${i}`,
          'w',
          { ttlMs: TTL_MS, intervalMs: INTERVAL_MS, onLost: () => lost++ },
          // A long job: it runs until the phase ends.
          () => finished,
        ),
      );
      return {
        lost: () => lost,
        async stop() {
          finish();
          await Promise.all(jobs);
        },
      };
    },
  },
  lead: {
    counts: 'renew',
    async start(backend, tag) {
      let lost = 0;
      let elected = 0;
      const options = {
        ttlMs: TTL_MS,
        intervalMs: INTERVAL_MS,
        waitPollMs: 10,
        onElected: () => {
          elected++;
        },
        onDeposed: (d: { reason: string }) => {
          if (d.reason !== 'released') lost++;
        },
      };
      // A leader and a waiting candidate per name.
      const names = LEASES / 2;
      const all: ReturnType<typeof lead>[] = [];
      for (let i = 0; i < names; i++) {
        all.push(lead(backend, `${tag}-${i}`, 'a', options), lead(backend, `${tag}-${i}`, 'b', options));
      }
      while (elected < names) await sleep(10);
      return {
        lost: () => lost,
        async stop() {
          await Promise.all(all.map((l) => l.stop()));
        },
      };
    },
  },
  group: {
    counts: 'renew',
    async start(backend, tag) {
      let lost = 0;
      const workIds = Array.from({ length: LEASES }, (_, i) => `${tag}-${String(i).padStart(3, '0')}`);
      const options = {
        group: tag,
        workIds,
        ttlMs: TTL_MS,
        intervalMs: INTERVAL_MS,
        rebalanceMs: 200,
        onAssigned: () => {},
        onRevoked: (_id: string, reason: string) => {
          if (reason === 'lost') lost++;
        },
      };
      const a = await joinGroup(backend, { ...options, holderId: 'a' });
      const b = await joinGroup(backend, { ...options, holderId: 'b' });
      // Settled: each member holds its share; the hand-overs are done.
      while (a.held.length + b.held.length < LEASES || a.held.length !== b.held.length) await sleep(50);
      return {
        lost: () => lost,
        async stop() {
          await Promise.all([a.leave(), b.leave()]);
        },
      };
    },
  },
  waiting: {
    counts: 'acquire',
    async start(backend, tag) {
      let lost = 0;
      const n = LEASES / 2;
      const holders: { holder: LeaseHolder; stop: () => void }[] = [];
      for (let i = 0; i < n; i++) {
        const holder = await claim(backend, `${tag}-${i}`, 'h', { ttlMs: TTL_MS });
        holders.push({ holder, stop: holder.heartbeat({ intervalMs: 2000, onLost: () => lost++ }) });
      }
      const controller = new AbortController();
      const waiters = holders.map((_, i) =>
        claim(backend, `${tag}-${i}`, 'w', {
          ttlMs: TTL_MS,
          waitMs: Number.POSITIVE_INFINITY,
          waitPollMs: 10,
          signal: controller.signal,
        }).then(
          (h) => h,
          (err: unknown) => err,
        ),
      );
      return {
        lost: () => lost,
        async stop() {
          controller.abort(new Error('phase over'));
          const ended = await Promise.all(waiters);
          for (const e of ended) if (!(e instanceof Error)) lost++;
          for (const h of holders) h.stop();
          await Promise.all(holders.map((h) => h.holder.release()));
        },
      };
    },
  },
};

const opened = await openBackend(url, { keyPrefix });
const { backend, answered } = counting(opened);
const wanted = phaseList === '' ? Object.keys(phases) : phaseList.split(',');
const report: Record<string, unknown> = {};
for (const name of wanted) {
  const phase = phases[name];
  if (phase === undefined) throw new Error(`unknown phase ${name}`);
  const idle = resources();
  const t0 = performance.now();
  const run = await phase.start(backend, name);
  const setupSeconds = (performance.now() - t0) / 1000;
  // Warm-up: a fifth of the calls, so that pools, buffers and compiled code have settled.
  const counted = (): number => answered[phase.counts] ?? 0;
  let from = counted();
  while (counted() - from < CALLS / 5) await sleep(50);
  const before = { heap: await heap(), resources: resources() };
  from = counted();
  const started = performance.now();
  while (counted() - from < CALLS) await sleep(50);
  const calls = counted() - from;
  const seconds = (performance.now() - started) / 1000;
  const after = { heap: await heap(), resources: resources() };
  const t1 = performance.now();
  await run.stop();
  const stopSeconds = (performance.now() - t1) / 1000;
  const stopped = await settled();
  report[name] = {
    calls,
    seconds,
    setupSeconds,
    stopSeconds,
    before,
    after,
    idle,
    stopped,
    lost: run.lost(),
  };
}
await opened.close();
process.stdout.write(`${JSON.stringify(report)}\n`);
