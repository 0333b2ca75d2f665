/** Builds the renderer (Vite, vite.config.ts) into dist/renderer when it is missing or when asked to. */
import { existsSync } from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '..');
export const RENDERER_INDEX = path.join(ROOT, 'dist', 'renderer', 'index.html');

/** Returns true when it built. `outDir` (default dist/renderer) is for builds staged elsewhere (the package test). */
export async function ensureRenderer(force = false, outDir = path.dirname(RENDERER_INDEX)): Promise<boolean> {
  if (!force && existsSync(path.join(outDir, 'index.html'))) return false;
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
