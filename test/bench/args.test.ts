/** The benchmark scripts' command line: `--help` prints the header, bad arguments exit 2 before any work. */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { headerOf } from '../../bench/args.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');
const LEASE_BENCH = path.join(ROOT, 'bench/lease.ts');

async function bench(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(TSX, [LEASE_BENCH, ...args], { cwd: ROOT, timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('bench arguments', () => {
  it('--help prints the script header, its usage included, and exits 0', async () => {
    const r = await bench('--help');
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(headerOf(LEASE_BENCH));
    expect(r.stdout).toContain('Usage: npm run bench -- [--backends');
    expect(r.stdout).toContain('[--telemetry-only]');
    expect(r.stdout).toContain('[--calls acquire,renew,checkpoint,release,readCheckpoint]');
  });

  it('an unknown option exits 2 with its name and the whole usage, without connecting anywhere', async () => {
    const r = await bench('--nope', '--pg', 'postgres://nobody@127.0.0.1:1/none');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Unknown option '--nope'");
    expect(r.stderr).toContain('[--pg <url>] [--redis <url>] [--pool 16] [--telemetry-only]');
    expect(r.stdout).toBe('');
  });

  it('an unknown call or backend exits 2 naming it and what the option takes, before any work', async () => {
    const calls = await bench('--calls', 'renew,nope', '--pg', 'postgres://nobody@127.0.0.1:1/none');
    expect(calls.code).toBe(2);
    expect(calls.stderr).toContain(
      '--calls takes a comma-separated list of acquire, renew, checkpoint, release, readCheckpoint; got nope',
    );
    expect(calls.stdout).toBe('');
    const backends = await bench(
      '--backends',
      'postgres,mysql',
      '--pg',
      'postgres://nobody@127.0.0.1:1/none',
    );
    expect(backends.code).toBe(2);
    expect(backends.stderr).toContain(
      '--backends takes a comma-separated list of postgres, redis, redis-wait,',
    );
    expect(backends.stderr).toContain('; got mysql');
    expect(backends.stdout).toBe('');
    const empty = await bench('--calls', ',');
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('; got none');
  });

  it('a bad number exits 2 naming the option', async () => {
    const r = await bench('--rounds', 'x');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--rounds must be an integer >= 1, got x');
  });
});
