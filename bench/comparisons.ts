/**
 * The comparison benches that `npm run bench` runs beside its own tables, by `--backends` name:
 * `redlock` (bench/redlock.ts), `redis-clients` and `pg-clients` (bench/clients.ts), `overhead`
 * (bench/overhead.ts, not in the default list). Each also runs alone (`npm run bench:redlock`,
 * `npm run bench:clients`, `npm run bench:overhead`).
 */
import { benchPgClients, benchRedisClients } from './clients.ts';
import { benchOverhead } from './overhead.ts';
import { benchRedlock } from './redlock.ts';

export const COMPARISONS = ['redlock', 'redis-clients', 'pg-clients', 'overhead'] as const;

interface Options {
  redis: string;
  pg: string;
  rounds: number;
  ops: number;
  pool: number;
  /** `--telemetry-only`: the comparisons are skipped. */
  skip: boolean;
}

/** Runs the comparison named `kind`; false when `kind` names none (so the caller handles it). */
export async function runComparison(kind: string, o: Options): Promise<boolean> {
  if (!(COMPARISONS as readonly string[]).includes(kind)) return false;
  if (o.skip) return true;
  const opts = { rounds: o.rounds, ops: o.ops };
  if (kind === 'redlock') await benchRedlock({ ...opts, url: o.redis });
  else if (kind === 'redis-clients') await benchRedisClients({ ...opts, url: o.redis });
  else if (kind === 'overhead')
    await benchOverhead({ ...opts, pg: o.pg, redis: o.redis, backends: ['postgres', 'redis'] });
  else await benchPgClients({ ...opts, url: o.pg, pool: o.pool });
  return true;
}
