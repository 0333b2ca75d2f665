/**
 * `npm run bench:redlock` (also part of `npm run bench`) — acquire+release cycles of worklease
 * on Redis against node-redlock (the `redlock` 4.x package) on the same Redis server.
 *
 * One cycle is, on worklease, `acquire(workId, holder, ttl)` then `release(lease)`; on
 * redlock, `lock(resource, ttl)` then `unlock(lock)`. Both are one script round trip each, so a
 * cycle is two round trips on both sides. redlock is given what a single-server lock needs:
 * one ioredis client, `retryCount: 0` (no retry; no call here ever meets a held lock), the
 * same ttl (60 s). Each in-flight slot locks and releases its own key over and over (a
 * released worklease lease is acquired again, a redlock key is set again), so neither side
 * waits on the other's lock and the stored data does not grow during a run.
 *
 * Rounds alternate redlock, worklease, redlock; the ratio is worklease's cycles per second
 * over the mean of the two redlock rates around it, median of `--rounds` (of the per-round
 * ratios, so it can differ from the ratio of the median rates); the target is at
 * least 1.2x. `cpu us/call` is this process's CPU time (user + system) per cycle. A second table
 * splits a cycle at 1 in flight into the server's time and the rest ({@link printSplit}). Keys live
 * under a random `bench_…` prefix, removed at the end.
 *
 * At 1 in flight two more rows, in the same rounds, say what bounds any cycle of two script round
 * trips there ({@link bounds}): redlock's own two scripts sent through worklease's lease-call
 * connection (src/backends/redis/wire.ts), which is all of redlock's server work with worklease's
 * client, and two PINGs through that connection, which is the round trips alone. A worklease cycle
 * does strictly more server work than redlock's scripts (a fencing token, the server's clock, a
 * change entry per ownership change), so the first row is above what it can reach. Those rows and
 * worklease's busy-poll while a lone call waits (OpenOptions.busyPollMs, wire.ts), as a backend
 * does by default; one more row, a backend opened with `busyPollMs: 0`, shows what that gives, and
 * `cpu us/call` what it costs.
 *
 * Usage: npm run bench:redlock -- [--redis <url>] [--rounds 3] [--ops 10000]
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { Redis } from 'ioredis';
import Redlock from 'redlock';
import { parseRedisUrl } from '../src/backends/redis/connection.ts';
import { defaultBusyPollMs } from '../src/backends/redis/poll.ts';
import { Wire } from '../src/backends/redis/wire.ts';
import { openBackend } from '../src/index.ts';
import { benchArgs, intArg } from './args.ts';
import { unlinkPrefix } from './cleanup.ts';
import {
  type Contender,
  formatRow,
  header,
  interleave,
  isMain,
  loadText,
  measure,
  median,
} from './compare.ts';
import { scriptTimes } from './server-time.ts';

const TTL_MS = 60_000;
const REDLOCK_VERSION = (createRequire(import.meta.url)('redlock/package.json') as { version: string })
  .version;
/** The target: worklease cycles at least 1.2x redlock's. */
const TARGET = 1.2;

export async function benchRedlock(opts: { url: string; rounds: number; ops: number }): Promise<void> {
  const ns = `bench_${randomBytes(4).toString('hex')}`;
  const backend = await openBackend(opts.url, { keyPrefix: ns });
  const quiet = await openBackend(opts.url, { keyPrefix: ns, busyPollMs: 0 });
  const client = new Redis(opts.url);
  // @types/redlock describes ioredis 4's eval signature; redlock only calls evalsha(sha, args,
  // callback) and eval(args, callback), which ioredis 5 takes as they are.
  const redlock = new Redlock([client as unknown as Redlock.CompatibleRedisClient], {
    retryCount: 0,
    driftFactor: 0.01,
  });
  try {
    const worklease: Contender = {
      name: 'worklease acquire+release',
      prepare: async () => async (_i, w) => {
        const lease = await backend.acquire(`w${w}`, 'bench-holder', TTL_MS);
        await backend.release(lease);
      },
    };
    const unpolled: Contender = {
      name: 'worklease, busyPollMs=0',
      prepare: async () => async (_i, w) => {
        const lease = await quiet.acquire(`q${w}`, 'bench-holder', TTL_MS);
        await quiet.release(lease);
      },
    };
    const node: Contender = {
      name: 'redlock lock+unlock',
      prepare: async () => async (_i, w) => {
        const lock = await redlock.lock(`${ns}:redlock:${w}`, TTL_MS);
        await redlock.unlock(lock);
      },
    };
    // Warm up both: connections, script caches (redlock loads its scripts on the first NOSCRIPT).
    await measure(500, 64, await worklease.prepare(500, 64));
    await measure(500, 64, await node.prepare(500, 64));
    await measure(500, 64, await unpolled.prepare(500, 64));
    console.log(
      `\nredis (${backend.url}): worklease vs redlock ${REDLOCK_VERSION}, ${opts.ops} cycles per measurement, median of ${opts.rounds}, load average ${loadText()}`,
    );
    console.log(header('cycle'));
    const bound = await bounds(opts.url, ns, redlock);
    try {
      for (const inFlight of [1, 64]) {
        const others = inFlight === 1 ? [unpolled, ...bound.contenders] : [];
        const rows = await interleave(node, [worklease, ...others], {
          ops: opts.ops,
          inFlight,
          rounds: opts.rounds,
        });
        console.log(formatRow(rows[0]!));
        console.log(formatRow(rows[1]!, TARGET));
        for (const r of rows.slice(2)) console.log(formatRow(r));
      }
    } finally {
      bound.close();
    }
    await printSplit(opts.url, [node, worklease], opts.rounds);
    console.log(`load average ${loadText()}`);
  } finally {
    await backend.close();
    await quiet.close();
    client.disconnect();
    await unlinkPrefix(opts.url, ns);
  }
}

/**
 * The rows that bound a cycle at 1 in flight (see the header): redlock's lock and unlock scripts,
 * with a random value per cycle as redlock makes one, and two PINGs, both written through a
 * {@link Wire} of their own, the connection worklease's lease calls use on a standalone server.
 */
async function bounds(
  url: string,
  ns: string,
  redlock: Redlock,
): Promise<{ contenders: Contender[]; close(): void }> {
  const target = parseRedisUrl(url);
  if (target.kind !== 'redis') return { contenders: [], close: () => {} };
  const wire = new Wire(target, {
    name: 'bench-bounds',
    connectTimeoutMs: 5000,
    callTimeoutMs: 5000,
    tickMs: 100,
    busyPollMs: defaultBusyPollMs(),
  });
  wire.start();
  for (let i = 0; !wire.ready; i++) {
    if (i === 500) throw new Error('bench: the connection of the bound rows did not get ready in 5 s');
    await new Promise((r) => setTimeout(r, 10));
  }
  // redlock 4 keeps its scripts and their SHA-1s here; it loaded them during the warm-up.
  const { lockScript, unlockScript } = (
    redlock as unknown as { scripts: Record<'lockScript' | 'unlockScript', { hash: string }> }
  ).scripts;
  const scripts: Contender = {
    name: "redlock's scripts, our wire",
    prepare: async () => async (_i, w) => {
      const key = `${ns}:bound:${w}`;
      const value = randomBytes(16).toString('hex');
      await wire.call('EVALSHA', [lockScript.hash, 1, key, value, TTL_MS], false);
      await wire.call('EVALSHA', [unlockScript.hash, 1, key, value], false);
    },
  };
  const pings: Contender = {
    name: 'two PINGs, our wire',
    prepare: async () => async () => {
      await wire.call('PING', [], false);
      await wire.call('PING', [], false);
    },
  };
  return { contenders: [scripts, pings], close: () => wire.close() };
}

/**
 * Where a cycle's time goes at 1 in flight: its wall time, the server's part of it (the EVALSHA
 * line of INFO commandstats, usec over the pass's cycles) and the rest (client, network, waking
 * up), median of `rounds` passes of 400 cycles of each side alone, alternating. Both sides make
 * two round trips per cycle, so the rest is about the same on both, and worklease reaches the
 * target only if its cycle takes under 1 / 1.2 of redlock's: the line under the table says how
 * many µs of server time per cycle that would leave it.
 */
async function printSplit(url: string, sides: readonly Contender[], rounds: number): Promise<void> {
  const stats = scriptTimes(url);
  try {
    const ops = 400;
    const wall = sides.map(() => [] as number[]);
    const server = sides.map(() => [] as number[]);
    for (let r = 0; r < rounds; r++) {
      for (const [k, side] of sides.entries()) {
        const call = await side.prepare(ops, 1);
        const t = await stats.during(() => measure(ops, 1, call));
        wall[k]!.push(1e6 / t.result.rate);
        server[k]!.push(t.usec / ops);
      }
    }
    console.log(`\nper cycle at 1 in flight, median of ${rounds} passes of ${ops}`);
    console.log(
      `${'cycle'.padEnd(28)}${'us'.padStart(8)}${'server us'.padStart(11)}${'rest us'.padStart(9)}`,
    );
    for (const [k, side] of sides.entries()) {
      const w = median(wall[k]!);
      const sv = median(server[k]!);
      console.log(
        `${side.name.padEnd(28)}${w.toFixed(0).padStart(8)}${sv.toFixed(1).padStart(11)}${(w - sv).toFixed(0).padStart(9)}`,
      );
    }
    const budget = median(wall[0]!) / TARGET - (median(wall[1]!) - median(server[1]!));
    console.log(
      `at ${TARGET}x redlock a worklease cycle may take ${(median(wall[0]!) / TARGET).toFixed(0)} us: with its rest as measured, ${budget.toFixed(0)} us of server time per cycle (measured: ${median(server[1]!).toFixed(1)})`,
    );
  } finally {
    stats.close();
  }
}

if (isMain(import.meta.filename)) {
  const args = benchArgs(import.meta.filename, {
    redis: { type: 'string', default: process.env.WORKLEASE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379' },
    rounds: { type: 'string', default: '3' },
    ops: { type: 'string', default: '10000' },
  });
  await benchRedlock({
    url: args.redis,
    rounds: intArg(import.meta.filename, 'rounds', args.rounds),
    ops: intArg(import.meta.filename, 'ops', args.ops),
  });
}
