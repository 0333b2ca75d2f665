/**
 * Builds the renderer (Vite, vite.config.ts) into dist/renderer when it is missing, older than the
 * sources it is built from, or when asked to.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '..');
export const RENDERER_INDEX = path.join(ROOT, 'dist', 'renderer', 'index.html');

/**
 * What the page is built from: its own folder, and src/ (it imports the console API's schemas and
 * formats from there). A checkout's CLI runs src/ as it is, so a page built before a pull or an
 * edit would talk to a newer server with older schemas and show nothing.
 */
export const RENDERER_SOURCES = [
  path.join(ROOT, 'renderer'),
  path.join(ROOT, 'src'),
  path.join(ROOT, 'vite.config.ts'),
];

/** The newest modification time (ms) of the files under `roots`; 0 when there are none. */
export function newestMtime(roots: readonly string[]): number {
  let newest = 0;
  const walk = (p: string): void => {
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(p);
    } catch {
      return;
    }
    if (st.isDirectory()) {
      for (const name of readdirSync(p)) if (name !== 'node_modules') walk(path.join(p, name));
    } else if (st.mtimeMs > newest) newest = st.mtimeMs;
  };
  for (const root of roots) walk(root);
  return newest;
}

/** True when `index` is missing or older than any of `sources` (a few hundred files: a few ms). */
export function rendererStale(index: string, sources: readonly string[] = RENDERER_SOURCES): boolean {
  if (!existsSync(index)) return true;
  return newestMtime(sources) > statSync(index).mtimeMs;
}

/** Returns true when it built. `outDir` (default dist/renderer) is for builds staged elsewhere (the package test). */
export async function ensureRenderer(force = false, outDir = path.dirname(RENDERER_INDEX)): Promise<boolean> {
  const index = path.join(outDir, 'index.html');
  // Without sources (an installed package) the shipped page is the page.
  const sources = RENDERER_SOURCES.filter((p) => existsSync(p));
  if (!force && existsSync(index) && (sources.length === 0 || !rendererStale(index, sources))) return false;
  const { build } = await import('vite');
  // Vite honours NODE_ENV: under vitest (NODE_ENV=test) the page would be React's development
  // build, several times slower than what ships.
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({
      configFile: path.join(ROOT, 'vite.config.ts'),
      root: path.join(ROOT, 'renderer'),
      logLevel: 'warn',
      build: { outDir, emptyOutDir: true },
    });
  } finally {
    if (nodeEnv === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = nodeEnv;
  }
  return true;
}
