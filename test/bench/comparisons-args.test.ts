/** The comparison and growth benches' command lines: `--help` prints the header, bad arguments exit 2 before any work. */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { headerOf } from '../../bench/args.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');
/** Servers nothing listens on: a bench that got past its arguments would fail to connect, not run. */
const NOWHERE = ['--pg', 'postgres://nobody@127.0.0.1:1/none', '--redis', 'redis://127.0.0.1:1'];
const OPTIONS: Record<string, string[]> = {
  'growth.ts': NOWHERE,
  'clients.ts': NOWHERE,
  'redlock.ts': ['--redis', 'redis://127.0.0.1:1'],
  'overhead.ts': NOWHERE,
};

async function bench(
  script: string,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(TSX, [path.join(ROOT, 'bench', script), ...args], {
      cwd: ROOT,
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe.each([
  ['growth.ts', 'Usage: npm run bench:growth -- [--backends redis,postgres] [--sizes'],
  ['redlock.ts', 'Usage: npm run bench:redlock -- [--redis <url>]'],
  ['clients.ts', 'Usage: npm run bench:clients -- [--backends redis,postgres]'],
  ['overhead.ts', 'Usage: npm run bench:overhead -- [--pg <url>] [--redis <url>]'],
])('%s', (script, usage) => {
  it('--help prints the script header, its usage included, and exits 0', async () => {
    const r = await bench(script, '--help');
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(headerOf(path.join(ROOT, 'bench', script)));
    expect(r.stdout).toContain(usage);
  });

  it('an unknown option exits 2 with its name and the usage, without connecting anywhere', async () => {
    const r = await bench(script, '--nope', ...OPTIONS[script]!);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Unknown option '--nope'");
    expect(r.stderr).toContain(usage);
    expect(r.stdout).toBe('');
  });

  it('a bad number exits 2 naming the option', async () => {
    const r = await bench(script, '--rounds', '0', ...OPTIONS[script]!);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--rounds must be an integer >= 1, got 0');
  });
});

describe('overhead.ts backends', () => {
  it('an unknown backend exits 2 naming it', async () => {
    const r = await bench('overhead.ts', '--backends', 'postgres,mysql', ...NOWHERE);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--backends: unknown backend mysql (postgres, redis)');
  });
});

describe('growth.ts sizes and backends', () => {
  it('a size that is not a positive integer exits 2', async () => {
    const r = await bench('growth.ts', '--sizes', '1000,1e', ...NOWHERE);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--sizes must be an integer >= 1, got 1e');
  });

  it('sizes that do not increase exit 2', async () => {
    const r = await bench('growth.ts', '--sizes', '1000,1000', ...NOWHERE);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--sizes must be increasing, got 1000,1000');
  });

  it('an unknown backend exits 2 naming it', async () => {
    const r = await bench('growth.ts', '--backends', 'redis,mysql', ...NOWHERE);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--backends: unknown backend mysql (redis, postgres)');
  });
});

describe('clients.ts backends', () => {
  it('an unknown backend exits 2 naming it, before connecting', async () => {
    const r = await bench('clients.ts', '--backends', 'redis,mysql', ...NOWHERE);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--backends: unknown backend mysql (redis, postgres)');
    expect(r.stdout).toBe('');
  });
});
