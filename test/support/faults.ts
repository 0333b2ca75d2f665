/**
 * Fault injection and cleanup for the tests, done from outside the backend
 * under test (its own `pg` / `ioredis` connections), so tests need nothing
 * from a backend's internals. The work is done by the chaos harness's
 * injectors (src/chaos/faults.ts); this adapts them to test targets.
 *
 * Both rely on the naming convention every server backend follows: Postgres
 * connections carry `application_name = 'worklease:<schema>'`, Redis connections
 * `CLIENT SETNAME worklease:<keyPrefix>`.
 */
import { killConnections, dropNamespace as removeNamespace } from '../../src/chaos/faults.ts';
import type { BackendTarget } from './backends.ts';

/** True when the backend has server connections that {@link dropConnections} can cut. */
export function hasServerConnections(target: BackendTarget): boolean {
  return target.kind !== 'pglite';
}

/**
 * Makes the server drop every connection the backend opened for `namespace`
 * (as a failover, an idle timeout or an admin would). Returns how many it cut.
 * PGlite runs in-process and has no server connection: calling it there is a test bug.
 */
export async function dropConnections(target: BackendTarget, namespace: string): Promise<number> {
  if (!hasServerConnections(target)) {
    throw new Error('pglite is embedded: it has no server connections to drop');
  }
  if (target.cut !== undefined) return target.cut(namespace);
  return killConnections(target.kind, target.url, namespace);
}

/** Removes everything a test file stored under `namespace`: the schema, or every key under the prefix. */
export function dropNamespace(target: BackendTarget, namespace: string): Promise<void> {
  return removeNamespace(target.kind, target.url, namespace);
}
