/**
 * worklease — the package entry. Everything public is exported from here.
 */

import { resolveOptions } from './backends/common.ts';
import { parseBackendUrl } from './backends/url.ts';
import { telemetryReady } from './lease/telemetry.ts';
import type { LeaseBackend, OpenOptions } from './lease/types.ts';

export { parseBackendUrl, redactUrl } from './backends/url.ts';
export * from './lease/errors.ts';
export type * from './lease/types.ts';
export { DEFAULT_MAX_STATE_BYTES, MAX_ID_LENGTH, MAX_TTL_MS } from './lease/validate.ts';

/**
 * Opens a lease backend by URL:
 * - `postgres://…` / `postgresql://…` (option `schema`, default `worklease`)
 * - `redis://…` / `rediss://…` (option `keyPrefix`, default `worklease`)
 * - `redis+cluster://host:port[,host:port…]`
 * - `pglite://memory` or `pglite:///absolute/dir` (embedded Postgres)
 *
 * Creates or upgrades the schema unless `{ migrate: false }`.
 */
export async function openBackend(url: string, options: OpenOptions = {}): Promise<LeaseBackend> {
  const { kind } = parseBackendUrl(url);
  // Every option is checked here, before a backend module is even loaded.
  resolveOptions(options);
  // So that the backend finds @opentelemetry/api (when installed) already loaded.
  await telemetryReady;
  switch (kind) {
    case 'postgres': {
      const { openPostgres } = await import('./backends/postgres/index.ts');
      return openPostgres(url, options);
    }
    case 'pglite': {
      const { openPglite } = await import('./backends/pglite/index.ts');
      return openPglite(url, options);
    }
    case 'redis':
    case 'redis-cluster': {
      const { openRedis } = await import('./backends/redis/index.ts');
      return openRedis(url, options);
    }
  }
}
export type { Deposed, Leadership, LeadOptions, Term } from './lease/election.ts';
export { lead } from './lease/election.ts';
export type { GroupMember, GroupOptions, RevokeReason } from './lease/group.ts';
export { joinGroup, memberWorkId } from './lease/group.ts';
export type {
  ClaimOptions,
  HeartbeatOptions,
  HolderOptions,
  LeaseHolder,
  LossReason,
  WithLeaseOptions,
} from './lease/holder.ts';
export { claim, DEFAULT_HOLDER_TTL_MS, withLease } from './lease/holder.ts';
export type { Logger, TelemetryOptions } from './lease/telemetry.ts';
