/**
 * Listing and counting leases across a prefix's buckets, in work id order (bytewise UTF-8, i.e. code
 * point order), with plain commands (ZRANGEBYLEX of the `ids` index, HMGET of the packed leases).
 */
import type { LeaseInfo, LeasePage } from '../../lease/types.ts';
import type { DriverListOptions } from '../common.ts';
import { withHold } from './history.ts';
import { catchUpAll } from './indexes.ts';
import { compareUtf8, decodeListCursor, encodeListCursor } from './layout.ts';
import { parsePacked } from './packed.ts';
import type { Arg, Nullable, Sender } from './send.ts';

/**
 * One bucket's next leases in byte order from `min`: up to `want` whose holder matches, looking at
 * no more than `cap` ids (a sparse filter cannot make one call read a whole bucket). A ZRANGEBYLEX
 * of ids, then one HMGET of their packed leases: two plain commands per chunk, no per-lease Lua
 * (a Lua loop reading each lease cost about twice the server time of the commands themselves).
 * Not atomic, and need not be: a lease removed between the two commands is skipped, one added is
 * not among the ids; either way it did not exist for the whole walk.
 * `last` is the last id examined; `done` means the bucket has no ids after it. The holds of the
 * found leases (layout.ts, History and holds) are read by an HMGET of the bucket's hold hash sent
 * with the leases' (pipelined: no round trip more) and put into `holds`.
 */
async function scanBucket(
  io: Sender,
  b: number,
  min: Arg,
  max: Arg,
  want: number,
  holderId: string | undefined,
  cap: number,
  holds: Map<string, string>,
): Promise<{ done: boolean; last: string | null; found: string[] }> {
  const L = io.layout;
  const found: string[] = [];
  let last: string | null = null;
  let scanned = 0;
  for (;;) {
    const chunk = Math.min(cap - scanned, Math.max(want - found.length / 2, 64));
    const ids = await io.send<string[]>('list', 'zrangebylex', [L.ids[b]!, min, max, 'LIMIT', 0, chunk]);
    if (ids.length === 0) return { done: true, last, found };
    const [leases, held] = await Promise.all([
      io.send<Nullable[]>('list', 'hmget', [L.m[b]!, ...ids]),
      io.send<Nullable[]>('list', 'hmget', [L.hold[b]!, ...ids]),
    ]);
    let i = 0;
    for (; i < ids.length; i++) {
      const lease = leases[i];
      if (lease === null || lease === undefined) continue;
      if (holderId !== undefined && !(lease.startsWith(holderId) && lease.charCodeAt(holderId.length) === 10))
        continue;
      const hold = held[i];
      if (hold !== null && hold !== undefined) holds.set(ids[i]!, hold);
      found.push(ids[i]!, lease);
      if (found.length / 2 >= want) break;
    }
    scanned += Math.min(i + 1, ids.length);
    last = ids[Math.min(i, ids.length - 1)]!;
    if (found.length / 2 >= want) return { done: false, last, found };
    if (ids.length < chunk) return { done: true, last, found };
    if (scanned >= cap) return { done: false, last, found };
    min = `(${last}`;
  }
}

/**
 * Without a holder filter: ZLEXCOUNT of each bucket's id index (pruned items are removed from
 * it), all buckets in parallel, so nothing but counts crosses the network. The holder is only in
 * the lease hashes, so with a holder filter the matching pages are walked (10 000 a round).
 */
export async function count(
  io: Sender,
  workIdPrefix: string | undefined,
  holderId: string | undefined,
): Promise<number> {
  if (holderId !== undefined) {
    let n = 0;
    let cursor: string | null = null;
    do {
      const page = await list(io, { cursor, limit: 10_000, workIdPrefix, holderId });
      n += page.items.length;
      cursor = page.nextCursor;
    } while (cursor !== null);
    return n;
  }
  const L = io.layout;
  await catchUpAll(io, 'count');
  const min: Arg = workIdPrefix === undefined ? '-' : `[${workIdPrefix}`;
  // As in list: every UTF-8 string that starts with the prefix sorts before prefix + 0xFF.
  const max: Arg =
    workIdPrefix === undefined
      ? '+'
      : Buffer.concat([Buffer.from(`[${workIdPrefix}`, 'utf8'), Buffer.from([0xff])]);
  const counts = await Promise.all(
    L.ids.map((key) => io.send<number>('count', 'zlexcount', [key, min, max])),
  );
  return counts.reduce((a, b) => a + Number(b), 0);
}

/**
 * Pages in work id order (bytewise UTF-8, i.e. code point order) across buckets. Each round asks
 * every bucket, in parallel, for its next few matching leases after the cursor; a bucket that was
 * not read to its end has examined its ids only up to the last one it scanned, so only leases up
 * to the smallest such "frontier" are known to be complete and may be returned. The cursor is the
 * last work id returned (or the frontier), so an item that exists for the whole walk is returned
 * exactly once, whatever is written meanwhile.
 */
export async function list(io: Sender, options: DriverListOptions): Promise<LeasePage> {
  const L = io.layout;
  let after = options.cursor === null ? null : decodeListCursor(options.cursor);
  // A walk's first page brings the indexes up to date (layout.ts, Indexes): every work item that
  // exists for the whole walk existed then. Later pages read the indexes as they are.
  if (after === null) await catchUpAll(io, 'list');
  const prefix =
    options.workIdPrefix === undefined || options.workIdPrefix === '' ? null : options.workIdPrefix;
  // Every UTF-8 string that starts with the prefix sorts before prefix + 0xFF (never a UTF-8 byte).
  const max: Arg =
    prefix === null ? '+' : Buffer.concat([Buffer.from(`[${prefix}`, 'utf8'), Buffer.from([0xff])]);
  const items: LeaseInfo[] = [];
  const holds = new Map<string, string>();
  for (let round = 0; round < 16; round++) {
    const min =
      after !== null && (prefix === null || compareUtf8(after, prefix) >= 0)
        ? `(${after}`
        : prefix === null
          ? '-'
          : `[${prefix}`;
    const want = options.limit - items.length;
    // This bucket's share of the page with slack for uneven buckets: about 2 standard deviations of
    // a bucket's count, so that one round usually fills the page (a second round costs a round
    // trip and re-reads what the first one read past the frontier).
    const share = want / L.buckets;
    const perBucket = Math.min(want, Math.ceil(share + 2 * Math.sqrt(share)) + 8);
    const replies = await Promise.all(
      L.ids.map((_, b) =>
        scanBucket(io, b, min, max, perBucket, options.holderId, Math.max(perBucket, 500), holds),
      ),
    );
    // Leases up to the smallest last-examined id of an unfinished bucket are complete.
    let frontier: string | null = null;
    for (const { done, last } of replies) {
      if (done || last === null) continue;
      if (frontier === null || compareUtf8(last, frontier) < 0) frontier = last;
    }
    // Indexes into `all` (workId at i, packed lease at i + 1) of the complete leases.
    const all: string[] = [];
    for (const { found } of replies) for (const x of found) all.push(x);
    const rows: number[] = [];
    for (let i = 0; i < all.length; i += 2) {
      if (frontier === null || compareUtf8(all[i]!, frontier) <= 0) rows.push(i);
    }
    // Each bucket's run is already in order; the sort merges them.
    rows.sort((x, y) => compareUtf8(all[x]!, all[y]!));
    const n = Math.min(rows.length, want);
    for (let k = 0; k < n; k++) {
      const i = rows[k]!;
      const info = parsePacked(all[i]!, all[i + 1]!);
      if (info !== null) items.push(withHold(info, holds.get(all[i]!)));
    }
    if (rows.length >= want) {
      const last = all[rows[want - 1]!]!;
      const more = frontier !== null || rows.length > want;
      return { items, nextCursor: more ? encodeListCursor(last) : null };
    }
    if (frontier === null) return { items, nextCursor: null };
    after = frontier;
  }
  return { items, nextCursor: after === null ? null : encodeListCursor(after) };
}
