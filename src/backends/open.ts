/**
 * `openBackend`: one entry for every backend URL. Each backend module (and its
 * client library) is imported only when a URL of its kind is opened, so a
 * `postgres://` service never loads ioredis or PGlite, and a missing driver
 * package is one clear {@link DriverMissingError} instead of Node's
 * ERR_MODULE_NOT_FOUND from deep inside the package.
 *
 * The console and the CLI import this module, never the package barrel.
 */
import { DriverMissingError, InvalidArgumentError } from '../lease/errors.ts';
import { telemetryReady } from '../lease/telemetry.ts';
import type {
  BackendKind,
  LeaseBackend,
  OpenOptions,
  RecoverOptions,
  RecoveryResult,
} from '../lease/types.ts';
import { checkOperator, checkOptions, checkText } from '../lease/validate.ts';
import { resolveTarget } from './common.ts';
import { parseBackendUrl } from './url.ts';

/** The npm package each backend needs (an optional peer dependency of worklease). */
export const DRIVER_PACKAGES: Readonly<Record<BackendKind, string>> = Object.freeze({
  postgres: 'pg',
  pglite: '@electric-sql/pglite',
  redis: 'ioredis',
  'redis-cluster': 'ioredis',
});

/** True when `err` is Node failing to find `packageName` itself (ESM or CommonJS loader). */
export function isMissingPackage(err: unknown, packageName: string): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  // "Cannot find package 'pg' imported from …" (ESM) / "Cannot find module 'pg'" (CJS). A missing
  // file inside an installed package names a path instead, and stays the error it is.
  return err.message.includes(`'${packageName}'`);
}

/**
 * Runs `load` (a dynamic import of a backend module) and turns a missing driver
 * package into {@link DriverMissingError}. Any other failure is rethrown as is.
 */
export async function loadDriver<T>(kind: BackendKind, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    const pkg = DRIVER_PACKAGES[kind];
    if (isMissingPackage(err, pkg)) throw new DriverMissingError(pkg, kind, { cause: err });
    throw err;
  }
}

/**
 * Opens a lease backend by URL:
 * - `postgres://…` / `postgresql://…` (option `schema`, default `worklease`)
 * - `redis://…` / `rediss://…` (option `keyPrefix`, default `worklease`)
 * - `redis+cluster://host:port[,host:port…]`
 * - `pglite://memory` or `pglite:///absolute/dir` (embedded Postgres)
 *
 * Creates or upgrades the schema unless `{ migrate: false }`. Needs the URL's
 * driver package installed (`pg`, `ioredis` or `@electric-sql/pglite`), else
 * fails with {@link DriverMissingError} (code `INVALID_ARGUMENT`) naming it.
 */
export async function openBackend(url: string, options: OpenOptions = {}): Promise<LeaseBackend> {
  const { kind } = parseBackendUrl(url);
  // Every option (the URL's query options included) is checked here, before a backend module is even loaded.
  resolveTarget(url, options, [kind], kind);
  // So that the backend finds @opentelemetry/api (when installed) already loaded.
  await telemetryReady;
  switch (kind) {
    case 'postgres': {
      // biome-ignore lint/style/noRestrictedImports: the one place a backend is loaded, lazily, by URL kind.
      const { openPostgres } = await loadDriver(kind, () => import('./postgres/index.ts'));
      return openPostgres(url, options);
    }
    case 'pglite': {
      // biome-ignore lint/style/noRestrictedImports: the one place a backend is loaded, lazily, by URL kind.
      const { openPglite } = await loadDriver(kind, () => import('./pglite/index.ts'));
      return openPglite(url, options);
    }
    case 'redis':
    case 'redis-cluster': {
      // biome-ignore lint/style/noRestrictedImports: the one place a backend is loaded, lazily, by URL kind.
      const { openRedis } = await loadDriver(kind, () => import('./redis/index.ts'));
      return openRedis(url, options);
    }
  }
}

/**
 * Brings a Redis key prefix back after a lost shard: re-initialises exactly the buckets whose data
 * went with a Cluster master that came back empty (and the prefix's meta key if it went too), each
 * with an audit entry (action `recover`) by `operator` with `reason`. Tokens stay increasing: the
 * first token of a recovered bucket is floored by its master's clock (docs/durability.md). With
 * `dryRun` it only reports what is lost. Returns what it found and did. Checks its options before
 * any I/O; a PostgreSQL or PGlite URL is `INVALID_ARGUMENT` (nothing there is lost piecewise).
 */
export async function recoverBackend(
  url: string,
  recoverOptions: RecoverOptions,
  options: OpenOptions = {},
): Promise<RecoveryResult> {
  const o = checkOptions<RecoverOptions>('recoverOptions', recoverOptions, ['operator', 'reason', 'dryRun']);
  const checked: RecoverOptions = {
    operator: checkOperator('recoverOptions.operator', o.operator),
    reason: checkText('recoverOptions.reason', o.reason, 2000),
    dryRun: checkBool('recoverOptions.dryRun', o.dryRun),
  };
  const { kind } = parseBackendUrl(url);
  resolveTarget(url, options, [kind], kind);
  if (kind !== 'redis' && kind !== 'redis-cluster') {
    throw new InvalidArgumentError(
      `recover is for Redis key prefixes, whose buckets can be lost one master at a time; a ${kind} database is restored from its backups (docs/durability.md)`,
    );
  }
  await telemetryReady;
  // biome-ignore lint/style/noRestrictedImports: the one place a backend is loaded, lazily, by URL kind.
  const { recoverRedis } = await loadDriver(kind, () => import('./redis/index.ts'));
  return recoverRedis(url, checked, options);
}

function checkBool(name: string, value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new InvalidArgumentError(`${name} must be a boolean`);
  return value;
}
