/**
 * Every PostgreSQL URL case of the README's table (between its postgres-url-cases markers),
 * through `openBackend` and through the CLI, each with a time bound: a refused URL is
 * INVALID_ARGUMENT (CLI: exit 2) before any I/O, and every other one settles, whatever the network
 * answers (no host here is called db or db1), with an error of its own: nothing hangs, nothing is
 * INTERNAL, no process exits without a word.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { openBackend } from '../../src/index.ts';
import { run } from '../cli/support.ts';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const table = readme.slice(
  readme.indexOf('<!-- postgres-url-cases: begin -->'),
  readme.indexOf('<!-- postgres-url-cases: end -->'),
);
const cases = [...table.matchAll(/^\| `([^`]+)` +\| (.+?) +\|$/gm)].map((m) => ({
  url: m[1]!,
  refused: m[2]!.startsWith('refused'),
  means: m[2]!,
}));

/** A bound well past callTimeoutMs (2000 here): the time a call may take to fail. */
const BOUND_MS = 8000;

describe("the README's PostgreSQL URL cases", () => {
  it('the table is there, with URLs that work and URLs that are refused', () => {
    expect(cases.filter((c) => c.refused).length).toBeGreaterThanOrEqual(8);
    expect(cases.filter((c) => !c.refused).length).toBeGreaterThanOrEqual(6);
  });

  for (const c of cases) {
    it(`openBackend(${c.url}): ${c.means}`, { timeout: BOUND_MS + 2000 }, async () => {
      const started = performance.now();
      const outcome = await openBackend(c.url, { callTimeoutMs: 2000, migrate: false }).then(
        async (b) => {
          await b.close();
          return { code: 'OK', message: '' };
        },
        (e: unknown) => e as { code: string; message: string },
      );
      const took = performance.now() - started;
      expect(took).toBeLessThan(BOUND_MS);
      if (c.refused) {
        expect(outcome.code).toBe('INVALID_ARGUMENT');
        expect(took).toBeLessThan(500);
        expect(outcome.message).toMatch(/PostgreSQL URL|option/);
      } else {
        expect(['INVALID_ARGUMENT', 'INTERNAL']).not.toContain(outcome.code);
      }
    });
  }

  it('the CLI: exit 2 for every refused URL, another status for the others, each within the bound', {
    timeout: 300_000,
  }, async () => {
    // Three at a time: a CLI from the sources starts in seconds on a loaded 2-core machine. The
    // bound is the start-up plus the call timeout, far from "never settles".
    const results: { c: (typeof cases)[number]; r: Awaited<ReturnType<typeof run>> }[] = [];
    const queue = [...cases];
    await Promise.all(
      [0, 1, 2].map(async () => {
        for (let c = queue.shift(); c !== undefined; c = queue.shift()) {
          results.push({ c, r: await run(['ls', c.url, '--timeout', '2000'], {}, 60_000) });
        }
      }),
    );
    for (const { c, r } of results) {
      if (c.refused) {
        expect(r.code, `${c.url}: ${r.stderr}`).toBe(2);
        expect(r.stderr).toMatch(/^worklease: INVALID_ARGUMENT: /m);
      } else {
        expect(r.code, `${c.url}: killed at the bound`).not.toBeNull();
        expect([0, 1, 2, 13], `${c.url}: ${r.stderr}`).not.toContain(r.code);
        expect(
          r.stderr
            .trim()
            .split('\n')
            .filter((l) => l.startsWith('worklease: ')).length,
        ).toBe(1);
      }
    }
  });
});
