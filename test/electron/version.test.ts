/**
 * The version the About box and `worklease --version` show. It is read from
 * the package's own package.json, found by name from wherever the code runs:
 * the old `../package.json` relative to the module was dist/package.json for
 * the desktop bundle (dist/electron/main.cjs), which does not exist, so the
 * About box said 0.0.0.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { packageRoot, packageVersion, rendererDir } from '../../src/version.ts';

const base = mkdtempSync(path.join(tmpdir(), 'wl-version-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

function layout(files: Record<string, unknown>): string {
  const dir = mkdtempSync(path.join(base, 'l-'));
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), typeof content === 'string' ? content : JSON.stringify(content));
  }
  return dir;
}

const pkg = { name: 'worklease', version: '3.4.5' };

describe('package version', () => {
  it('is found from the desktop bundle, unpackaged and inside an app.asar', () => {
    const checkout = layout({ 'package.json': pkg, 'dist/electron/main.cjs': '' });
    expect(packageVersion(pathToFileURL(path.join(checkout, 'dist/electron/main.cjs')).href)).toBe('3.4.5');
    // electron-builder puts package.json at the root of app.asar (files: dist/**, package.json).
    const asar = layout({
      'resources/app.asar/package.json': pkg,
      'resources/app.asar/dist/electron/main.cjs': '',
    });
    expect(packageVersion(path.join(asar, 'resources/app.asar/dist/electron/main.cjs'))).toBe('3.4.5');
  });

  it('is found from the sources, the compiled entries and their chunks', () => {
    const root = layout({ 'package.json': pkg });
    for (const file of ['src/version.ts', 'dist/cli.js', 'dist/chunks/chunk-AB12.js']) {
      expect(packageVersion(pathToFileURL(path.join(root, file)).href), file).toBe('3.4.5');
      expect(packageRoot(pathToFileURL(path.join(root, file)).href), file).toBe(root);
    }
    expect(rendererDir(pathToFileURL(path.join(root, 'dist/cli.js')).href)).toBe(
      path.join(root, 'dist/renderer'),
    );
  });

  it('skips package.json files of other packages and folders on the way up', () => {
    const project = layout({
      'package.json': { name: 'consumer-app', version: '9.9.9' },
      'node_modules/worklease/package.json': pkg,
      'node_modules/worklease/dist/package.json': { type: 'module' },
      'node_modules/worklease/dist/chunks/x.js': '',
    });
    const chunk = path.join(project, 'node_modules/worklease/dist/chunks/x.js');
    expect(packageVersion(chunk)).toBe('3.4.5');
    expect(packageRoot(chunk)).toBe(path.join(project, 'node_modules/worklease'));
  });

  it('is 0.0.0, not a throw, where there is no worklease package.json at all', () => {
    const bare = layout({ 'package.json': '{not json', 'x/y.js': '' });
    expect(packageVersion(path.join(bare, 'x/y.js'))).toBe('0.0.0');
    expect(packageRoot(path.join(bare, 'x/y.js'))).toBeNull();
  });

  it('reads this repository’s own version from the sources', async () => {
    const { version } = (await import('../../package.json', { with: { type: 'json' } })).default;
    expect(packageVersion()).toBe(version);
  });
});
