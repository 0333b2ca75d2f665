/** The comparison benches' measurement: at 1 in flight the sides take turns call by call. */
import { describe, expect, it } from 'vitest';
import { alternate, type Call, type Contender, formatRow, interleave, spread } from '../../bench/compare.ts';

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

describe('interleave', () => {
  it('at 1 in flight prepares each side once per round and alternates their calls', async () => {
    const log: string[] = [];
    const prepared: string[] = [];
    const contender = (name: string): Contender => ({
      name,
      prepare: async (ops, inFlight) => {
        prepared.push(`${name}:${ops}:${inFlight}`);
        return side(name, log);
      },
    });
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

  it('at more in flight runs whole measurements: base, contenders, base', async () => {
    const log: string[] = [];
    const contender = (name: string): Contender => ({ name, prepare: async () => side(name, log) });
    await interleave(contender('base'), [contender('x')], { ops: 4, inFlight: 2, rounds: 1 });
    expect(log).toEqual(['base', 'base', 'base', 'base', 'x', 'x', 'x', 'x', 'base', 'base', 'base', 'base']);
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
