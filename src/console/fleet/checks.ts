/**
 * Heartbeat checks in O(due + visible) (issue 43). The change feed carries ownership changes only
 * (a renew or checkpoint writes no feed entry: issue 14), so the console re-reads leases itself —
 * but only those whose status may have changed since the last check: the rows whose next status
 * change (expiring, expired, stuck by checkpoint age: status.ts `nextStatusChangeAt`) is due by
 * the check's backend time, from the store's timing wheel, plus the rows in subscribed views.
 * A row left out cannot have changed status: a renew or checkpoint only moves its moments later,
 * and renewing an expired lease fails (only an acquire, which the feed carries, brings it back).
 *
 * Each check: one `serverTime` call (the check's time T), then the due rows in batches of
 * {@link BATCH}, through `admin.getMany` (one statement or one pipeline per batch) where the
 * backend has it, else `get` calls {@link GET_CONCURRENCY} at a time. After it, every row is at
 * least as new as T for its status, so statuses are judged at min(backend now, T).
 * Checks start every `intervalMs` (2 s) at every fleet size; a failing one is retried at most
 * `intervalMs` later, so checks resume within one interval after the backend recovers.
 */
import { DatasetLostError } from '../../lease/errors.ts';
import type { LeaseAdmin, LeaseInfo } from '../../lease/types.ts';

/** Work ids per `getMany` call. */
export const BATCH = 1000;
/** `get` calls in flight at once where the backend has no `getMany`. */
export const GET_CONCURRENCY = 32;

type BatchAdmin = LeaseAdmin & { getMany?: (workIds: string[]) => Promise<Array<LeaseInfo | null>> };

/** The leases of `workIds` (null where none), in order: one batched read where the backend has one. */
export async function readMany(admin: LeaseAdmin, workIds: string[]): Promise<Array<LeaseInfo | null>> {
  const batch = admin as BatchAdmin;
  if (typeof batch.getMany === 'function') return batch.getMany(workIds);
  const out = new Array<LeaseInfo | null>(workIds.length).fill(null);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < workIds.length; i = next++) out[i] = await admin.get(workIds[i]!);
  };
  await Promise.all(Array.from({ length: Math.min(GET_CONCURRENCY, workIds.length) }, worker));
  return out;
}

/** What a check needs of the model. */
export interface CheckTarget {
  readonly admin: LeaseAdmin;
  readonly closed: boolean;
  /** Work ids whose status may change by `at` (backend ms). */
  due(at: number): string[];
  /** Work ids in subscribed windows (re-read at every check). */
  visible(): Iterable<string>;
  /** Applies a row read by the check; true when it moved. The generation names the store. */
  apply(info: LeaseInfo, generation: number): boolean;
  readonly generation: number;
}

/** One check; returns its backend time and how many rows it read (null: closed or the store was replaced). */
export async function runCheck(
  target: CheckTarget,
  maxVisible: number,
): Promise<{ asOf: number; rows: number; moved: number } | null> {
  const generation = target.generation;
  const asOf = (await target.admin.serverTime()).getTime();
  await confirmDataset(target.admin);
  const ids = new Set(target.due(asOf));
  let extra = 0;
  for (const id of target.visible()) {
    if (extra++ >= maxVisible) break;
    ids.add(id);
  }
  const list = [...ids];
  let moved = 0;
  for (let i = 0; i < list.length; i += BATCH) {
    if (target.closed || target.generation !== generation) return null;
    const infos = await readMany(target.admin, list.slice(i, i + BATCH));
    if (target.closed || target.generation !== generation) return null;
    for (const info of infos) if (info !== null && target.apply(info, generation)) moved++;
  }
  return { asOf, rows: list.length, moved };
}

/**
 * Where the backend can tell (Redis: `datasetLoss`, one read of each bucket's dataset id), a
 * check fails DATASET_LOST when a bucket lost its data. A check reads only due and visible rows,
 * so without this a shard that came back empty would go unnoticed until one of its leases fell
 * due. The connection then shows the error (and, for a lost shard, which shown items it takes).
 */
async function confirmDataset(admin: LeaseAdmin): Promise<void> {
  if (typeof admin.datasetLoss !== 'function') return;
  const loss = await admin.datasetLoss([]);
  if (loss.lost.length === 0 && !loss.metaLost) return;
  throw new DatasetLostError(
    `the key prefix '${loss.keyPrefix}' lost bucket(s) ${loss.lost.join(', ')}${loss.metaLost ? ' and its meta key' : ''}: their work items fail DATASET_LOST until \`worklease recover\` (or the console's Recover) re-initialises them`,
    {
      details: { keyPrefix: loss.keyPrefix, lost: loss.lost, buckets: loss.buckets, metaLost: loss.metaLost },
    },
  );
}
