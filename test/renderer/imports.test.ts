import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RENDERER = join(ROOT, 'renderer');
const COMMON = join(ROOT, 'src/console/common');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return /\.(ts|tsx)$/.test(e.name) ? [path] : [];
  });
}

/** Every module specifier a file imports or re-exports (static and dynamic). */
function specifiers(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/\b(?:import|export)\b[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]/g))
    out.push(m[1] as string);
  for (const m of text.matchAll(/\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g)) out.push(m[1] as string);
  for (const m of text.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm)) out.push(m[1] as string);
  return out;
}

/**
 * The renderer runs in a browser page: the console code it may use is the browser-safe folder
 * src/console/common/ alone (biome's noRestrictedImports says the same at lint time).
 */
describe('renderer imports', () => {
  const files = sources(RENDERER);

  it('finds the renderer sources', () => {
    expect(files.length).toBeGreaterThan(40);
  });

  it('reach outside renderer/ only into src/console/common/ (and packages)', () => {
    const bad: string[] = [];
    for (const file of files) {
      for (const spec of specifiers(readFileSync(file, 'utf8'))) {
        if (!spec.startsWith('.')) {
          if (spec.startsWith('node:') || ['electron', 'pg', 'ioredis', 'ws'].includes(spec)) {
            bad.push(`${relative(ROOT, file)} -> ${spec}`);
          }
          continue;
        }
        const target = resolve(file, '..', spec);
        if (target.startsWith(`${RENDERER}/`) || target.startsWith(`${COMMON}/`)) continue;
        bad.push(`${relative(ROOT, file)} -> ${spec}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it('the check itself catches an import of the console outside common/', () => {
    const spec = specifiers(`import { x } from '../../src/console/service.ts';`)[0] as string;
    const target = resolve(join(RENDERER, 'app/App.tsx'), '..', spec);
    expect(target.startsWith(`${COMMON}/`)).toBe(false);
    expect(specifiers(`export * from '../x.ts';\nconst m = await import('../y.ts');`)).toEqual([
      '../x.ts',
      '../y.ts',
    ]);
  });
});
