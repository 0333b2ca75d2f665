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
import { fieldMap, parsePacked } from './packed.ts';
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

/** A history page's `before`: a stream id this backend wrote (`ms-seq`). */
function checkEntryId(before: string): string {
  if (!/^\d{1,20}-\d{1,20}$/.test(before)) {
    throw new InvalidArgumentError(
      `options.before is not the id of a history entry of this backend: '${before}'`,
    );
  }
  return before;
}

function toEntry([id, fields]: [string, string[]]): HistoryEntry {
  const m = fieldMap(fields);
  const kind = m.get('k') as HistoryKind;
  if (!KINDS.includes(kind)) throw new InternalError(`unknown history entry kind on Redis: ${String(kind)}`);
  const entry: HistoryEntry = {
    id,
    kind,
    at: new Date(Number(m.get('a'))),
    holderId: m.get('h') ?? '',
    token: BigInt(m.get('t') || '0'),
  };
  const operator = m.get('o');
  if (operator !== undefined) {
    entry.operator = operator;
    entry.reason = m.get('r') ?? '';
  }
  const bytes = m.get('b');
  if (bytes !== undefined && bytes !== '') entry.checkpointBytes = Number(bytes);
  return entry;
}

export async function history(
  io: Sender,
  workId: string,
  before: string | null,
  limit: number,
): Promise<HistoryEntry[]> {
  const L = io.layout;
  const end = before === null ? '+' : `(${checkEntryId(before)}`;
  const key = L.historyKey(L.bucketOf(workId), workId);
  const page = await io.send<Array<[string, string[]]>>('history', 'xrevrange', [
    key,
    end,
    '-',
    'COUNT',
    limit,
  ]);
  return page.map(toEntry);
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
