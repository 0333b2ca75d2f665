/**
 * `worklease migrate`: creates or upgrades the schema. The only command (with
 * `demo`) that writes DDL; the migration runner is safe when two processes
 * run it at once. `--check` writes nothing: it exits 0 when the schema is up
 * to date and 6 (SCHEMA_MISMATCH) when a migration is needed.
 */
import { resolveBackendUrl } from '../../backends/url.ts';
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
  if (options.check) {
    try {
      await withBackend(url, globals, async (backend) => {
        await out(`schema up to date on ${backend.url} (${namespaceOf(backend)}): no migration needed`);
      });
    } catch (err) {
      // A schema newer than this worklease needs a newer worklease, not a migration.
      const d = hasCode(err, 'SCHEMA_MISMATCH') ? err.details : undefined;
      const newer =
        typeof d?.version === 'number' && typeof d.expected === 'number' && d.version > d.expected;
      if (hasCode(err, 'SCHEMA_MISMATCH') && !newer) err.message = `migration needed: ${err.message}`;
      throw err;
    }
    return;
  }
  await withBackend(
    url,
    globals,
    async (backend) => {
      await out(`schema up to date on ${backend.url} (${namespaceOf(backend)})`);
    },
    true,
  );
}
