/**
 * `npm run build`: the package as it is published, into dist/.
 *
 * - JavaScript: esbuild bundles each entry below to ESM with code splitting
 *   (dist/<entry>.js + dist/chunks/), with source maps that embed the sources.
 *   esbuild rather than plain `tsc` (TS 5.9 could rewrite the `.ts` import
 *   specifiers itself) because bundling inlines the three small runtime
 *   libraries — commander, ws and zod — so the package has no runtime
 *   dependency at all: zod alone is 8.2 MB on disk (v3 + v4 + mini, CJS + ESM
 *   + sources) of which the console uses about 60 KB. Splitting keeps each
 *   backend in its own chunk, loaded by `openBackend` only for a URL of its
 *   kind, and the drivers (pg, ioredis, PGlite) stay external: they are
 *   optional peer dependencies.
 * - Types: `tsc` (tsconfig.build.json) emits .d.ts next to nothing else into
 *   dist/types/, one file per source file.
 * - The console page: Vite builds renderer/ into dist/renderer/ (unless
 *   `--no-renderer`), which `worklease serve` and the desktop app serve.
 *
 * `prepack` runs this, so `npm pack` / `npm publish` always ship a fresh build.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { type BuildOptions, build } from 'esbuild';
import { ensureRenderer, ROOT } from './renderer-build.ts';

/** Public entries (package.json `exports`) and the ones only this repository uses (CLI, desktop app). */
export const ENTRIES: Readonly<Record<string, string>> = {
  index: 'src/index.ts',
  lease: 'src/lease/index.ts',
  postgres: 'src/backends/postgres/index.ts',
  pglite: 'src/backends/pglite/index.ts',
  redis: 'src/backends/redis/index.ts',
  console: 'src/console/index.ts',
  server: 'src/server/index.ts',
  cli: 'src/cli/main.ts',
  'electron-common': 'src/electron-common/index.ts',
};

/** Left to the consumer's node_modules: the drivers (optional peers) and add-ons their libraries try to load. */
export const EXTERNAL = [
  'pg',
  'pg-native',
  'ioredis',
  '@electric-sql/pglite',
  '@electric-sql/pglite/*',
  // An optional peer, and its global providers must be the application's copy, never a bundled one.
  '@opentelemetry/api',
  'electron',
  // ws and pg `require` these inside try/catch; absent on purpose.
  'bufferutil',
  'utf-8-validate',
];

export function libraryBuildOptions(outDir: string): BuildOptions {
  const version = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string })
    .version;
  return {
    absWorkingDir: ROOT,
    entryPoints: Object.fromEntries(
      Object.entries(ENTRIES).map(([name, file]) => [name, path.join(ROOT, file)]),
    ),
    outdir: outDir,
    entryNames: '[name]',
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    legalComments: 'linked',
    external: EXTERNAL,
    logLevel: 'warning',
    // ws and commander are CommonJS: their `require('events')` needs a real `require` in an ES module.
    banner: {
      js: `// worklease ${version}\nimport { createRequire as __workleaseCreateRequire } from 'node:module';\nconst require = __workleaseCreateRequire(import.meta.url);`,
    },
  };
}

/** The JavaScript half: dist/*.js and a fresh dist/chunks/ (chunk names are content hashes). */
export async function buildLibraryJs(outDir = path.join(ROOT, 'dist')): Promise<void> {
  rmSync(path.join(outDir, 'chunks'), { recursive: true, force: true });
  await build(libraryBuildOptions(outDir));
}

/**
 * The whole package build into `outDir` (default dist/). The package test
 * builds into a staging folder instead, so it never rewrites dist/ under
 * tests that serve it.
 */
export async function buildPackage(options: { renderer?: boolean; outDir?: string } = {}): Promise<void> {
  const outDir = options.outDir ?? path.join(ROOT, 'dist');
  // The library's own outputs only: dist/renderer and dist/electron are rebuilt by their own steps.
  rmSync(path.join(outDir, 'types'), { recursive: true, force: true });
  const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  await Promise.all([
    buildLibraryJs(outDir),
    new Promise<void>((resolve, reject) => {
      try {
        const tsconfig = path.join(ROOT, 'tsconfig.build.json');
        execFileSync(process.execPath, [tsc, '-p', tsconfig, '--outDir', path.join(outDir, 'types')], {
          stdio: 'inherit',
        });
        resolve();
      } catch (err) {
        reject(err);
      }
    }),
  ]);
  if (options.renderer !== false) await ensureRenderer(true, path.join(outDir, 'renderer'));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await buildPackage({ renderer: !process.argv.includes('--no-renderer') });
  console.info('built dist/ (library, types, CLI, console page)');
}
