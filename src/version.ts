import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The package's own folder: the nearest ancestor of `from` holding a
 * package.json named `worklease`. Searched rather than fixed as `../`: the same
 * code runs as src/*.ts in a checkout, as dist/*.js or dist/chunks/*.js from an
 * install, and bundled into dist/electron/main.cjs (in an app.asar once
 * packaged), each at a different depth. Null when there is none.
 */
export function packageRoot(
  from: string = import.meta.url,
  read: (file: string) => string = (file) => readFileSync(file, 'utf8'),
): string | null {
  let dir = path.dirname(from.startsWith('file:') ? fileURLToPath(from) : from);
  for (;;) {
    try {
      const pkg = JSON.parse(read(path.join(dir, 'package.json'))) as { name?: unknown };
      if (pkg.name === 'worklease') return dir;
    } catch {
      // No package.json here (or not JSON): keep climbing.
    }
    const parent = path.dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

/** This package's version, from its package.json (shown by the CLI and the console's About). */
export function packageVersion(
  from: string = import.meta.url,
  read: (file: string) => string = (file) => readFileSync(file, 'utf8'),
): string {
  const root = packageRoot(from, read);
  if (root === null) return '0.0.0';
  try {
    const pkg = JSON.parse(read(path.join(root, 'package.json'))) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/** Where the built console page lives (`dist/renderer` of the package), or null outside the package. */
export function rendererDir(from: string = import.meta.url): string | null {
  const root = packageRoot(from);
  return root === null ? null : path.join(root, 'dist', 'renderer');
}
