/**
 * `worklease recover`: brings a Redis key prefix back after a lost shard (a Cluster master that came
 * back empty): re-initialises exactly the buckets whose data is gone, and the meta key if it went
 * with them, each with an audit entry (action `recover`). Nothing else is written; tokens stay
 * increasing (docs/durability.md). `--dry-run` only says what is lost. Like `release`, it asks for
 * `--force` and a `--reason`: the work items of the lost buckets start over without their leases and
 * checkpoints.
 */
import { recoverBackend } from '../../backends/open.ts';
import { InvalidArgumentError } from '../../lease/errors.ts';
import type { RecoveryResult } from '../../lease/types.ts';
import { type GlobalOptions, openOptions, osUser, out, resolveUrl } from '../context.ts';

export interface RecoverCliOptions {
  force?: boolean;
  dryRun?: boolean;
  reason?: string;
  operator?: string;
  json?: boolean;
}

export async function recoverCommand(
  urlArg: string | undefined,
  options: RecoverCliOptions,
  globals: GlobalOptions,
): Promise<void> {
  const url = resolveUrl(urlArg);
  const dryRun = options.dryRun === true;
  if (!dryRun && !options.force) {
    throw new InvalidArgumentError(
      'refusing to recover without --force: the work items of the lost buckets start over without their leases and checkpoints (see what is lost with --dry-run)',
    );
  }
  const reason = options.reason?.trim() ?? '';
  if (!dryRun && reason === '') {
    throw new InvalidArgumentError('--reason must not be empty: it goes into the audit log');
  }
  const operator = options.operator?.trim() || osUser();
  const result = await recoverBackend(
    url,
    { operator, reason: reason === '' ? 'dry run' : reason, dryRun },
    openOptions(globals, false),
  );
  if (options.json) {
    await out(JSON.stringify({ ...result, operator }, null, 2));
    return;
  }
  await out(describe(result, operator));
}

function list(buckets: readonly number[]): string {
  return buckets.length === 0 ? 'none' : buckets.map((b) => `b${b}`).join(' ');
}

export function describe(r: RecoveryResult, operator: string): string {
  const where = `key prefix ${r.keyPrefix}, dataset ${r.dataset ?? '(none)'}, ${r.buckets} buckets`;
  const lost = `lost: ${r.lost.length} bucket(s) (${list(r.lost)})${r.metaLost ? ' and the meta key' : ''}`;
  if (r.dryRun) {
    if (r.lost.length === 0 && !r.metaLost) return `${where}: nothing is lost; nothing to recover`;
    return `${where}: ${lost}; \`worklease recover --force --reason …\` re-initialises them`;
  }
  if (r.recovered.length === 0 && !r.metaRecreated) return `${where}: nothing was lost; nothing written`;
  return (
    `${where}: recovered ${r.recovered.length} bucket(s) (${list(r.recovered)})` +
    `${r.metaRecreated ? ' and the meta key' : ''}; their work items start over with larger tokens ` +
    `(operator ${operator}, recorded in the audit log)`
  );
}
