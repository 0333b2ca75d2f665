/**
 * `npx tsx bench/sentinel.ts [--rounds 7] [--ops 4000]` — what following Sentinel costs per call:
 * on a private master, replica and three sentinels (src/chaos/sentinel-servers.ts), renew and
 * acquire through a `redis+sentinel://` backend against the same calls through a `redis://`
 * backend at the same master, taking turns within each round (bench/compare.ts: call by call at
 * 1 in flight, in slices above). Prints the median rates and the median of the rounds' ratios
 * (sentinel / plain), with the load average.
 */
import { parseArgs } from 'node:util';
import { startSentinelRedis } from '../src/chaos/sentinel-servers.ts';
import { type LeaseBackend, openBackend } from '../src/index.ts';
import { type Call, inTurns, loadText, median } from './compare.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string' }, ops: { type: 'string' } } });
const ROUNDS = Number(values.rounds ?? 7);
const OPS = Number(values.ops ?? 4000);
const TTL_MS = 600_000;

async function prepare(b: LeaseBackend, call: string, tag: string, inFlight: number): Promise<Call> {
  if (call === 'acquire') return (i) => b.acquire(`${tag}:${i}`, 'bench', TTL_MS);
  const leases = await Promise.all(
    Array.from({ length: inFlight }, (_, w) => b.acquire(`${tag}:held:${w}`, 'bench', TTL_MS)),
  );
  return (_, worker) => b.renew(leases[worker]!, TTL_MS);
}

const topo = await startSentinelRedis();
const prefix = `bench_sentinel_${process.pid}`;
const sentinel = await openBackend(topo.url, { keyPrefix: prefix });
const plain = await openBackend(`redis://127.0.0.1:${topo.masterPort}`, { keyPrefix: prefix });
try {
  console.log(
    `redis+sentinel:// against redis:// at the same master (private master + replica + 3 sentinels), ${OPS} calls per side and round (a quarter at 1 in flight), median of ${ROUNDS}, load average ${loadText()}`,
  );
  console.log(
    `${'call'.padEnd(10)}${'in flight'.padStart(10)}${'sentinel/s'.padStart(12)}${'plain/s'.padStart(12)}${'ratio'.padStart(8)}`,
  );
  let tag = 0;
  for (const call of ['renew', 'acquire']) {
    for (const inFlight of [1, 64]) {
      const ops = inFlight === 1 ? Math.floor(OPS / 4) : OPS;
      const ratios: number[] = [];
      const s: number[] = [];
      const p: number[] = [];
      for (let r = 0; r < ROUNDS + 1; r++) {
        const sides = [
          await prepare(plain, call, `p${tag++}`, inFlight),
          await prepare(sentinel, call, `s${tag++}`, inFlight),
        ];
        const [base, measured] = await inTurns(ops, inFlight, sides);
        if (r === 0) continue; // warm-up: both connections up, scripts loaded
        p.push(base!.rate);
        s.push(measured!.rate);
        ratios.push(measured!.rate / base!.rate);
      }
      console.log(
        `${call.padEnd(10)}${String(inFlight).padStart(10)}${median(s).toFixed(0).padStart(12)}${median(p).toFixed(0).padStart(12)}${median(ratios).toFixed(2).padStart(7)}x`,
      );
    }
  }
  console.log(`load average ${loadText()}`);
} finally {
  await Promise.all([sentinel.close(), plain.close()]);
  await topo.stop();
}
