/**
 * Key layout of the Redis backend (layout version 6). Nothing here does I/O.
 *
 * A work id maps to one of B buckets (B is fixed when the prefix is created and
 * stored in `<prefix>:meta`). Every key of a bucket carries the hash tag
 * `{<prefix>:b<n>}`, so every key one call touches lives in one hash slot and
 * the same scripts run unchanged on standalone Redis and on Redis Cluster,
 * where different buckets land on different masters. The prefix is in the tag
 * so that two prefixes spread over different slots, and every key also starts
 * with `<prefix>:` so `SCAN MATCH <prefix>:*` finds everything of one prefix.
 *
 * | key                         | type    | holds                                                          |
 * |-----------------------------|---------|----------------------------------------------------------------|
 * | `<P>:meta`                  | hash    | `layout` (6), `buckets` (B), `dataset` (id), `ready` (1), `created_at` (ms) |
 * | `<P>:{<P>:b<n>}:id`         | string  | the dataset id, the same in every bucket (see Dataset identity) |
 * | `<P>:{<P>:b<n>}:m`          | hash    | workId → the lease, packed (see below); after a prune, a tombstone: the last token |
 * | `<P>:{<P>:b<n>}:s:<workId>` | string  | the checkpoint bytes of one work item                          |
 * | `<P>:{<P>:b<n>}:t:<workId>` | string  | a large checkpoint's bytes on their way in: written and renamed to `s:` (or deleted) within one transaction (scripts.ts, checkpointStaged), so it exists only if that transaction's script failed; prune deletes it |
 * | `<P>:{<P>:b<n>}:ids`        | zset    | workIds, score 0 (lexicographic index for paged listing; see Indexes) |
 * | `<P>:{<P>:b<n>}:exp`        | zset    | workId → expires_at ms, a lower bound (see scripts.ts), for prune (see Indexes) |
 * | `<P>:{<P>:b<n>}:ix`         | string  | `<stream id> <ordinal>`: the last change entry the indexes hold (see Indexes) |
 * | `<P>:{<P>:b<n>}:chg`        | stream  | change feed (acquire, release, force-release, request-release, prune; not renew or checkpoint), one field `c` = kind LF workId LF packed lease, `MAXLEN ~ 10000`; also, on a Cluster, the name of the shard channel on which every write that adds a change entry SPUBLISHes an empty message (wakes idle change readers; on standalone Redis they block in XREAD on the streams instead) |
 * | `<P>:{<P>:b<n>}:aud`        | stream  | admin audit log (force-release, request-release, hold, unhold, recover), `MAXLEN ~ 10000` |
 * | `<P>:{<P>:b<n>}:hold`       | hash    | workId → `at LF operator LF reason` of each work item on hold (layout 6, docs/history.md) |
 * | `<P>:{<P>:b<n>}:h:<workId>` | list    | the work item's history (layout 6), newest first: one string per ownership change (scripts.ts, historyPush), cut to 1000 entries at write and by prune's retention; outlives the lease (prune keeps it) |
 * | `<P>:{<P>:b<n>}:ho:<workId>`| string  | the checkpoint as it was at the last handoff (copied by acquire, layout 6) |
 *
 * (`<P>` is the key prefix.) A packed lease is the {@link INFO_FIELDS} values
 * as decimal strings or words joined by LF ('' for none); LF cannot occur in
 * any of them (ids refuse control characters). Why one field per lease in a
 * bucket hash instead of a hash per lease (layout 1): a call reads and writes
 * one field (layout 1 read 14 fields and wrote 6, which cost more server time
 * than everything else in a renew), the change entry is that same string, and
 * a list page reads a bucket's leases with one HMGET. The token lives in the
 * packed lease, and a pruned work item keeps its last token as a tombstone in
 * the same field, so no separate counter is written on the hot path.
 * Checkpoint bytes live in their own string key so that no call but
 * checkpoint and readCheckpoint moves them, and a page of them is a GETRANGE.
 *
 * The release request (layout 4). A packed lease may end with one more part after `version`: LF,
 * the request's time (server ms), LF, the operator, LF, the reason as a JSON string literal (so it
 * holds no LF). Absent ('') when there is none; acquire, release and force-release write it
 * empty, requestRelease sets it, renew and checkpoint copy it and return it after the expiry. So
 * the holder learns of a request from the answer it already gets, and the script does no extra
 * Redis command for it. Layout 3 leases are layout 4 leases without a request, so the upgrade
 * from 3 only changes the layout number in the meta key (`worklease migrate`, or opening with
 * migrate on). A layout 3 process cannot read a lease with a request (it would take it for a
 * tombstone), hence the new number: it refuses to open the upgraded prefix. Processes already
 * running layout 3 code must be stopped before release requests are made.
 *
 * Indexes (layout 5). The lease calls write no index entry (but a renew that shortens its lease
 * lowers its expiry-index score): a first acquire's two ZADDs cost more server time than the rest
 * of the call (scripts.ts, header). Every write that adds, ends or prunes a lease appends a change
 * entry with the packed lease, so the readers of the indexes (list's first page of a walk, count,
 * prune) first apply the entries after `ix` to them (scripts.ts, indexCatchUp), and rebuild them
 * from the bucket hash when `ix` is missing or the entries they need were trimmed (indexRebuild).
 * So the indexes hold every lease that existed when the read began, as they did when the calls
 * wrote them. A layout 4 process reads the indexes without catching up, and would miss the leases
 * a layout 5 process acquired: it refuses layout 5. The upgrade from 3 or 4 changes the layout
 * number only, and the first read rebuilds the indexes. What a read pays (npm run bench:growth,
 * private Redis 7.0, 32 buckets, load 1.5): a rebuild 3.3 µs per stored lease at 100 000 (335 ms,
 * in scripts of about 1 ms) and 4.4 at 1 000 000 (4.4 s); the first read after 99 000 first
 * acquires 4.6 µs per acquire; after 900 000 (their entries trimmed: a rebuild that inserts them
 * all) 9.2. A check that finds a bucket's indexes up to date costs 13 µs of server time (XINFO
 * STREAM), once per bucket per walk. So a reader that comes back after more than about 10 000
 * ownership changes in a bucket (STREAM_MAXLEN) pays a rebuild; the console, which re-reads
 * every fleet every 2 s, keeps the indexes caught up. Processes running layout 3 or 4 code must
 * be stopped first.
 *
 * History and holds (layout 6, docs/history.md). The scripts that change who holds a work item
 * (acquire, release, force-release, request-release, prune) and hold / unhold append to the item's
 * history list `h:<workId>`, in the bucket's slot; renew and checkpoint do not. acquire refuses
 * (ON_HOLD) a work item in the bucket's `hold` hash, and copies the checkpoint it hands over to
 * `ho:<workId>`. Layout 5 leases read unchanged, so the upgrade from 5 changes the layout number
 * only; a layout 5 process would ignore holds and write no history, hence the new number: it
 * refuses layout 6. Processes running layout 5 code must be stopped first.
 *
 * Lease data carries no Redis TTL: an expired lease stays visible to operators
 * until an explicit prune.
 *
 * Dataset identity (layout 3). Migration writes a random dataset id into the
 * meta key and into every bucket's `id` key, in the bucket's own slot, and then
 * marks the meta key `ready`. Every call checks its bucket's `id` against the
 * id the backend read when it opened (the calls that carry a lease only when
 * they would refuse it, on the client, from the id their refusal carries:
 * scripts.ts, REFUSE) and fails with DATASET_LOST when it is missing or
 * different: a Redis restarted without persistence, a
 * FLUSHALL, or one Cluster master that came back empty is noticed by the very
 * next call on it, instead of handing out tokens again from scratch. Only
 * opening migrates, and opening refuses (DATASET_LOST) a prefix whose meta key
 * is ready but some bucket lost its `id`, or whose meta key is gone while
 * buckets still carry an id: nothing recreates a dataset that a process has
 * seen. A fresh, empty prefix is created as before. Tokens need no layout
 * change: they are floored by the server clock (scripts.ts, nextToken).
 *
 * Layout 2 (the same keys without `id`) is upgraded in place by migrating
 * (`openBackend` or `worklease migrate`): the meta key gets a dataset id, the
 * buckets get their `id` keys, then the meta key says the current layout. Code that reads
 * layout 2 refuses it with SCHEMA_MISMATCH, so an old process cannot
 * write without the check.
 *
 * Layout 1 (a hash per lease, a token counter hash) is refused with
 * SCHEMA_MISMATCH, also by `migrate`: no release ever wrote it, so there is no
 * data to convert. Delete the prefix's keys or use a new prefix.
 */
import { InvalidArgumentError } from '../../lease/errors.ts';

export const LAYOUT_VERSION = 6;
/** An older layout, upgraded in place on migrate by adding dataset ids (see Dataset identity). */
export const UPGRADABLE_LAYOUT = 2;
/**
 * The previous layouts, upgraded in place on migrate by their number alone (see The release
 * request, and Indexes: their indexes are rebuilt from the bucket hashes when first read).
 */
export const RENUMBERED_LAYOUTS: readonly number[] = [3, 4, 5];
export const DEFAULT_BUCKETS = 32;
/** Approximate cap of each bucket's change stream and audit stream (entries). */
export const STREAM_MAXLEN = 10_000;
/**
 * Cap of each work item's history list at write: the default of prune's
 * `history.keepPerItem` (lease/history-types.ts), which trims exactly.
 */
export const HISTORY_MAXLEN = 1000;

/**
 * The fields of a packed lease, in order. The checkpoint bytes are deliberately
 * not among them: listings, the change feed and `get` never move them.
 */
export const INFO_FIELDS = [
  'holder',
  'token',
  'expires_at',
  'ttl_ms',
  'step',
  'acquired_at',
  'renewed_at',
  'checkpointed_at',
  'released_at',
  'state_size',
  'clean',
  'pred_end',
  'ended',
  'version',
] as const;

/** FNV-1a (32 bit) of the UTF-8 bytes of `s`, without allocating the encoded bytes. */
export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      h = Math.imul(h ^ c, 0x01000193);
      continue;
    }
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const lo = s.charCodeAt(i + 1);
      if (lo >= 0xdc00 && lo <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
        i++;
      }
    }
    // UTF-8 bytes of code point c (2, 3 or 4 of them), hashed in order.
    if (c < 0x800) {
      h = Math.imul(h ^ (0xc0 | (c >> 6)), 0x01000193);
    } else {
      if (c < 0x10000) {
        h = Math.imul(h ^ (0xe0 | (c >> 12)), 0x01000193);
      } else {
        h = Math.imul(h ^ (0xf0 | (c >> 18)), 0x01000193);
        h = Math.imul(h ^ (0x80 | ((c >> 12) & 0x3f)), 0x01000193);
      }
      h = Math.imul(h ^ (0x80 | ((c >> 6) & 0x3f)), 0x01000193);
    }
    h = Math.imul(h ^ (0x80 | (c & 0x3f)), 0x01000193);
  }
  return h >>> 0;
}

/** Key names of one prefix with B buckets; per-bucket strings are built once. */
export class Layout {
  readonly meta: string;
  /** `{<prefix>:b<n>}` for each bucket. */
  readonly tags: readonly string[];
  /** The bucket hash of packed leases. */
  readonly m: readonly string[];
  /** `<prefix>:{<prefix>:b<n>}:s:` — a checkpoint key is this plus the work id. */
  readonly statePrefixes: readonly string[];
  /** `<prefix>:{<prefix>:b<n>}:t:` — a large checkpoint's staging key is this plus the work id. */
  readonly stagingPrefixes: readonly string[];
  readonly ids: readonly string[];
  readonly exp: readonly string[];
  /** Where the indexes stand in the change stream (see Indexes). */
  readonly ix: readonly string[];
  readonly chg: readonly string[];
  readonly aud: readonly string[];
  /** The bucket's dataset id key (see Dataset identity). */
  readonly id: readonly string[];
  /** The bucket's holds: workId → at LF operator LF reason (see History and holds). */
  readonly hold: readonly string[];
  /** `<prefix>:{<prefix>:b<n>}:` — the per-item keys are this plus `h:`, `ho:`, `s:`, `t:` and the work id. */
  readonly bases: readonly string[];
  private readonly streamBuckets: Map<string, number>;

  constructor(
    readonly prefix: string,
    readonly buckets: number,
  ) {
    if (!Number.isInteger(buckets) || buckets < 1 || buckets > 16384) {
      throw new InvalidArgumentError(`bucket count must be an integer from 1 to 16384, got ${buckets}`);
    }
    this.meta = `${prefix}:meta`;
    const tags = Array.from({ length: buckets }, (_, n) => `{${prefix}:b${n}}`);
    this.tags = tags;
    const base = tags.map((t) => `${prefix}:${t}`);
    this.m = base.map((k) => `${k}:m`);
    this.statePrefixes = base.map((k) => `${k}:s:`);
    this.stagingPrefixes = base.map((k) => `${k}:t:`);
    this.ids = base.map((k) => `${k}:ids`);
    this.exp = base.map((k) => `${k}:exp`);
    this.ix = base.map((k) => `${k}:ix`);
    this.chg = base.map((k) => `${k}:chg`);
    this.aud = base.map((k) => `${k}:aud`);
    this.id = base.map((k) => `${k}:id`);
    this.hold = base.map((k) => `${k}:hold`);
    this.bases = base.map((k) => `${k}:`);
    this.streamBuckets = new Map(this.chg.map((k, b) => [k, b]));
  }

  /** The bucket of a change stream key (from an XREAD reply). */
  bucketOfStream(key: string): number {
    const b = this.streamBuckets.get(key);
    if (b === undefined) throw new InvalidArgumentError(`'${key}' is not a change stream of this prefix`);
    return b;
  }

  bucketOf(workId: string): number {
    return fnv1a(workId) % this.buckets;
  }

  stateKey(bucket: number, workId: string): string {
    return this.statePrefixes[bucket] + workId;
  }

  stagingKey(bucket: number, workId: string): string {
    return this.stagingPrefixes[bucket] + workId;
  }

  /** The work item's history list (see History and holds). */
  historyKey(bucket: number, workId: string): string {
    return `${this.bases[bucket]}h:${workId}`;
  }

  /** The checkpoint at the work item's last handoff (see History and holds). */
  handoffKey(bucket: number, workId: string): string {
    return `${this.bases[bucket]}ho:${workId}`;
  }

  /** Every key a lease call on `workId` may touch, the stream key also its channel (for tests and operators). */
  keysOf(workId: string): string[] {
    const b = this.bucketOf(workId);
    return [
      this.m[b]!,
      this.stateKey(b, workId),
      this.ids[b]!,
      this.exp[b]!,
      this.ix[b]!,
      this.chg[b]!,
      this.aud[b]!,
      this.id[b]!,
      this.stagingKey(b, workId),
      this.hold[b]!,
      this.historyKey(b, workId),
      this.handoffKey(b, workId),
    ];
  }
}

// Cursors are opaque to callers but must be validated: a cursor is
// `<tag>.<payload>` so one from another call (or backend) is refused up front.

const POSITION = /^(\d{1,20}-\d{1,20})~(\d{1,20})$/;

/** Where a change reader is in one bucket's stream: last id read and its ordinal (see scripts.ts). */
export interface StreamPosition {
  id: string;
  ordinal: number;
}

/** The change-feed cursor: one stream position per bucket. */
export function encodeChangeCursor(positions: readonly StreamPosition[]): string {
  return `rc2.${positions.length}.${positions.map((p) => `${p.id}~${p.ordinal}`).join('.')}`;
}

export function decodeChangeCursor(cursor: string, buckets: number): StreamPosition[] {
  const parts = cursor.split('.');
  if (parts[0] !== 'rc2' || parts[1] !== String(buckets) || parts.length !== buckets + 2) {
    throw new InvalidArgumentError('options.cursor is not a change cursor of this Redis backend');
  }
  return parts.slice(2).map((part) => {
    const m = POSITION.exec(part);
    if (m === null) throw new InvalidArgumentError('options.cursor holds a malformed stream position');
    return { id: m[1]!, ordinal: Number(m[2]) };
  });
}

/** The list cursor: the last work id a page returned (or every bucket examined up to). */
export function encodeListCursor(after: string): string {
  return `rl2.${Buffer.from(after, 'utf8').toString('base64url')}`;
}

export function decodeListCursor(cursor: string): string {
  const m = /^rl2\.([A-Za-z0-9_-]+)$/.exec(cursor);
  if (m === null || m[1] === undefined) {
    throw new InvalidArgumentError('options.cursor is not a list cursor of this Redis backend');
  }
  return Buffer.from(m[1], 'base64url').toString('utf8');
}

/** Compares two stream ids (`ms-seq`) numerically. */
export function compareStreamIds(a: string, b: string): number {
  const [am = '0', as = '0'] = a.split('-');
  const [bm = '0', bs = '0'] = b.split('-');
  const d = Number(am) - Number(bm);
  return d !== 0 ? Math.sign(d) : Math.sign(Number(as) - Number(bs));
}

/**
 * Compares two strings by their UTF-8 bytes (= code point order, the order of ZRANGEBYLEX) without
 * encoding them. UTF-16 code unit order differs only where a surrogate (an astral character) meets a
 * unit from U+E000–U+FFFF, which it must sort after.
 */
export function compareUtf8(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x - y;
  }
  return a.length - b.length;
}
