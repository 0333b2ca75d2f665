/**
 * Where `worklease serve` / `demo` find the console page: dist/renderer of
 * the package. An install ships it (package.json `files`, built by
 * `prepack`). A checkout builds it on first use, so the command never serves
 * a placeholder while saying the console is up.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { InternalError } from '../lease/errors.ts';
import { packageRoot } from '../version.ts';

export async function consolePageDir(onBuild: (message: string) => void): Promise<string> {
  const root = packageRoot();
  if (root === null)
    throw new InternalError('cannot locate the worklease package (no package.json named worklease)');
  const dir = path.join(root, 'dist', 'renderer');
  if (existsSync(path.join(dir, 'index.html'))) return dir;
  const builder = path.join(root, 'scripts', 'renderer-build.ts');
  if (!existsSync(builder) || !existsSync(path.join(root, 'renderer', 'index.html'))) {
    throw new InternalError(
      `the console page is missing from this installation (${path.join(dir, 'index.html')}): reinstall worklease`,
    );
  }
  // A checkout (the CLI runs its sources through tsx there, so the .ts builder loads).
  onBuild('building the console page into dist/renderer (first use in this checkout, about 10 s)');
  const { ensureRenderer } = (await import(pathToFileURL(builder).href)) as {
    ensureRenderer: (force?: boolean) => Promise<boolean>;
  };
  await ensureRenderer();
  return dir;
}
