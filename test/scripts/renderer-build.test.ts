/**
 * A checkout's CLI runs the current sources, so the console page it serves must be rebuilt when
 * those sources are newer than the build (a page built before a pull talked to a newer server and
 * showed an empty fleet). This checks the staleness rule on a private folder.
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { newestMtime, rendererStale } from '../../scripts/renderer-build.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'wl-renderer-build-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const at = (file: string, seconds: number) => {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, 'x');
  utimesSync(file, seconds, seconds);
};

describe('renderer staleness', () => {
  const index = path.join(dir, 'dist', 'index.html');
  const src = path.join(dir, 'src');
  const deep = path.join(src, 'console', 'api.ts');

  it('is stale without a build', () => {
    expect(rendererStale(path.join(dir, 'nothing', 'index.html'), [src])).toBe(true);
  });

  it('is current when the build is newer than every source, stale once a source (however deep) is newer', () => {
    at(path.join(src, 'a.ts'), 1_000);
    at(deep, 2_000);
    at(index, 3_000);
    expect(newestMtime([src])).toBe(2_000_000);
    expect(rendererStale(index, [src])).toBe(false);
    at(deep, 4_000);
    expect(rendererStale(index, [src])).toBe(true);
  });

  it('ignores node_modules and roots that do not exist', () => {
    at(index, 5_000);
    at(path.join(src, 'node_modules', 'dep', 'index.js'), 9_000);
    expect(rendererStale(index, [src, path.join(dir, 'missing')])).toBe(false);
  });
});
