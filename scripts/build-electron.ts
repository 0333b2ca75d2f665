/**
 * Bundles the Electron main and preload scripts into dist/electron/,
 * self-contained so the packaged app ships no node_modules:
 *
 * - main.cjs: CommonJS for Electron's Node, minified, built from the compiled
 *   library (dist/electron-common.js from scripts/build.ts, the same JS the
 *   npm package runs) rather than from src/ again. Every dependency is inlined
 *   except `electron` and optional native add-ons the libraries only try to
 *   load. PGlite finds its wasm and data files next to the bundle (copied
 *   here), through the `import.meta.url` shim below.
 * - preload.cjs: a sandboxed preload may `require` only `electron`, so it is
 *   bundled for the browser platform from its two small sources (type-only
 *   imports of the API contract, and the channel names): the compiled chunks
 *   carry a Node `require` shim a sandboxed preload cannot load.
 * - icon.png for the window.
 *
 * Run: `npm run build:electron` (also done by `npm start` / `npm run dist`).
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { type BuildOptions, build, type Plugin } from 'esbuild';
import { buildLibraryJs } from './build.ts';

export const ROOT = path.resolve(import.meta.dirname, '..');

/** Optional add-ons that pg and ws `require` inside try/catch; absent on purpose. */
const OPTIONAL_NATIVE = ['pg-native', 'bufferutil', 'utf-8-validate'];
const PGLITE_FILES = ['pglite.wasm', 'initdb.wasm', 'pglite.data'];

/** Points electron/main.ts's import of src/electron-common/index.ts at its compiled form in `libDir`. */
function compiledCore(libDir: string): Plugin {
  return {
    name: 'worklease-compiled-core',
    setup(b) {
      b.onResolve({ filter: /src\/electron-common\/index\.ts$/ }, () => ({
        path: path.join(libDir, 'electron-common.js'),
      }));
    },
  };
}

export function electronBuildOptions(
  outDir: string,
  libDir = path.join(ROOT, 'dist'),
): { main: BuildOptions; preload: BuildOptions } {
  const common: BuildOptions = {
    bundle: true,
    format: 'cjs',
    target: 'node22',
    sourcemap: 'linked',
    legalComments: 'none',
    logLevel: 'warning',
    absWorkingDir: ROOT,
    minify: true,
    // Error classes set `name` from their class (LeaseHeldError, …): minified names would leak into the UI.
    keepNames: true,
  };
  return {
    main: {
      ...common,
      entryPoints: [path.join(ROOT, 'electron/main.ts')],
      outfile: path.join(outDir, 'main.cjs'),
      platform: 'node',
      external: ['electron', ...OPTIONAL_NATIVE],
      plugins: [compiledCore(libDir)],
      // The drivers the compiled library leaves external come from this repository's node_modules,
      // wherever libDir is.
      nodePaths: [path.join(ROOT, 'node_modules')],
      // ESM code reads files relative to import.meta.url (package.json, PGlite's wasm); in a CJS bundle that is the bundle file.
      define: { 'import.meta.url': '__bundleUrl', 'import.meta.dirname': '__dirname' },
      banner: { js: "const __bundleUrl = require('node:url').pathToFileURL(__filename).href;" },
    },
    preload: {
      ...common,
      entryPoints: [path.join(ROOT, 'electron/preload.ts')],
      outfile: path.join(outDir, 'preload.cjs'),
      platform: 'browser',
      target: 'chrome130',
      external: ['electron'],
    },
  };
}

/**
 * Compiles the library's JavaScript into `libDir` (the esbuild half of
 * `npm run build`, about a second; no types, no page), then bundles main and
 * preload from it into `outDir`.
 */
export async function buildElectron(
  outDir = path.join(ROOT, 'dist', 'electron'),
  libDir = path.join(ROOT, 'dist'),
): Promise<string> {
  mkdirSync(outDir, { recursive: true });
  await buildLibraryJs(libDir);
  const { main, preload } = electronBuildOptions(outDir, libDir);
  await Promise.all([build(main), build(preload)]);
  const pgliteDist = path.join(ROOT, 'node_modules', '@electric-sql', 'pglite', 'dist');
  for (const file of PGLITE_FILES) copyFileSync(path.join(pgliteDist, file), path.join(outDir, file));
  copyFileSync(path.join(ROOT, 'assets', 'icons', '512x512.png'), path.join(outDir, 'icon.png'));
  return outDir;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const out = await buildElectron();
  console.info(`built ${path.relative(process.cwd(), out) || out}/{main,preload}.cjs`);
}
