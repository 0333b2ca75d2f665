/**
 * Long-lived means flat: what a served console keeps for the life of its process (sessions,
 * failure counts per address, the security log's folding, event streams) stays bounded however
 * many people sign in and out, guess tokens from new addresses, and open streams. Measured in a
 * child under `node --expose-gc` (test/server/heap-child.ts), after a full GC, once the bounded
 * tables are full and V8 has settled: 1 500 sign-ins and sign-outs, 1 500 wrong tokens from
 * 1 500 new addresses and 375 streams. A positive control leaks about 1 KiB a sign-in in the same
 * child, and must cross the same bound.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

interface Figures {
  before: { heap: number; handles: number };
  after: { heap: number; handles: number };
  rounds: number;
  kept: number;
}

async function child(...args: string[]): Promise<Figures> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', 'test/server/heap-child.ts', '25', '100', ...args],
    { timeout: 240_000 },
  );
  return JSON.parse(stdout) as Figures;
}

/**
 * Growth allowed over the measured 15 rounds: about 500 bytes a sign-in. Measured here: 239 KiB
 * in all without a leak, 1.55 MiB with the control's.
 */
const BOUND = 768 * 1024;

describe('a served console under sign-in churn', () => {
  it('keeps heap and handles flat; a leak of 1 KiB a sign-in is caught by the same bound', async () => {
    const flat = await child();
    expect(flat.rounds).toBe(15);
    expect(flat.after.handles).toBe(flat.before.handles);
    expect(flat.after.heap - flat.before.heap).toBeLessThan(BOUND);
    const leaking = await child('--leak');
    expect(leaking.kept).toBe(5_000);
    expect(leaking.after.heap - leaking.before.heap).toBeGreaterThan(BOUND);
  }, 600_000);
});
