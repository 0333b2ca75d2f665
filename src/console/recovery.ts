/**
 * The console's view of a lost shard (src/backends/redis/recover.ts): which buckets of a Redis key
 * prefix lost their data and which of the work items the console showed live in them
 * (`connection.datasetLoss`), and the recover action (`connection.recover`). The service checks
 * roles and read-only before it calls these; the backend writes the audit entries.
 */
import { recoverBackend } from '../backends/open.ts';
import { InvalidArgumentError } from '../lease/errors.ts';
import type { BackendKind, LeaseAdmin, OpenOptions, RecoveryResult } from '../lease/types.ts';
import { type DatasetLossWire, MAX_AFFECTED, type RecoveryWire } from './api.ts';

/** How many work ids one `datasetLoss` call is asked about (the library's cap). */
const ASK_AT_ONCE = 10_000;

export interface LossTarget {
  name: string;
  kind: BackendKind;
  url: string;
  /** The open backend's admin; null when the connection could not open (its meta key lost?). */
  admin: LeaseAdmin | null;
  /** The work ids the console shows for it (kept while the connection is in error). */
  workIds(): string[];
}

function requireRedis(target: LossTarget): void {
  if (target.kind !== 'redis' && target.kind !== 'redis-cluster') {
    throw new InvalidArgumentError(
      `connection '${target.name}' is ${target.kind}: lost buckets and their recovery are a Redis matter`,
    );
  }
}

function recoveryWire(r: RecoveryResult): RecoveryWire {
  return {
    keyPrefix: r.keyPrefix,
    dataset: r.dataset,
    buckets: r.buckets,
    lost: r.lost,
    foreign: r.foreign,
    metaLost: r.metaLost,
    recovered: r.recovered,
    metaRecreated: r.metaRecreated,
    dryRun: r.dryRun,
  };
}

/** What the prefix lost now, and which shown work items that costs. Writes nothing. */
export async function datasetLossOf(
  target: LossTarget,
  options: Omit<OpenOptions, 'migrate'>,
  operator: string,
): Promise<DatasetLossWire> {
  requireRedis(target);
  const admin = target.admin;
  if (admin === null || admin.datasetLoss === undefined) {
    // Not open (refused: the meta key is gone?): the dry run of a recovery reads the same facts.
    const r = await recoverBackend(target.url, { operator, reason: 'dry run', dryRun: true }, options);
    const { recovered: _r, metaRecreated: _m, dryRun: _d, ...loss } = r;
    return { ...loss, affected: [], affectedTotal: 0 };
  }
  const ids = target.workIds();
  const affected: string[] = [];
  let loss = await admin.datasetLoss(ids.slice(0, ASK_AT_ONCE));
  affected.push(...loss.affected);
  for (let i = ASK_AT_ONCE; i < ids.length && loss.lost.length > 0; i += ASK_AT_ONCE) {
    loss = await admin.datasetLoss(ids.slice(i, i + ASK_AT_ONCE));
    affected.push(...loss.affected);
  }
  affected.sort();
  return {
    keyPrefix: loss.keyPrefix,
    dataset: loss.dataset,
    buckets: loss.buckets,
    lost: loss.lost,
    foreign: loss.foreign,
    metaLost: loss.metaLost,
    affected: affected.slice(0, MAX_AFFECTED),
    affectedTotal: affected.length,
  };
}

/**
 * Re-initialises the lost buckets. `confirmKeyPrefix` must name the prefix the connection works on
 * (what the operator typed), else INVALID_ARGUMENT before anything is written.
 */
export async function recoverTarget(
  target: LossTarget,
  options: Omit<OpenOptions, 'migrate'>,
  operator: string,
  reason: string,
  confirmKeyPrefix: string,
): Promise<RecoveryWire> {
  requireRedis(target);
  const dry = await recoverBackend(target.url, { operator, reason, dryRun: true }, options);
  if (dry.keyPrefix !== confirmKeyPrefix) {
    throw new InvalidArgumentError(
      `the typed key prefix '${confirmKeyPrefix}' is not the connection's ('${dry.keyPrefix}'): nothing was recovered`,
      { details: { expected: dry.keyPrefix } },
    );
  }
  return recoveryWire(await recoverBackend(target.url, { operator, reason }, options));
}
