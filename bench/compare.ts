/**
 * Side-by-side measurement for the comparison benches (redlock.ts, clients.ts, growth.ts): a
 * baseline and one or more contenders run the same number of calls at the same number in
 * flight, taking turns within each round: at 1 in flight call by call ({@link alternate}), above
 * in slices of a few hundred calls ({@link sliced}); each contender's ratio is its rate over the
 * baseline's in the same round. Rates, ratios and client CPU per
 * call are the medians over the rounds, each taken on its own: when the machine's load moves
 * between rounds, the median ratio (which compares neighbours) is the figure to read, and it
 * can differ from the ratio of the two median rates. Nothing here does I/O of its own.
 */
import { loadavg } from 'node:os';

/** One timed call: `i` numbers the call in its measurement, `worker` the in-flight slot running it. */
export type Call = (i: number, worker: number) => Promise<unknown>;

export interface Measurement {
  /** Calls per second (wall clock). */
  rate: number;
  /** Client CPU (user + system of this whole process) per call, in microseconds. */
  cpuUs: number;
}

/** Runs calls `from` to `to` - 1 with `inFlight` outstanding at a time (each slot awaits its own call before the next). */
async function run(from: number, to: number, inFlight: number, fn: Call): Promise<void> {
  let next = from;
  await Promise.all(
    Array.from({ length: Math.min(inFlight, to - from) }, async (_, worker) => {
      while (next < to) {
        const i = next++;
        await fn(i, worker);
      }
    }),
  );
}

/** Runs `ops` calls with `inFlight` outstanding at a time (each slot awaits its own call before the next). */
export async function measure(ops: number, inFlight: number, fn: Call): Promise<Measurement> {
  const cpu0 = process.cpuUsage();
  const start = process.hrtime.bigint();
  await run(0, ops, inFlight, fn);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  return { rate: ops / seconds, cpuUs: (cpu.user + cpu.system) / ops };
}

/** Calls per slice in {@link sliced}. */
export const SLICE = 500;

/**
 * The measurement above 1 in flight: `ops` calls of each of `fns`, in slices of `slice` calls
 * (`inFlight` outstanding within a slice) that take turns, in order and then in reverse order
 * (fns[0], fns[1], fns[1], fns[0], fns[0], …), each side's rate its calls over the time of its own
 * slices. Whole measurements one after the other (base, call, base) met different load when the
 * machine's load moved in between; slices of a few milliseconds each meet the same. Each slice
 * starts with `inFlight` calls at once and ends waiting for its last ones, a share of its time
 * that is `inFlight / slice` of a round trip per call whatever the side's speed, so it weighs
 * on every side alike. CPU per call is read around each slice.
 */
export async function sliced(
  ops: number,
  inFlight: number,
  fns: readonly Call[],
  slice = SLICE,
): Promise<Measurement[]> {
  const ns = fns.map(() => 0n);
  const cpu = fns.map(() => 0);
  for (let from = 0, s = 0; from < ops; from += slice, s++) {
    const to = Math.min(ops, from + slice);
    for (let j = 0; j < fns.length; j++) {
      const k = s % 2 === 0 ? j : fns.length - 1 - j;
      const c0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      await run(from, to, inFlight, fns[k]!);
      ns[k]! += process.hrtime.bigint() - t0;
      const c = process.cpuUsage(c0);
      cpu[k]! += c.user + c.system;
    }
  }
  return fns.map((_, k) => ({ rate: (ops * 1e9) / Number(ns[k]!), cpuUs: cpu[k]! / ops }));
}

/**
 * Runs `ops` calls of each of `fns` one at a time, taking turns call by call (fns[0], fns[1], …,
 * fns[0], …), and times each call on its own: the measurement at 1 in flight. A lone round trip's
 * time moves with how the OS schedules the client and the server (the same raw script at 1 in
 * flight ran at 7.4k/s and at 19k/s in two cells of one run here), and that regime
 * can change within a measurement of a few hundred calls; calls that take turns share it. CPU per
 * call is read around each call (two getrusage calls, on every side alike).
 */
export async function alternate(ops: number, fns: readonly Call[]): Promise<Measurement[]> {
  const ns = fns.map(() => 0n);
  const cpu = fns.map(() => 0);
  for (let i = 0; i < ops; i++) {
    for (let k = 0; k < fns.length; k++) {
      const c0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      await fns[k]!(i, 0);
      ns[k]! += process.hrtime.bigint() - t0;
      const c = process.cpuUsage(c0);
      cpu[k]! += c.user + c.system;
    }
  }
  return fns.map((_, k) => ({ rate: (ops * 1e9) / Number(ns[k]!), cpuUs: cpu[k]! / ops }));
}

/** The sides of one round in turns: call by call at 1 in flight ({@link alternate}), else in slices ({@link sliced}). */
export const inTurns = (ops: number, inFlight: number, fns: readonly Call[]): Promise<Measurement[]> =>
  inFlight === 1 ? alternate(ops, fns) : sliced(ops, inFlight, fns);

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
};

export const loadText = (): string =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

export interface Contender {
  name: string;
  /** Called before every measurement of this contender (untimed); returns the timed call. */
  prepare(ops: number, inFlight: number): Promise<Call>;
}

export interface Row {
  name: string;
  inFlight: number;
  rate: number;
  cpuUs: number;
  /** Against the baseline around it; 1 for the baseline itself. */
  ratio: number;
  /** The per-round ratios the median `ratio` was taken of (empty for the baseline). */
  ratios: number[];
}

/**
 * `rounds` rounds, each preparing every side anew and running them {@link inTurns}. Returns the
 * baseline's row, then one row per contender.
 */
export async function interleave(
  base: Contender,
  contenders: readonly Contender[],
  opts: { ops: number; inFlight: number; rounds: number },
): Promise<Row[]> {
  const { ops, inFlight, rounds } = opts;
  const bases: Measurement[] = [];
  const runs = contenders.map(() => ({ m: [] as Measurement[], ratios: [] as number[] }));
  for (let r = 0; r < rounds; r++) {
    const fns = [await base.prepare(ops, inFlight)];
    for (const c of contenders) fns.push(await c.prepare(ops, inFlight));
    const [b, ...got] = await inTurns(ops, inFlight, fns);
    bases.push(b!);
    got.forEach((m, c) => {
      runs[c]!.m.push(m);
      runs[c]!.ratios.push(m.rate / b!.rate);
    });
  }
  const row = (name: string, ms: Measurement[], ratios: number[]): Row => ({
    name,
    inFlight,
    rate: median(ms.map((m) => m.rate)),
    cpuUs: median(ms.map((m) => m.cpuUs)),
    ratio: ratios.length === 0 ? 1 : median(ratios),
    ratios,
  });
  return [row(base.name, bases, []), ...contenders.map((c, k) => row(c.name, runs[k]!.m, runs[k]!.ratios))];
}

/** The table's header line, for rows printed by {@link formatRow}. */
export function header(first = 'client'): string {
  return `${first.padEnd(28)}${'in flight'.padStart(10)}${'calls/s'.padStart(12)}${'cpu us/call'.padStart(13)}${'ratio'.padStart(8)}`;
}

/** `  lo–hi` of the per-round ratios, when there are several: how far apart the rounds were. */
export function spread(ratios: readonly number[]): string {
  if (ratios.length < 2) return '';
  return `  ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}`;
}

/** One table line: the median ratio, then the rounds' range; `target` marks a contender below it. */
export function formatRow(r: Row, target?: number): string {
  const below = target !== undefined && r.ratio < target ? `  (below the ${target} target)` : '';
  return `${r.name.padEnd(28)}${String(r.inFlight).padStart(10)}${r.rate.toFixed(0).padStart(12)}${r.cpuUs.toFixed(1).padStart(13)}${r.ratio.toFixed(2).padStart(7)}x${spread(r.ratios)}${below}`;
}

/** True when the module at `file` (its `import.meta.filename`) is the script node was started with. */
export function isMain(file: string): boolean {
  return process.argv[1] !== undefined && file === process.argv[1];
}
