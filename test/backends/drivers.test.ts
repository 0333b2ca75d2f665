/**
 * The drivers are optional peer dependencies: opening a URL whose driver
 * package is not installed fails with one DriverMissingError that names the
 * package. The imports really fail: stub modules in a folder with no
 * node_modules above it, imported by plain Node in a child process (vitest's
 * own module loader would resolve `pg` from this repository). So this is
 * Node's ERR_MODULE_NOT_FOUND being recognised, not a hand-made error object.
 * The package test repeats it from an install without pg.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVER_PACKAGES, isMissingPackage, loadDriver } from '../../src/backends/open.ts';
import { errorFromData, errorToData, InvalidArgumentError } from '../../src/lease/errors.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(path.join(tmpdir(), 'wl-drivers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Outcome {
  ok: boolean;
  name?: string;
  code?: string;
  packageName?: string;
  message?: string;
  details?: Record<string, unknown>;
  causeCode?: string;
  isInvalidArgument?: boolean;
}

const CASES = {
  postgres: ['postgres', 'pg'],
  pglite: ['pglite', '@electric-sql/pglite'],
  redis: ['redis', 'ioredis'],
  'redis-cluster': ['redis-cluster', 'ioredis'],
  // Another package missing (a broken install of something else) is not "install pg".
  otherPackage: ['postgres', 'ioredis'],
  // A file missing inside the package names a path, not the package.
  missingFile: ['postgres', './missing-chunk.js'],
} as const;

let outcomes: Record<keyof typeof CASES, Outcome>;

beforeAll(() => {
  for (const [name, [, specifier]] of Object.entries(CASES)) {
    writeFileSync(path.join(dir, `${name}.mjs`), `export * from '${specifier}';\n`);
  }
  const script = path.join(dir, 'run.mts');
  writeFileSync(
    script,
    `import { loadDriver } from ${JSON.stringify(pathToFileURL(path.join(ROOT, 'src/backends/open.ts')).href)};
import { InvalidArgumentError } from ${JSON.stringify(pathToFileURL(path.join(ROOT, 'src/lease/errors.ts')).href)};
const cases = ${JSON.stringify(CASES)};
const out = {};
for (const [name, [kind]] of Object.entries(cases)) {
  out[name] = await loadDriver(kind, () => import(new URL('./' + name + '.mjs', import.meta.url).href)).then(
    () => ({ ok: true }),
    (e) => ({ ok: false, name: e.name, code: e.code, packageName: e.packageName, message: e.message,
      details: e.details, causeCode: e.cause?.code, isInvalidArgument: e instanceof InvalidArgumentError }),
  );
}
console.log(JSON.stringify(out));
`,
  );
  const stdout = execFileSync(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, encoding: 'utf8' });
  outcomes = JSON.parse(stdout) as typeof outcomes;
}, 60_000);

describe('a missing driver package', () => {
  it('names each backend’s package', () => {
    expect(DRIVER_PACKAGES).toEqual({
      postgres: 'pg',
      pglite: '@electric-sql/pglite',
      redis: 'ioredis',
      'redis-cluster': 'ioredis',
    });
  });

  for (const kind of ['postgres', 'pglite', 'redis', 'redis-cluster'] as const) {
    it(`is one DriverMissingError for ${kind}`, () => {
      const pkg = DRIVER_PACKAGES[kind];
      expect(outcomes[kind]).toMatchObject({
        ok: false,
        name: 'DriverMissingError',
        code: 'INVALID_ARGUMENT',
        isInvalidArgument: true,
        packageName: pkg,
        details: { package: pkg, backend: kind },
        // Node's own error stays reachable (--debug prints the cause).
        causeCode: 'ERR_MODULE_NOT_FOUND',
      });
      expect(outcomes[kind].message).toContain(`npm install ${pkg}`);
    });
  }

  it('leaves other load failures as they are', async () => {
    expect(outcomes.otherPackage).toMatchObject({ ok: false, name: 'Error', code: 'ERR_MODULE_NOT_FOUND' });
    expect(outcomes.missingFile).toMatchObject({ ok: false, name: 'Error', code: 'ERR_MODULE_NOT_FOUND' });
    const boom = new Error('boom');
    await expect(loadDriver('redis', () => Promise.reject(boom))).rejects.toBe(boom);
    expect(isMissingPackage('pg', 'pg')).toBe(false);
  });

  it('crosses IPC/HTTP as INVALID_ARGUMENT with the package in its details', async () => {
    const missing = Object.assign(new Error("Cannot find package 'pg' imported from /x.js"), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
    const err = await loadDriver('postgres', () => Promise.reject(missing)).catch((e: unknown) => e);
    const data = errorToData(err);
    expect(data).toMatchObject({ name: 'DriverMissingError', code: 'INVALID_ARGUMENT' });
    expect(data.details).toMatchObject({ package: 'pg', backend: 'postgres' });
    expect(errorFromData(data)).toBeInstanceOf(InvalidArgumentError);
  });

  it('returns the module when the driver is there', async () => {
    const mod = await loadDriver('postgres', () => import('../../src/backends/postgres/index.ts'));
    expect(typeof mod.openPostgres).toBe('function');
  });
});
