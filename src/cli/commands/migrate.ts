/**
 * `worklease migrate`: creates or upgrades the schema. The only command (with
 * `demo`) that writes DDL; the migration runner is safe when two processes
 * run it at once.
 */
import { type GlobalOptions, out, resolveUrl, withBackend } from '../context.ts';

export async function migrateCommand(urlArg: string | undefined, globals: GlobalOptions): Promise<void> {
  const url = resolveUrl(urlArg);
  await withBackend(
    url,
    globals,
    async (backend) => {
      const where =
        backend.kind === 'postgres' || backend.kind === 'pglite'
          ? `schema ${globals.schema ?? 'worklease'}`
          : `key prefix ${globals.keyPrefix ?? 'worklease'}`;
      await out(`schema up to date on ${backend.url} (${where})`);
    },
    true,
  );
}
