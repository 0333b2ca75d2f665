/**
 * A work item's history and holds on Redis (docs/history.md): admin.history, hold / unhold,
 * handoffCheckpoint, prune's history retention, and reading the holds that acquire, get and list
 * report. Keys: layout.ts (History and holds); scripts: history-scripts.ts, and for the entries the
 * lease calls write, scripts.ts.
 */
import { InternalError, InvalidArgumentError, NotFoundError, OnHoldError } from '../../lease/errors.ts';
import type { Hold } from '../../lease/history-types.ts';
import type { HistoryEntry, HistoryKind, LeaseChange, LeaseInfo, StatePage } from '../../lease/types.ts';
import type { HistoryPruning } from '../common.ts';
import { parsePacked } from './packed.ts';
import { type Nullable, S, type Sender } from './send.ts';

const KINDS: readonly HistoryKind[] = [
  'acquired',
  'released',
  'expired',
  'force-released',
  'release-requested',
  'held',
  'unheld',
];

/** A stored hold (`at LF operator LF reason`, the reason as given: it may hold LFs). */
export function parseHold(stored: string): Hold {
  const a = stored.indexOf('\n');
  const b = stored.indexOf('\n', a + 1);
  if (a < 0 || b < 0) throw new InternalError(`malformed hold stored on Redis: ${JSON.stringify(stored)}`);
  return {
    at: new Date(Number(stored.slice(0, a))),
    operator: stored.slice(a + 1, b),
    reason: stored.slice(b + 1),
  };
}

/** The ON_HOLD refusal of an acquire: the stored hold as the acquire script replied it. */
export function onHoldError(workId: string, stored: string): OnHoldError {
  const hold = parseHold(stored);
  return new OnHoldError(
    `work item '${workId}' is on hold by ${hold.operator} since ${hold.at.toISOString()} (${hold.reason}): acquire refused until an operator unholds it`,
    { details: { workId, heldAt: hold.at, operator: hold.operator, reason: hold.reason } },
  );
}

/** `info` with its hold from the bucket's hold hash (null when not held). */
export function withHold(info: LeaseInfo, stored: Nullable | undefined): LeaseInfo {
  info.hold = stored === null || stored === undefined ? null : parseHold(stored);
  return info;
}

/**
 * Sets the hold of each change's lease, as the hold hashes hold it when the batch is read (a change
 * entry carries the lease as it was written, without its hold: a hold writes no change entry): one
 * HMGET per bucket with changes, in parallel.
 */
export async function addHolds(io: Sender, changes: readonly LeaseChange[]): Promise<void> {
  const L = io.layout;
  const byBucket = new Map<number, LeaseInfo[]>();
  for (const c of changes) {
    if (c.lease === null) continue;
    const b = L.bucketOf(c.workId);
    const list = byBucket.get(b);
    if (list === undefined) byBucket.set(b, [c.lease]);
    else list.push(c.lease);
  }
  await Promise.all(
    [...byBucket].map(async ([b, leases]) => {
      const held = await io.send<Nullable[]>('changes', 'hmget', [
        L.hold[b]!,
        ...leases.map((l) => l.workId),
      ]);
      for (const [i, lease] of leases.entries()) withHold(lease, held[i]);
    }),
  );
}

/** `info` (the lease an admin script returned) with its hold, read after the script. */
export async function readHold(io: Sender, op: string, info: LeaseInfo): Promise<LeaseInfo> {
  const L = io.layout;
  const held = await io.send<Nullable>(op, 'hget', [L.hold[L.bucketOf(info.workId)]!, info.workId]);
  return withHold(info, held);
}

/** A history page's `before`: an entry id this backend wrote (`<server µs>-<n>`). */
function checkEntryId(before: string): string {
  if (!/^\d{1,20}-\d{1,3}$/.test(before)) {
    throw new InvalidArgumentError(
      `options.before is not the id of a history entry of this backend: '${before}'`,
    );
  }
  return before;
}

/** A stored entry (scripts.ts, historyPush): id, kind, at, holder, token, bytes[, operator, reason]. */
function toEntry(stored: string): HistoryEntry {
  const parts = stored.split('\n');
  const [id = '', kind = '', at = '', holderId = '', token = '', bytes = ''] = parts;
  if (!KINDS.includes(kind as HistoryKind)) {
    throw new InternalError(`unknown history entry kind on Redis: ${JSON.stringify(kind)}`);
  }
  const entry: HistoryEntry = {
    id,
    kind: kind as HistoryKind,
    at: new Date(Number(at)),
    holderId,
    token: BigInt(token || '0'),
  };
  if (parts.length > 6) {
    entry.operator = parts[6]!;
    entry.reason = parts.slice(7).join('\n');
  }
  if (bytes !== '') entry.checkpointBytes = Number(bytes);
  return entry;
}

/** Compares two entry ids (`µs-n`) in time order. */
function compareIds(a: string, b: string): number {
  const [au = '', an = ''] = a.split('-');
  const [bu = '', bn = ''] = b.split('-');
  if (au.length !== bu.length) return au.length - bu.length;
  if (au !== bu) return au < bu ? -1 : 1;
  return Number(an) - Number(bn);
}

/**
 * Newest first. A list holds at most about 1 000 entries (scripts.ts, historyPush), so a page after
 * `before` reads the list and starts after that entry (by position; by id when it was trimmed away).
 */
export async function history(
  io: Sender,
  workId: string,
  before: string | null,
  limit: number,
): Promise<HistoryEntry[]> {
  const L = io.layout;
  const key = L.historyKey(L.bucketOf(workId), workId);
  if (before === null) {
    const page = await io.send<string[]>('history', 'lrange', [key, 0, limit - 1]);
    return page.map(toEntry);
  }
  checkEntryId(before);
  const all = await io.send<string[]>('history', 'lrange', [key, 0, -1]);
  const at = all.findIndex((e) => e.startsWith(`${before}\n`));
  const older =
    at >= 0 ? all.slice(at + 1) : all.filter((e) => compareIds(e.slice(0, e.indexOf('\n')), before) < 0);
  return older.slice(0, limit).map(toEntry);
}

export async function hold(
  io: Sender,
  workId: string,
  operator: string,
  reason: string,
  on: boolean,
): Promise<LeaseInfo> {
  const L = io.layout;
  const b = L.bucketOf(workId);
  const op = on ? 'hold' : 'unhold';
  const reply = await io.runIn<unknown[]>(
    op,
    on ? S.hold : S.unhold,
    b,
    [L.m[b]!, L.hold[b]!, L.historyKey(b, workId), L.aud[b]!],
    [workId, operator, reason],
  );
  if (reply[0] === 'NOTFOUND') {
    throw new NotFoundError(`work item '${workId}' has no lease to ${op}`, { details: { workId } });
  }
  if (io.durable) await io.confirm(op, b);
  const info = parsePacked(workId, String(reply[0]));
  if (info === null) throw new InternalError(`${op} of '${workId}' returned no lease`);
  return withHold(info, reply[1] === null || reply[1] === undefined ? null : String(reply[1]));
}

export async function handoffCheckpoint(
  io: Sender,
  workId: string,
  offset: number,
  length: number,
): Promise<StatePage | null> {
  const L = io.layout;
  const b = L.bucketOf(workId);
  const reply = await io.runIn<[Buffer, number, Buffer] | null>(
    'handoffCheckpoint',
    S.handoffRead,
    b,
    [L.m[b]!, L.handoffKey(b, workId)],
    [workId, offset, length],
    true,
  );
  if (reply === null) return null;
  const [token, size, bytes] = reply;
  return { fencingToken: BigInt(token.toString('latin1')), size: Number(size), offset, bytes };
}

/** prune's history retention, bucket by bucket (history-scripts.ts, historyPrune). */
export async function pruneHistory(io: Sender, retention: HistoryPruning): Promise<number> {
  const L = io.layout;
  let removed = 0;
  for (let b = 0; b < L.buckets; b++) {
    let cursor = '0';
    do {
      const [next, n] = await io.runIn<[string, number]>(
        'prune',
        S.historyPrune,
        b,
        [L.m[b]!],
        [cursor, 500, retention.olderThanMs, retention.keepPerItem, L.bases[b]!],
      );
      removed += Number(n);
      cursor = String(next);
    } while (cursor !== '0');
  }
  return removed;
}
