/**
 * The Electron bundles scripts/build-electron.ts produces: a sandboxed preload
 * may require nothing but `electron`, and the packaged main may require only
 * Electron and Node built-ins (the app ships no node_modules).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildLibraryJs } from '../../scripts/build.ts';
import { electronBuildOptions, ROOT } from '../../scripts/build-electron.ts';

const work = mkdtempSync(path.join(tmpdir(), 'wl-electron-bundle-'));
// The compiled library goes to a private folder, not dist/: the package test rebuilds dist/ meanwhile.
const lib = path.join(work, 'lib');
const out = path.join(work, 'out');
let main = '';
let preload = '';
let mainInputs: string[] = [];

beforeAll(async () => {
  await buildLibraryJs(lib);
  const options = electronBuildOptions(out, lib);
  const [mainResult] = await Promise.all([
    build({ ...options.main, sourcemap: false, metafile: true }),
    build({ ...options.preload, sourcemap: false }),
  ]);
  mainInputs = Object.keys(mainResult.metafile.inputs).map((file) => path.resolve(ROOT, file));
  main = readFileSync(path.join(out, 'main.cjs'), 'utf8');
  preload = readFileSync(path.join(out, 'preload.cjs'), 'utf8');
}, 60_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

function requires(code: string): Set<string> {
  return new Set([...code.matchAll(/\brequire\(\s*["']([^"']+)["']\s*\)/g)].map((m) => m[1]!));
}

describe('Electron bundles', () => {
  it('preload requires only electron and exposes only the bridge', () => {
    expect([...requires(preload)]).toEqual(['electron']);
    expect(preload).toContain('exposeInMainWorld');
    expect(preload).toContain('"worklease"');
    // Validation lives in main: zod stays out of the sandboxed preload.
    expect(preload).not.toMatch(/zod|ZodError/);
    expect(preload.length).toBeLessThan(20_000);
  });

  it('main requires only electron, Node built-ins and optional add-ons', () => {
    const builtins = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
    // pg-native: pg's optional native client; ws: only in PGlite's unused emscripten socket code.
    const optional = new Set(['electron', 'pg-native', 'bufferutil', 'utf-8-validate', 'ws']);
    const foreign = [...requires(main)].filter((m) => !builtins.has(m) && !optional.has(m));
    expect(foreign).toEqual([]);
  });

  it('main wires the hardened window and the IPC bridge', () => {
    // Minified: `true` is `!0`.
    for (const needle of [
      'sandbox:!0',
      'contextIsolation:!0',
      'worklease:call',
      'setWindowOpenHandler',
      'will-navigate',
    ]) {
      expect(main, needle).toContain(needle);
    }
    expect(main).toContain("__bundleUrl = require('node:url').pathToFileURL(__filename)");
  });

  it('main is bundled from the compiled library, minified, with class names kept', () => {
    const sources = path.join(ROOT, 'src') + path.sep;
    expect(mainInputs).toContain(path.join(lib, 'electron-common.js'));
    expect(mainInputs.filter((file) => file.startsWith(sources))).toEqual([]);
    // 2.1 MB unminified before; pg, ioredis, PGlite's JS and zod make most of what is left.
    // 1.31 MB with Sentinel, lost-shard recovery, history and holds, and the console's fleet index.
    expect(main.length).toBeLessThan(1_400_000);
    // Minified: local names are gone (the library's own dist keeps them).
    expect(main).not.toContain('async function openBackend(');
    // Error names come from class names (LeaseHeldError, …) and reach the UI: minification must keep them.
    expect(main).toContain('"LeaseHeldError"');
  });
});
