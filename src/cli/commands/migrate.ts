/**
 * `worklease migrate`: creates or upgrades the schema. The only command (with
 * `demo`) that writes DDL; the migration runner is safe when two processes
 * run it at once. `--check` writes nothing: it exits 0 when the schema is up
 * to date and 6 (SCHEMA_MISMATCH) when a migration is needed.
 */
import { resolveBackendUrl } from '../../backends/url.ts';
import { schemaNewerThanThis } from '../../console/api.ts';
import { hasCode } from '../../lease/errors.ts';
import type { LeaseBackend } from '../../lease/types.ts';
import { type GlobalOptions, out, resolveUrl, withBackend } from '../context.ts';

export interface MigrateOptions {
  check?: boolean;
}

/** `schema billing` / `key prefix jobs`: the namespace the backend works in, read from its effective URL. */
export function namespaceOf(backend: Pick<LeaseBackend, 'kind' | 'url'>): string {
  const { options } = resolveBackendUrl(backend.url);
  return backend.kind === 'postgres' || backend.kind === 'pglite'
    ? `schema ${options.schema ?? 'worklease'}`
    : `key prefix ${options.keyPrefix ?? 'worklease'}`;
}

export async function migrateCommand(
  urlArg: string | undefined,
  options: MigrateOptions,
  globals: GlobalOptions,
): Promise<void> {
  const url = resolveUrl(urlArg);
  const upToDate = (backend: LeaseBackend): string =>
    `schema up to date on ${backend.url} (${namespaceOf(backend)})`;
  // Opening without migrating tells whether anything is to do, and from which version.
  let before: Record<string, unknown>;
  try {
    await withBackend(url, globals, (backend) =>
      out(options.check ? `${upToDate(backend)}: no migration needed` : upToDate(backend)),
    );
    return;
  } catch (err) {
    // A schema newer than this worklease needs a newer worklease, not a migration.
    if (!hasCode(err, 'SCHEMA_MISMATCH') || schemaNewerThanThis(err.details)) throw err;
    if (options.check) {
      err.message = `migration needed: ${err.message}`;
      throw err;
    }
    before = err.details ?? {};
  }
  await withBackend(
    url,
    globals,
    async (backend) => {
      await out(changeLine(before));
      await out(upToDate(backend));
    },
    true,
  );
}

/**
 * What a migration did, from the SCHEMA_MISMATCH that opening without it reported: PostgreSQL and
 * PGlite give the schema's version and the missing migrations, Redis the key prefix's data layout
 * (null when there was none). A migration may take the lease table's lock for a while, so an
 * operator is told it ran, and from which version.
 */
function changeLine(d: Record<string, unknown>): string {
  if (typeof d.schema === 'string') {
    if (d.version === 0) return `created schema ${d.schema} at version ${String(d.expected)}`;
    const missing = Array.isArray(d.missing) ? d.missing.map(String) : [];
    const applied =
      missing.length === 0
        ? ''
        : ` (applied migration${missing.length > 1 ? 's' : ''} ${missing.join(', ')})`;
    return d.version === d.expected
      ? `completed schema ${d.schema} at version ${String(d.expected)}${applied}`
      : `upgraded schema ${d.schema} from version ${String(d.version)} to ${String(d.expected)}${applied}`;
  }
  const prefix = String(d.keyPrefix);
  if (d.found === null || d.found === undefined) {
    return `created key prefix ${prefix} with data layout ${String(d.expected)}`;
  }
  if (String(d.found) === String(d.expected))
    return `completed the migration of key prefix ${prefix} (data layout ${String(d.expected)})`;
  return `upgraded key prefix ${prefix} from data layout ${String(d.found)} to ${String(d.expected)}`;
}
