/**
 * `npm run bench:cli` — start-up time of the installed `worklease` command
 * beside a bare Node start, measured side by side (target: `--help` within
 * 3× `node -e 0`).
 *
 * The installed command is the compiled dist/cli.js (what bin/worklease runs
 * from an npm install); it is built first when missing. Each round runs every
 * command once in a shuffled order, so a burst of load on this shared machine
 * hits all of them alike; medians are reported, with the load average before
 * and after. `--checkout` adds bin/worklease from this checkout (sources
 * through tsx), for comparison.
 *
 * Usage: npm run bench:cli -- [--rounds 20] [--checkout]
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { buildLibraryJs } from '../scripts/build.ts';
import { benchArgs, intArg } from './args.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const args = benchArgs(import.meta.filename, {
  rounds: { type: 'string', default: '20' },
  checkout: { type: 'boolean', default: false },
});
const rounds = intArg(import.meta.filename, 'rounds', args.rounds);
if (!Number.isInteger(rounds) || rounds < 3) throw new Error('--rounds must be an integer ≥ 3');

const cli = path.join(ROOT, 'dist', 'cli.js');
if (!existsSync(cli)) {
  console.info('dist/cli.js is missing: building the library JavaScript first');
  await buildLibraryJs();
}

const commands: Record<string, string[]> = {
  'node -e 0': ['-e', '0'],
  'worklease --help (dist/cli.js)': [cli, '--help'],
};
if (args.checkout)
  commands['bin/worklease --help (checkout, tsx)'] = [path.join(ROOT, 'bin', 'worklease'), '--help'];

function timeOnce(argv: string[]): number {
  const start = process.hrtime.bigint();
  const result = spawnSync(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (result.status !== 0) throw new Error(`${argv.join(' ')} exited ${result.status}: ${result.stderr}`);
  return ms;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const fmtLoad = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const loadBefore = fmtLoad();
const samples: Record<string, number[]> = Object.fromEntries(Object.keys(commands).map((name) => [name, []]));
// One warm-up run each (disk cache), not counted.
for (const argv of Object.values(commands)) timeOnce(argv);
for (let round = 0; round < rounds; round++) {
  const order = Object.keys(commands).sort(() => Math.random() - 0.5);
  for (const name of order) samples[name]!.push(timeOnce(commands[name]!));
}

const base = median(samples['node -e 0']!);
console.info(
  `${rounds} interleaved rounds, Node ${process.version}; load average before ${loadBefore}, after ${fmtLoad()}`,
);
for (const [name, values] of Object.entries(samples)) {
  const med = median(values);
  console.info(
    `${name.padEnd(40)} median ${med.toFixed(1).padStart(7)} ms  (min ${Math.min(...values).toFixed(1)}, max ${Math.max(...values).toFixed(1)})  ${(med / base).toFixed(2)}× node -e 0`,
  );
}
const ratio = median(samples['worklease --help (dist/cli.js)']!) / base;
console.info(`worklease --help / node -e 0 = ${ratio.toFixed(2)} (target ≤ 3)`);
