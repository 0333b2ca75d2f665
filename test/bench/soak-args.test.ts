/** `npm run bench:soak`'s command line: `--help` prints the header; bad numbers exit 2 before any work. */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { headerOf } from '../../bench/args.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');
const SOAK = path.join(ROOT, 'bench/soak.ts');

async function soak(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(TSX, [SOAK, ...args], {
      cwd: ROOT,
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('bench:soak arguments', () => {
  it('--help prints the header with its usage and exits 0', async () => {
    const r = await soak('--help');
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(headerOf(SOAK));
    expect(r.stdout).toContain('Usage: npm run bench:soak -- [--leases 5000] [--minutes 10]');
  });

  it('bad minutes, leases, constructs or backend exit 2 naming the option, without connecting anywhere', async () => {
    const cases: [string[], string][] = [
      [['--minutes', '0'], '--minutes must be a number above 0, got 0'],
      [['--minutes', 'ten'], '--minutes must be a number above 0, got ten'],
      [['--leases', '0'], '--leases must be an integer >= 1, got 0'],
      [
        ['--constructs', 'heartbeat,nope'],
        '--constructs takes a comma-separated list of heartbeat, withLease, lead, group',
      ],
      [['--backend', 'mysql'], '--backend takes a comma-separated list of redis, postgres, pglite'],
    ];
    for (const [args, message] of cases) {
      const r = await soak(
        ...args,
        '--redis',
        'redis://127.0.0.1:1',
        '--pg',
        'postgres://nobody@127.0.0.1:1/none',
      );
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(message);
      expect(r.stdout).toBe('');
    }
  });
});
