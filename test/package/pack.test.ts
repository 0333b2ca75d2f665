/**
 * The package as a user gets it: build, `npm pack`, install the tarball into
 * empty projects offline (from the tarball and the npm cache, no dev
 * dependencies, no registry), and use it there the way the README says:
 *
 * - what the tarball holds (and nothing from test/, e2e/, bench/, .ci/, src/,
 *   configs);
 * - (a) a plain .mjs: acquire → checkpoint → readCheckpoint → release on
 *   pglite://memory, and the one clear error for a driver that is missing;
 * - (b) a .cjs: `require('worklease')` (Node ≥ 20.19: require(esm));
 * - (c) a strict `nodenext` TypeScript consumer WITHOUT skipLibCheck, with one
 *   deliberate type error that must be reported (and no other);
 * - (d) `worklease --help`, then `worklease serve` on a free port, fetching the
 *   real console page;
 * - a pg-only project: its node_modules size and package count are printed,
 *   and it runs a lease on the real PostgreSQL with neither ioredis nor PGlite
 *   installed (so nothing loads them for postgres://).
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPackage } from '../../scripts/build.ts';
import { PG_URL } from '../support/backends.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const work = mkdtempSync(path.join(tmpdir(), 'wl-pack-'));
const app = path.join(work, 'app');
const pgOnly = path.join(work, 'pg-only');
const env = {
  ...process.env,
  NODE_ENV: 'production',
  PATH: `${path.dirname(process.execPath)}:${process.env.PATH}`,
};

let tarball = '';
let tarballIntegrity = '';
let packedFiles: string[] = [];
const installLogs: Record<string, string> = {};
const children: ChildProcess[] = [];

/** Runs a command to its end without blocking the event loop, so independent steps overlap. */
function runAsync(
  cmd: string,
  args: string[],
  cwd: string,
): Promise<{ status: number | null; output: string; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, output, stdout }));
  });
}

function run(cmd: string, args: string[], cwd: string): string {
  return execFileSync(cmd, args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

interface LockEntry {
  version?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  [field: string]: unknown;
}

/**
 * The lock entries of `names` and everything they depend on, copied from this
 * repository's package-lock.json (same versions, same tarball integrity). With
 * a complete lockfile npm installs from its cache alone; without one it would
 * need each package's registry document, which `npm ci` never fetches.
 */
function lockEntries(names: string[]): Record<string, LockEntry> {
  const rootLock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, LockEntry>;
  };
  const out: Record<string, LockEntry> = {};
  const add = (name: string, parent: string): void => {
    // Node's lookup: the parent's own node_modules first, then each folder up.
    let key: string | undefined;
    for (let at = parent; ; at = at.replace(/\/?node_modules\/(@[^/]+\/)?[^/]+$/, '')) {
      const candidate = `${at === '' ? '' : `${at}/`}node_modules/${name}`;
      if (rootLock.packages[candidate] !== undefined) {
        key = candidate;
        break;
      }
      if (at === '') break;
    }
    if (key === undefined)
      throw new Error(`${name} (needed by ${parent || 'the project'}) is not in package-lock.json`);
    if (out[key] !== undefined) return;
    const { dev: _dev, devOptional: _devOptional, peer: _peer, ...entry } = rootLock.packages[key]!;
    out[key] = entry;
    const needs = { ...entry.dependencies, ...entry.optionalDependencies };
    for (const [peer] of Object.entries(entry.peerDependencies ?? {})) {
      if (entry.peerDependenciesMeta?.[peer]?.optional !== true) needs[peer] = '*';
    }
    for (const dep of Object.keys(needs)) add(dep, key);
  };
  for (const name of names) add(name, '');
  return out;
}

async function npmInstall(dir: string, packages: string[]): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const lock = lockEntries(packages);
  const dependencies: Record<string, string> = {
    worklease: `file:../${path.basename(tarball)}`,
    ...Object.fromEntries(packages.map((name) => [name, lock[`node_modules/${name}`]!.version!])),
  };
  const manifest = {
    name: path.basename(dir),
    version: '1.0.0',
    private: true,
    type: 'module',
    dependencies,
  };
  const packed = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
  writeFileSync(
    path.join(dir, 'package-lock.json'),
    JSON.stringify(
      {
        name: manifest.name,
        version: '1.0.0',
        lockfileVersion: 3,
        requires: true,
        packages: {
          '': { name: manifest.name, version: '1.0.0', dependencies },
          'node_modules/worklease': {
            version: packed.version,
            resolved: dependencies.worklease,
            integrity: tarballIntegrity,
            license: packed.license,
            bin: packed.bin,
            engines: packed.engines,
            peerDependencies: packed.peerDependencies,
            peerDependenciesMeta: packed.peerDependenciesMeta,
          },
          ...lock,
        },
      },
      null,
      2,
    ),
  );
  // --offline: the tarball and what the npm cache holds (npm ci filled it), never the registry.
  const result = await runAsync('npm', ['install', '--offline', '--no-audit', '--no-fund'], dir);
  installLogs[path.basename(dir)] = result.output;
  if (result.status !== 0) throw new Error(`npm install failed in ${dir}:\n${result.output}`);
}

/** Every installed package (node_modules/<name>, node_modules/@scope/<name>, nested too). */
function installedPackages(nodeModules: string): string[] {
  const found: string[] = [];
  const visit = (dir: string): void => {
    let entries: string[];
    try {
      entries = readdirSync(dir);
    } catch {
      return;
    }
    for (const entry of entries) {
      if (entry.startsWith('.')) continue;
      if (entry.startsWith('@')) {
        for (const scoped of readdirSync(path.join(dir, entry))) {
          found.push(`${entry}/${scoped}`);
          visit(path.join(dir, entry, scoped, 'node_modules'));
        }
      } else {
        found.push(entry);
        visit(path.join(dir, entry, 'node_modules'));
      }
    }
  };
  visit(nodeModules);
  return found.sort();
}

function duBytes(dir: string): number {
  return Number(run('du', ['-sb', dir], work).split('\t')[0]);
}

let typeCheck: Promise<{ status: number | null; stdout: string }>;

/** The TypeScript consumer of (c): every public subpath whose driver is installed, and one deliberate error. */
const CONSUMER_LINES: string[] = [];
function writeTypeScriptConsumer(): void {
  writeFileSync(
    path.join(app, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        types: ['node'],
        noEmit: true,
        exactOptionalPropertyTypes: true,
        noUncheckedIndexedAccess: true,
        verbatimModuleSyntax: true,
      },
      files: ['consumer.ts'],
    }),
  );
  CONSUMER_LINES.push(
    "import { claim, type LeaseBackend, type LeaseRecord, openBackend, withLease } from 'worklease';",
    "import { ErrorCode, hasCode } from 'worklease/lease';",
    "import { openPostgres } from 'worklease/postgres';",
    "import { openPglite } from 'worklease/pglite';",
    // Not worklease/redis: its types use ioredis' (a redis user has ioredis installed; this app has not).
    "import { createConsoleService, type ConsoleService } from 'worklease/console';",
    "import { startWebServer } from 'worklease/server';",
    "const backend: LeaseBackend = await openBackend('pglite://memory', { migrate: true });",
    "const lease: LeaseRecord = await backend.acquire('a', 'b', 1000);",
    'const token: bigint = lease.fencingToken;',
    "const holder = await claim(backend, 'c', 'd', { ttlMs: 1000 });",
    "await withLease(backend, 'e', 'f', { ttlMs: 1000 }, async (h) => h.save(new Uint8Array([1])));",
    "const service: ConsoleService = createConsoleService({ connections: [{ name: 'x', url: 'pglite://memory' }] });",
    'void [token, holder.signal.aborted, hasCode(null, ErrorCode.FENCED), openPostgres, openPglite, service, startWebServer];',
    'const wrong: string = lease.fencingToken;',
    'void wrong;',
  );
  writeFileSync(path.join(app, 'consumer.ts'), `${CONSUMER_LINES.join('\n')}\n`);
}

beforeAll(async () => {
  // What `prepack` builds (library, types, console page), in a staging copy of the package so
  // dist/ of this checkout is never rewritten under other tests; `files` decides what is packed.
  const stage = path.join(work, 'stage');
  mkdirSync(stage);
  for (const entry of ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md', 'docs', 'bin']) {
    cpSync(path.join(ROOT, entry), path.join(stage, entry), { recursive: true });
  }
  await buildPackage({ outDir: path.join(stage, 'dist') });
  const [packed] = JSON.parse(
    run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], stage),
  ) as [{ filename: string; integrity: string; files: { path: string }[] }];
  tarball = path.join(work, packed.filename);
  tarballIntegrity = packed.integrity;
  packedFiles = packed.files.map((f) => f.path).sort();
  // zod only for the console's types (an optional peer); the console runs without it.
  await Promise.all([
    npmInstall(app, ['@electric-sql/pglite', '@types/node', 'zod']),
    npmInstall(pgOnly, ['pg']),
  ]);
  // The type-check takes longest (zod's and Node's types): it runs while the other tests do.
  writeTypeScriptConsumer();
  typeCheck = runAsync(
    process.execPath,
    [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', '.'],
    app,
  );
}, 240_000);

afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

describe('the npm package', () => {
  it('holds only what a user needs', () => {
    const allowed =
      /^(package\.json|README\.md|LICENSE|CHANGELOG\.md|bin\/worklease|docs\/[a-z-]+\.md|dist\/[a-z]+\.js(\.map)?|dist\/chunks\/[\w-]+\.js(\.map)?|dist\/types\/[\w/-]+\.d\.ts|dist\/renderer\/(index\.html|assets\/[\w.-]+\.(js|css|svg|png|woff2?)|[\w.-]+\.(svg|png|ico)))$/;
    const leaks = (files: string[]): string[] =>
      files.filter(
        (file) =>
          !allowed.test(file) ||
          /^(src|test|e2e|bench|\.ci|scripts|renderer|electron|assets)\/|config|tsconfig|electron/.test(file),
      );
    expect(leaks(packedFiles)).toEqual([]);
    for (const file of [
      'LICENSE',
      'README.md',
      'CHANGELOG.md',
      'bin/worklease',
      'dist/index.js',
      'dist/cli.js',
      'dist/types/index.d.ts',
      'dist/types/lease/index.d.ts',
      'dist/renderer/index.html',
    ]) {
      expect(packedFiles, file).toContain(file);
    }
    // The same `files` rules applied to this whole checkout (tests, benches, configs, desktop
    // builds in dist/electron, whatever dist/ holds now): `npm pack --dry-run` lists nothing else.
    const [dryRun] = JSON.parse(run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], ROOT)) as [
      { files: { path: string }[] },
    ];
    expect(leaks(dryRun.files.map((f) => f.path))).toEqual([]);
  });

  it('installs with no dependency of its own and no install-script warning', () => {
    for (const [project, log] of Object.entries(installLogs)) {
      expect(log, project).not.toMatch(/install-scripts|deprecated|ERESOLVE|peer dep/i);
    }
    const pgTree = installedPackages(path.join(pgOnly, 'node_modules'));
    const mine = pgTree.filter((name) => name === 'worklease');
    const fromPg = pgTree.filter((name) => name !== 'worklease');
    const size = duBytes(path.join(pgOnly, 'node_modules'));
    const own = duBytes(path.join(pgOnly, 'node_modules', 'worklease'));
    console.info(
      `pg-only install: ${run('du', ['-sh', path.join(pgOnly, 'node_modules')], work).split('\t')[0]} ` +
        `(${(size / 1e6).toFixed(1)} MB), ${pgTree.length} packages: worklease (${(own / 1e6).toFixed(1)} MB) ` +
        `+ ${fromPg.length} from pg (${fromPg.join(', ')})`,
    );
    expect(mine).toEqual(['worklease']);
    // Everything else is pg's own tree: worklease adds no package.
    expect(fromPg.filter((name) => !/^(pg|pg-.+|pgpass|postgres-.+|split2|xtend)$/.test(name))).toEqual([]);
    expect(size).toBeLessThan(10 * 1024 * 1024);
    // An app with the PGlite driver: nothing pulled in beyond what was asked for.
    expect(installedPackages(path.join(app, 'node_modules'))).toEqual([
      '@electric-sql/pglite',
      '@types/node',
      'undici-types',
      'worklease',
      'zod',
    ]);
  });

  it('(a) runs a lease from a plain .mjs on pglite://memory; a missing driver is one clear error', () => {
    writeFileSync(
      path.join(app, 'lease.mjs'),
      `import { openBackend, DriverMissingError } from 'worklease';
const backend = await openBackend('pglite://memory');
const lease = await backend.acquire('invoice-42', 'worker-1', 30000);
await backend.checkpoint(lease, new TextEncoder().encode('{"done":120}'), 30000);
const read = await backend.readCheckpoint(lease);
await backend.release(lease);
const next = await backend.acquire('invoice-42', 'worker-2', 30000);
const resumed = await backend.readCheckpoint(next);
await backend.close();
const missing = [];
for (const url of ['postgres://127.0.0.1:5432/x', 'redis://127.0.0.1:6379']) {
  missing.push(await openBackend(url).then(() => 'opened', (e) =>
    ({ cls: e instanceof DriverMissingError, code: e.code, message: e.message })));
}
console.log(JSON.stringify({ token: String(lease.fencingToken), state: new TextDecoder().decode(read.state),
  clean: read.cleanHandoff, nextToken: String(next.fencingToken), resumedClean: resumed.cleanHandoff, missing }));
`,
    );
    const out = JSON.parse(run(process.execPath, ['lease.mjs'], app)) as Record<string, unknown>;
    // Tokens strictly increase across the handoff (their values come from the server clock).
    expect(BigInt(String(out.nextToken)) > BigInt(String(out.token))).toBe(true);
    expect(out).toEqual({
      token: expect.stringMatching(/^[1-9][0-9]*$/) as unknown,
      state: '{"done":120}',
      clean: true,
      nextToken: expect.stringMatching(/^[1-9][0-9]*$/) as unknown,
      resumedClean: true,
      missing: [
        {
          cls: true,
          code: 'INVALID_ARGUMENT',
          message: expect.stringContaining("needs the npm package 'pg'") as unknown,
        },
        {
          cls: true,
          code: 'INVALID_ARGUMENT',
          message: expect.stringContaining('npm install ioredis') as unknown,
        },
      ],
    });
  }, 90_000);

  it('(b) is required from a .cjs (require(esm), Node ≥ 20.19)', () => {
    writeFileSync(
      path.join(app, 'require.cjs'),
      `const wl = require('worklease');
const lease = require('worklease/lease');
console.log(JSON.stringify({ openBackend: typeof wl.openBackend, claim: typeof lease.claim,
  same: wl.LeaseHeldError === lease.LeaseHeldError, code: new wl.FencedError('x').code }));
`,
    );
    const result = spawnSync(process.execPath, ['require.cjs'], { cwd: app, env, encoding: 'utf8' });
    expect(result.status, result.stderr).toBe(0);
    console.info(
      `require('worklease') on Node ${process.version}: works; stderr: ${result.stderr.trim() || '(nothing)'}`,
    );
    expect(JSON.parse(result.stdout)).toEqual({
      openBackend: 'function',
      claim: 'function',
      same: true,
      code: 'FENCED',
    });
  });

  it('(c) type-checks a strict nodenext consumer without skipLibCheck, and reports its type error', async () => {
    const tsc = await typeCheck;
    const errors = tsc.stdout.split('\n').filter((line) => /error TS\d+/.test(line));
    const wrongLine = CONSUMER_LINES.indexOf('const wrong: string = lease.fencingToken;') + 1;
    expect(errors).toEqual([
      expect.stringMatching(new RegExp(`^consumer\\.ts\\(${wrongLine},7\\): error TS2322`)),
    ]);
    expect(tsc.status).not.toBe(0);
  }, 150_000);

  it('(d) runs `worklease --help` and serves the real console page', async () => {
    const bin = path.join(app, 'node_modules', '.bin', 'worklease');
    expect(run(bin, ['--help'], app)).toContain('Usage: worklease');
    const child = spawn(bin, ['serve', '--connect', 'pglite://memory', '--port', '0'], {
      cwd: app,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no URL from worklease serve:\n${output}`)), 60_000);
      const onData = (chunk: Buffer): void => {
        output += chunk.toString();
        const match = /open: (http:\/\/\S+)/.exec(output);
        if (match?.[1] !== undefined) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.on('exit', (code) => reject(new Error(`worklease serve exited (${code}):\n${output}`)));
    });
    const page = await fetch(url);
    const html = await page.text();
    expect(page.status).toBe(200);
    expect(html).not.toContain('has not been built');
    const script = /<script type="module" crossorigin src="\.?\/(assets\/[\w.-]+\.js)"/.exec(html)?.[1];
    expect(script, html).toBeDefined();
    const asset = await fetch(new URL(script!, url));
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toContain('text/javascript');
    expect((await asset.text()).length).toBeGreaterThan(10_000);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }, 90_000);

  it('runs a lease on PostgreSQL from a pg-only install (ioredis and PGlite absent, never loaded)', () => {
    const schema = `pkg_${process.pid}`;
    writeFileSync(
      path.join(pgOnly, 'lease.mjs'),
      `import { openBackend } from 'worklease';
import pg from 'pg';
const url = process.argv[2];
const schema = process.argv[3];
const backend = await openBackend(url, { schema });
try {
  const lease = await backend.acquire('pkg-test', 'worker-1', 30000);
  await backend.checkpoint(lease, new Uint8Array([7]), 30000);
  const read = await backend.readCheckpoint(lease);
  await backend.release(lease);
  console.log(JSON.stringify({ kind: backend.kind, state: [...read.state] }));
} finally {
  await backend.close();
  const client = new pg.Client(url);
  await client.connect();
  await client.query('DROP SCHEMA IF EXISTS "' + schema + '" CASCADE');
  await client.end();
}
`,
    );
    const out = JSON.parse(run(process.execPath, ['lease.mjs', PG_URL, schema], pgOnly)) as unknown;
    expect(out).toEqual({ kind: 'postgres', state: [7] });
    expect(installedPackages(path.join(pgOnly, 'node_modules'))).not.toContain('ioredis');
  }, 60_000);
});
