/** The comparison benches' measurement: at 1 in flight the sides take turns call by call. */
import { describe, expect, it } from 'vitest';
import {
  alternate,
  type Call,
  type Contender,
  formatRow,
  interleave,
  SLICE,
  sliced,
  spread,
} from '../../bench/compare.ts';

/** A call that records its side in `log` and answers on the next macrotask, like a round trip. */
const side =
  (name: string, log: string[]): Call =>
  () => {
    log.push(name);
    return new Promise((resolve) => setImmediate(resolve));
  };

describe('alternate', () => {
  it('runs one call of each side in turn and measures every side', async () => {
    const log: string[] = [];
    const got = await alternate(4, [side('base', log), side('a', log), side('b', log)]);
    expect(log).toEqual(['base', 'a', 'b', 'base', 'a', 'b', 'base', 'a', 'b', 'base', 'a', 'b']);
    expect(got).toHaveLength(3);
    for (const m of got) {
      expect(m.rate).toBeGreaterThan(0);
      expect(Number.isFinite(m.rate)).toBe(true);
      expect(m.cpuUs).toBeGreaterThanOrEqual(0);
    }
  });
});

/** A contender whose preparations are recorded in `prepared` ("name:ops:inFlight") and calls in `log`. */
const recording =
  (log: string[], prepared: string[]) =>
  (name: string): Contender => ({
    name,
    prepare: async (ops, inFlight) => {
      prepared.push(`${name}:${ops}:${inFlight}`);
      return side(name, log);
    },
  });

describe('interleave', () => {
  it('at 1 in flight prepares each side once per round and alternates their calls', async () => {
    const log: string[] = [];
    const prepared: string[] = [];
    const contender = recording(log, prepared);
    const rows = await interleave(contender('base'), [contender('x')], { ops: 2, inFlight: 1, rounds: 2 });
    expect(prepared).toEqual(['base:2:1', 'x:2:1', 'base:2:1', 'x:2:1']);
    expect(log).toEqual(['base', 'x', 'base', 'x', 'base', 'x', 'base', 'x']);
    expect(rows.map((r) => [r.name, r.inFlight])).toEqual([
      ['base', 1],
      ['x', 1],
    ]);
    expect(rows[0]!.ratio).toBe(1);
    expect(rows[0]!.ratios).toEqual([]);
    expect(rows[1]!.ratios).toHaveLength(2);
    expect(rows[1]!.ratio).toBeGreaterThan(0);
  });

  it('at more in flight prepares each side once per round and runs them in slices, taking turns', async () => {
    const log: string[] = [];
    const prepared: string[] = [];
    const contender = recording(log, prepared);
    const rows = await interleave(contender('base'), [contender('x')], { ops: 1200, inFlight: 2, rounds: 1 });
    expect(prepared).toEqual(['base:1200:2', 'x:1200:2']);
    // Slices of SLICE (500) calls: base, x, then x, base, then base, x (the last slice 200 calls).
    const runs: Array<[string, number]> = [];
    for (const name of log) {
      const last = runs[runs.length - 1];
      if (last !== undefined && last[0] === name) last[1]++;
      else runs.push([name, 1]);
    }
    expect(SLICE).toBe(500);
    expect(runs).toEqual([
      ['base', 500],
      ['x', 1000],
      ['base', 700],
      ['x', 200],
    ]);
    expect(rows[1]!.ratios).toHaveLength(1);
  });
});

describe('sliced', () => {
  it('runs every call number of every side once, never more than inFlight at a time', async () => {
    const seen = [new Set<number>(), new Set<number>()];
    let open = 0;
    let most = 0;
    const fn =
      (k: number): Call =>
      async (i, worker) => {
        expect(worker).toBeLessThan(3);
        expect(seen[k]!.has(i)).toBe(false);
        seen[k]!.add(i);
        most = Math.max(most, ++open);
        await new Promise((resolve) => setImmediate(resolve));
        open--;
      };
    const got = await sliced(7, 3, [fn(0), fn(1)], 3);
    for (const s of seen) expect([...s].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(most).toBe(3);
    expect(got).toHaveLength(2);
    for (const m of got) {
      expect(m.rate).toBeGreaterThan(0);
      expect(Number.isFinite(m.rate)).toBe(true);
      expect(m.cpuUs).toBeGreaterThanOrEqual(0);
    }
  });

  it('times each side on its own slices: a slower side gets the lower rate', async () => {
    const wait =
      (ms: number): Call =>
      () =>
        new Promise((resolve) => setTimeout(resolve, ms));
    const [fast, slow] = await sliced(8, 2, [wait(1), wait(8)], 2);
    expect(fast!.rate).toBeGreaterThan(slow!.rate * 2);
  });
});

describe('spread', () => {
  it("prints the rounds' lowest and highest ratio, and nothing for a single round", () => {
    expect(spread([0.9, 0.7, 0.8])).toBe('  0.70–0.90');
    expect(spread([0.8])).toBe('');
    expect(spread([])).toBe('');
    const row = { name: 'x', inFlight: 64, rate: 1000, cpuUs: 12.5, ratio: 0.8, ratios: [0.9, 0.7, 0.8] };
    expect(formatRow(row, 1.2)).toMatch(/0\.80x {2}0\.70–0\.90 {2}\(below the 1\.2 target\)$/);
    expect(formatRow({ ...row, ratio: 1, ratios: [] })).toMatch(/1\.00x$/);
  });
});
