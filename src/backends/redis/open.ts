/**
 * Opening a prefix: connecting, reading (and with `migrate`, creating or upgrading) its meta key and
 * the buckets' dataset ids (layout.ts, Dataset identity).
 */
import { randomBytes } from 'node:crypto';
import { BackendUnavailableError, DatasetLostError, SchemaMismatchError } from '../../lease/errors.ts';
import { migrateCommandFor } from '../url.ts';
import type { RedisClient, RedisTarget } from './connection.ts';
import { DEFAULT_BUCKETS, LAYOUT_VERSION, Layout, RENUMBERED_LAYOUTS, UPGRADABLE_LAYOUT } from './layout.ts';
import { type Nullable, S, type Sender } from './send.ts';

/**
 * Checks (and with `migrate`, creates or upgrades) `<prefix>:meta` and the buckets' `id` keys,
 * and adopts the prefix's bucket count and dataset id (layout.ts, Dataset identity). Refuses a
 * dataset that is partly gone instead of recreating it.
 */
export async function checkLayout(io: Sender, migrate: boolean): Promise<void> {
  const where = `key prefix '${io.prefix}' on ${io.url}`;
  const readMeta = (): Promise<Nullable[]> =>
    io.send<Nullable[]>('open', 'hmget', [io.layout.meta, 'layout', 'buckets', 'dataset', 'ready']);
  let meta = await readMeta();
  if (meta[0] === null || meta[0] === undefined) {
    if (!migrate) {
      throw new SchemaMismatchError(
        `no worklease data under ${where}: run \`${migrateCommandFor(io.url)}\` first`,
        { details: { keyPrefix: io.prefix, found: null, expected: LAYOUT_VERSION } },
      );
    }
    await refuseOrphanBuckets(io, readMeta, where);
  }
  const renumbered = (layout: Nullable | undefined): boolean =>
    RENUMBERED_LAYOUTS.some((n) => layout === String(n));
  const upgradable = meta[0] === String(UPGRADABLE_LAYOUT) || renumbered(meta[0]);
  if (migrate && (meta[0] === null || meta[0] === undefined || upgradable)) {
    meta = await io.run<Nullable[]>('migrate', S.migrate, [
      io.layout.meta,
      LAYOUT_VERSION,
      DEFAULT_BUCKETS,
      randomBytes(12).toString('hex'),
      UPGRADABLE_LAYOUT,
      ...RENUMBERED_LAYOUTS,
    ]);
  }
  const [layout, buckets, dataset, ready] = meta;
  const n = Number(buckets);
  const known = layout === String(LAYOUT_VERSION) || (migrate && layout === String(UPGRADABLE_LAYOUT));
  if (!known || !Number.isInteger(n) || n < 1 || n > 16384 || typeof dataset !== 'string') {
    const fix =
      layout === String(UPGRADABLE_LAYOUT) || renumbered(layout)
        ? `; run \`worklease migrate ${io.url}\` (with this key prefix) to upgrade it in place`
        : Number(layout) < UPGRADABLE_LAYOUT
          ? // Layout 1 was never released, so there is nothing to convert (layout.ts): say how to start over.
            `; it is not converted: delete the keys matching '${io.prefix}:*' or use another key prefix`
          : Number(layout) > LAYOUT_VERSION
            ? '; a newer worklease wrote it: upgrade worklease (migrate cannot take a layout back)'
            : '';
    throw new SchemaMismatchError(
      `${where} holds data layout ${layout} with ${String(buckets)} buckets; this version of worklease reads layout ${LAYOUT_VERSION}${fix}`,
      { details: { keyPrefix: io.prefix, found: layout, expected: LAYOUT_VERSION } },
    );
  }
  const L = new Layout(io.prefix, n);
  if (ready === '1') {
    // A bucket that lost its id (a Cluster master that came back empty took its keys) costs its own
    // items only: the scripts refuse it with DATASET_LOST until `worklease recover` (recover.ts).
    // A bucket holding another dataset is refused here: two datasets are never mixed.
    const ids = await Promise.all(L.id.map((key) => io.send<Nullable>('open', 'get', [key])));
    const other = ids.flatMap((id, b) => (id === dataset || id === null ? [] : [b]));
    if (other.length > 0) throw lostAtOpen(io, where, dataset, other, ids[other[0]!] ?? null);
  } else {
    if (!migrate) {
      throw new SchemaMismatchError(
        `the data under ${where} was not fully migrated: run \`worklease migrate ${io.url}\` (with this key prefix)`,
        { details: { keyPrefix: io.prefix, found: layout, expected: LAYOUT_VERSION } },
      );
    }
    // SET NX GET: sets the id where it is missing and replies what was there (null when it set it).
    const before = await Promise.all(
      L.id.map((key) => io.send<Nullable>('migrate', 'set', [key, dataset, 'NX', 'GET'])),
    );
    const other = before.flatMap((id, b) => (id === null || id === dataset ? [] : [b]));
    if (other.length > 0) throw lostAtOpen(io, where, dataset, other, before[other[0]!] ?? null);
    const marked = await io.run<number>('migrate', S.markReady, [L.meta, LAYOUT_VERSION, dataset]);
    if (Number(marked) !== 1) throw lostAtOpen(io, where, dataset, [], null);
  }
  io.layout = L;
  io.dataset = dataset;
}

/**
 * With the meta key missing, the buckets must carry no dataset either: if some do, the meta key's
 * node lost its data (or someone deleted it) while the buckets survived, and creating a new
 * dataset over them would mix two. A concurrent first open writes its meta key before any bucket
 * id, so a bucket id seen here with the meta key there on a second read is that open, not a loss.
 */
async function refuseOrphanBuckets(
  io: Sender,
  readMeta: () => Promise<Nullable[]>,
  where: string,
): Promise<void> {
  const L = new Layout(io.prefix, DEFAULT_BUCKETS);
  const ids = await Promise.all(L.id.map((key) => io.send<Nullable>('open', 'get', [key])));
  const found = ids.flatMap((id, b) => (id === null ? [] : [b]));
  if (found.length === 0) return;
  const again = await readMeta();
  if (again[0] !== null && again[0] !== undefined) return;
  throw new DatasetLostError(
    `${where} lost its meta key '${L.meta}' while ${found.length} of ${DEFAULT_BUCKETS} buckets still hold dataset ${String(ids[found[0]!])}: part of the data is gone (a Cluster master came back empty?). Restore it with \`worklease recover\` (docs/durability.md), or, to start over, delete the keys matching '${io.prefix}:*'`,
    { details: { keyPrefix: io.prefix, buckets: found } },
  );
}

function lostAtOpen(
  io: Sender,
  where: string,
  dataset: string,
  buckets: number[],
  found: string | null,
): DatasetLostError {
  return new DatasetLostError(
    `${where} holds dataset ${dataset}, but ${buckets.length === 0 ? 'its meta key changed while migrating' : `${buckets.length} bucket(s) (first: b${buckets[0]}) ${found === null ? 'lost their data' : `hold another dataset (${found})`}`}: part of the data is gone (a Redis node restarted without persistence?), and worklease does not recreate it. To start over (tokens stay increasing: docs/durability.md), delete the keys matching '${io.prefix}:*'`,
    { details: { keyPrefix: io.prefix, dataset, buckets } },
  );
}

export async function connect(client: RedisClient, target: RedisTarget, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      client.connect(),
      new Promise((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new BackendUnavailableError(`could not connect to ${target.redacted} within ${timeoutMs} ms`),
            ),
          timeoutMs,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
