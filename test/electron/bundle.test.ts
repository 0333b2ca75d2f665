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
import { electronBuildOptions } from '../../scripts/build-electron.ts';

const out = mkdtempSync(path.join(tmpdir(), 'wl-electron-bundle-'));
let main = '';
let preload = '';

beforeAll(async () => {
  const options = electronBuildOptions(out);
  await Promise.all([
    build({ ...options.main, sourcemap: false }),
    build({ ...options.preload, sourcemap: false }),
  ]);
  main = readFileSync(path.join(out, 'main.cjs'), 'utf8');
  preload = readFileSync(path.join(out, 'preload.cjs'), 'utf8');
}, 60_000);
afterAll(() => rmSync(out, { recursive: true, force: true }));

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
    for (const needle of [
      'sandbox: true',
      'contextIsolation: true',
      'worklease:call',
      'setWindowOpenHandler',
      'will-navigate',
    ]) {
      expect(main, needle).toContain(needle);
    }
    expect(main).toContain("__bundleUrl = require('node:url').pathToFileURL(__filename)");
  });
});
