/**
 * A lost shard and its recovery (layout.ts, Dataset identity).
 *
 * On a Cluster every bucket lives on the master that owns its hash slot. When one master comes back
 * empty (restarted without persistence, or failed over to a replica that had nothing), the buckets
 * it owns lose every key, their `id` key included; the buckets on the other masters keep theirs. So
 * a bucket whose `id` key is missing is lost, and only its work items are: every script on it fails
 * DATASET_LOST (scripts.ts, IDENTITY and REFUSE) while the other buckets work on, and opening a
 * prefix with lost buckets succeeds (open.ts), so a process that restarts meanwhile serves the
 * healthy buckets too. Listing, counting and the change feed fail DATASET_LOST while a bucket is
 * lost (they would miss its items): the console shows the connection's error, and `datasetLoss`
 * names the lost buckets and the affected items.
 *
 * {@link recover} brings the lost buckets back: it writes the dataset id into each lost bucket's
 * `id` key (only where it is still missing, in one script per bucket with its audit entry) and,
 * when the meta key was on the lost master, writes it again from the surviving buckets. A bucket
 * that holds another dataset's id is never touched, nor is anything else. Processes that opened the
 * dataset before see the same id again and go on without reopening.
 *
 * Why no token is issued twice: a recovered bucket starts empty, and its first acquire of a work
 * item takes the token max(stored + 1, the server's µs) (scripts.ts, nextToken), so every token it
 * issues exceeds those the lost master issued before it lost them, as long as its clock is ahead of
 * the moment it lost them (it is, unless the restarted master's clock is behind by more than the
 * outage took). A holder that still holds a lease from before is fenced by its next call: the work
 * item is either gone (FENCED, no lease) or held under a larger token. Their checkpoints are gone.
 *
 * The recovery scripts run as EVAL (a handful of calls per recovery, never on a hot path).
 */
import { InvalidArgumentError, SchemaMismatchError } from '../../lease/errors.ts';
import type { DatasetLoss, RecoveryResult } from '../../lease/types.ts';
import { DEFAULT_BUCKETS, LAYOUT_VERSION, Layout, STREAM_MAXLEN } from './layout.ts';
import { NOW_STR } from './scripts.ts';
import type { Nullable, Sender } from './send.ts';

/** What a prefix lost, read from the server (without the `affected` of the admin call). */
export type Loss = Omit<DatasetLoss, 'affected'>;

/** What {@link recover} did. */
export type Recovery = Omit<RecoveryResult, 'dryRun'>;

/**
 * recoverBucket — KEYS: the bucket's `id` key, its audit stream. ARGV: dataset id, operator,
 * reason, bucket number. Sets the id only if it is still missing, with one audit entry (action
 * `recover`); replies 'OK', or `{'PRESENT', id}` when the key is there (recovered meanwhile, or
 * never lost).
 */
const RECOVER_BUCKET = `
local found = redis.call('GET', KEYS[1])
if found then return {'PRESENT', found} end${NOW_STR}
redis.call('SET', KEYS[1], ARGV[1])
redis.call('XADD', KEYS[2], 'MAXLEN', '~', '${STREAM_MAXLEN}', '*', 'action', 'recover', 'workId', '',
  'operator', ARGV[2], 'reason', ARGV[3], 'old_holder', '', 'old_token', '0', 'new_token', '0', 'at', nows,
  'bucket', ARGV[4])
return 'OK'`;

/**
 * recreateMeta — KEYS: meta. ARGV: layout version, bucket count, dataset id. Writes the meta key,
 * ready, only if it is missing; replies what the meta key holds afterwards, as HMGET of layout,
 * buckets, dataset, ready.
 */
const RECREATE_META = `
if redis.call('EXISTS', KEYS[1]) == 0 then${NOW_STR}
  redis.call('HSET', KEYS[1], 'layout', ARGV[1], 'buckets', ARGV[2], 'dataset', ARGV[3], 'created_at', nows,
    'recovered_at', nows, 'ready', '1')
end
return redis.call('HMGET', KEYS[1], 'layout', 'buckets', 'dataset', 'ready')`;

/** Reads the meta key and every bucket's id: which buckets the prefix lost. Writes nothing. */
export async function inspectLoss(io: Sender): Promise<Loss> {
  const meta = await io.send<Nullable[]>('recover', 'hmget', [
    `${io.prefix}:meta`,
    'layout',
    'buckets',
    'dataset',
    'ready',
  ]);
  const [layout, count, stored, ready] = meta;
  const metaLost = layout === null || layout === undefined;
  if (!metaLost && (layout !== String(LAYOUT_VERSION) || ready !== '1')) {
    throw new SchemaMismatchError(
      `key prefix '${io.prefix}' on ${io.url} holds data layout ${layout}${ready === '1' ? '' : ', not fully migrated'}: recover only brings back lost buckets of a migrated layout ${LAYOUT_VERSION} dataset; run \`worklease migrate\` instead`,
      { details: { keyPrefix: io.prefix, found: layout, expected: LAYOUT_VERSION } },
    );
  }
  const buckets = metaLost ? DEFAULT_BUCKETS : Number(count);
  const L = new Layout(io.prefix, buckets);
  const ids = await Promise.all(L.id.map((key) => io.send<Nullable>('recover', 'get', [key])));
  const dataset = metaLost ? survivingDataset(io, ids) : (stored ?? null);
  const lost: number[] = [];
  const foreign: number[] = [];
  ids.forEach((id, b) => {
    if (id === null || id === undefined) lost.push(b);
    else if (id !== dataset) foreign.push(b);
  });
  if (dataset === null) return { keyPrefix: io.prefix, dataset, buckets, lost: [], foreign, metaLost: false };
  return { keyPrefix: io.prefix, dataset, buckets, lost, foreign, metaLost };
}

/** With the meta key gone: the one dataset id the surviving buckets agree on (null when none survives). */
function survivingDataset(io: Sender, ids: readonly Nullable[]): string | null {
  const found = new Set(ids.filter((id): id is string => typeof id === 'string'));
  if (found.size > 1) {
    throw new InvalidArgumentError(
      `key prefix '${io.prefix}' on ${io.url} lost its meta key, and its buckets hold ${found.size} different datasets (${[...found].join(', ')}): recover cannot tell which one is the prefix's; nothing was written`,
      { details: { keyPrefix: io.prefix, datasets: [...found] } },
    );
  }
  return found.size === 1 ? [...found][0]! : null;
}

/**
 * Re-initialises exactly the lost buckets of the prefix (see the header), each with an audit entry
 * by `operator` with `reason`, and the meta key when it is gone. Refuses (nothing written) when
 * nothing of the prefix is left (a fresh or wiped prefix: opening creates it) or when a bucket holds
 * another dataset.
 */
export async function recover(io: Sender, operator: string, reason: string): Promise<Recovery> {
  const loss = await inspectLoss(io);
  if (loss.dataset === null) {
    throw new InvalidArgumentError(
      `nothing of key prefix '${io.prefix}' is left on ${io.url} (no meta key, no bucket): there is nothing to recover; opening it creates a new dataset (tokens stay increasing: docs/durability.md)`,
      { details: { keyPrefix: io.prefix } },
    );
  }
  if (loss.foreign.length > 0) {
    throw new InvalidArgumentError(
      `key prefix '${io.prefix}' on ${io.url}: ${loss.foreign.length} bucket(s) (first: b${loss.foreign[0]}) hold another dataset than ${loss.dataset}: recover does not choose between two datasets; nothing was written`,
      { details: { keyPrefix: io.prefix, dataset: loss.dataset, foreign: loss.foreign } },
    );
  }
  const L = new Layout(io.prefix, loss.buckets);
  const dataset = loss.dataset;
  // A meta key recreated without any lost bucket still leaves its audit entry, in bucket 0.
  const audited = loss.lost.length > 0 ? loss.lost : loss.metaLost ? [0] : [];
  const replies = await Promise.all(
    audited.map((b) =>
      loss.lost.includes(b)
        ? io.send<string | unknown[]>('recover', 'eval', [
            RECOVER_BUCKET,
            2,
            L.id[b]!,
            L.aud[b]!,
            dataset,
            operator,
            reason,
            String(b),
          ])
        : io.send<string>('recover', 'xadd', [
            L.aud[b]!,
            'MAXLEN',
            '~',
            STREAM_MAXLEN,
            '*',
            'action',
            'recover',
            'workId',
            '',
            'operator',
            operator,
            'reason',
            reason,
            'old_holder',
            '',
            'old_token',
            '0',
            'new_token',
            '0',
            'bucket',
            'meta',
          ]),
    ),
  );
  const recovered = audited.filter((b, i) => loss.lost.includes(b) && replies[i] === 'OK');
  let metaRecreated = false;
  if (loss.metaLost) {
    const meta = await io.send<Nullable[]>('recover', 'eval', [
      RECREATE_META,
      1,
      L.meta,
      LAYOUT_VERSION,
      loss.buckets,
      dataset,
    ]);
    if (meta[2] !== dataset) {
      throw new InvalidArgumentError(
        `key prefix '${io.prefix}' on ${io.url}: its meta key was written meanwhile with dataset ${String(meta[2])}, not ${dataset}: recover again to see what is left`,
        { details: { keyPrefix: io.prefix, dataset, found: meta[2] ?? null } },
      );
    }
    metaRecreated = true;
  }
  return { ...loss, recovered, metaRecreated };
}
