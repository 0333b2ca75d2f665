/**
 * How much the token entropy estimate (src/server/entropy.ts) takes off random tokens by
 * chance: for tokens of 16 random bytes in each shape the docs name (`openssl rand -hex 16`,
 * `-base64 16`, base64url), the histogram of capacity − estimate in whole bits, the lowest
 * estimate seen and the time per token. It is what sets `MIN_ESTIMATED_BITS`
 * (src/server/auth.ts): the floor must sit well below the lowest estimate of a random token.
 * Then the estimates of a few hand-made tokens, which the floor must refuse.
 *
 * Usage: npx tsx bench/token-entropy.ts [--tokens 200000]
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { MIN_ESTIMATED_BITS } from '../src/server/auth.ts';
import { capacityOf, estimateEntropyBits } from '../src/server/entropy.ts';
import { benchArgs, intArg } from './args.ts';

const args = benchArgs(import.meta.filename, { tokens: { type: 'string', default: '200000' } });
const n = intArg(import.meta.filename, 'tokens', args.tokens);

const shapes: Record<string, () => string> = {
  'hex 16 bytes': () => randomBytes(16).toString('hex'),
  'base64 16 bytes': () => randomBytes(16).toString('base64'),
  'base64url 16 bytes': () => randomBytes(16).toString('base64url'),
};
console.log(
  `load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}; ${n} tokens per shape`,
);
for (const [shape, make] of Object.entries(shapes)) {
  const lost = new Map<number, number>();
  let lowest = Number.POSITIVE_INFINITY;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const token = make();
    const estimate = estimateEntropyBits(token);
    const bits = Math.ceil(capacityOf(token).bits - estimate);
    lost.set(bits, (lost.get(bits) ?? 0) + 1);
    lowest = Math.min(lowest, estimate);
  }
  const us = ((performance.now() - t0) * 1000) / n;
  const histogram = [...lost]
    .sort((a, b) => a[0] - b[0])
    .map(([bits, count]) => `${bits}:${count}`)
    .join(' ');
  console.log(
    `${shape}: lowest estimate ${lowest.toFixed(1)} bits, ${us.toFixed(1)} µs/token; bits lost:count ${histogram}`,
  );
}
for (const token of [
  '0123456789abcdef'.repeat(2),
  'passwordpassword1234567890',
  'correcthorsebatterystaple1234567890',
]) {
  console.log(
    `${token}: capacity ${capacityOf(token).bits.toFixed(0)}, estimate ${estimateEntropyBits(token).toFixed(1)} (floor ${MIN_ESTIMATED_BITS})`,
  );
}
