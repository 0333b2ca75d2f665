/**
 * Where `worklease serve` / `demo` find the console page: dist/renderer of
 * the package. An install ships it (package.json `files`, built by
 * `prepack`). A checkout builds it on first use and again when its sources are
 * newer than the build, so the command never serves a placeholder, or a page
 * older than the server it talks to, while saying the console is up.
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
  const index = path.join(dir, 'index.html');
  const builder = path.join(root, 'scripts', 'renderer-build.ts');
  const checkout = existsSync(builder) && existsSync(path.join(root, 'renderer', 'index.html'));
  if (!checkout) {
    if (existsSync(index)) return dir;
    throw new InternalError(
      `the console page is missing from this installation (${index}): reinstall worklease`,
    );
  }
  // A checkout (the CLI runs its sources through tsx there, so the .ts builder loads). Its CLI
  // always runs the current sources, so the page must be as new as they are.
  const { ensureRenderer, rendererStale } = (await import(pathToFileURL(builder).href)) as {
    ensureRenderer: (force?: boolean) => Promise<boolean>;
    rendererStale: (index: string) => boolean;
  };
  if (!existsSync(index)) {
    onBuild('building the console page into dist/renderer (first use in this checkout, about 10 s)');
  } else if (rendererStale(index)) {
    onBuild(
      'rebuilding the console page in dist/renderer (its sources changed since it was built, about 10 s)',
    );
  } else {
    return dir;
  }
  await ensureRenderer(true);
  return dir;
}
