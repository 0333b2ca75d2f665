/**
 * The Redis backend's admin calls: force-release and request-release (one script each, with their
 * audit entries), the audit log, prune, paged checkpoint reads, and the server's clock and version.
 */
import { InternalError, NotFoundError } from '../../lease/errors.ts';
import type { AuditEntry, LeaseInfo, StatePage } from '../../lease/types.ts';
import { forceConflict, requestConflict } from '../common.ts';
import { readHold } from './history.ts';
import { catchUp } from './indexes.ts';
import { compareStreamIds } from './layout.ts';
import { fieldMap, parsePacked } from './packed.ts';
import { S, type Sender } from './send.ts';

export async function forceRelease(
  io: Sender,
  workId: string,
  expectedToken: bigint,
  operator: string,
  reason: string,
  batchId: string | null,
): Promise<LeaseInfo> {
  const L = io.layout;
  const b = L.bucketOf(workId);
  const reply = await io.runIn<string | unknown[]>(
    'forceRelease',
    S.forceRelease,
    b,
    [L.m[b]!, L.chg[b]!, L.aud[b]!, L.historyKey(b, workId)],
    [workId, expectedToken.toString(), operator, reason, batchId ?? ''],
  );
  if (typeof reply === 'string') {
    if (io.durable) await io.confirm('forceRelease', b);
    const info = parsePacked(workId, reply);
    if (info === null) throw new InternalError(`force-release of '${workId}' returned no lease`);
    return readHold(io, 'forceRelease', info);
  }
  switch (reply[0]) {
    case 'NOTFOUND':
      throw new NotFoundError(`work item '${workId}' has no lease`, { details: { workId } });
    case 'CONFLICT': {
      const ended = reply[2] === 'released' || reply[2] === 'force-released' ? String(reply[2]) : null;
      throw forceConflict(workId, expectedToken, BigInt(String(reply[1])), String(reply[3] ?? ''), ended);
    }
    default:
      throw new InternalError(`unexpected reply from the Redis force-release script: ${String(reply[0])}`);
  }
}

export async function requestRelease(
  io: Sender,
  workId: string,
  expectedToken: bigint,
  operator: string,
  reason: string,
): Promise<LeaseInfo> {
  const L = io.layout;
  const b = L.bucketOf(workId);
  const reply = await io.runIn<string | unknown[]>(
    'requestRelease',
    S.requestRelease,
    b,
    [L.m[b]!, L.chg[b]!, L.aud[b]!, L.historyKey(b, workId)],
    [workId, expectedToken.toString(), operator, reason, JSON.stringify(reason)],
  );
  if (typeof reply === 'string') {
    const info = parsePacked(workId, reply);
    if (info === null) throw new InternalError(`request-release of '${workId}' returned no lease`);
    return readHold(io, 'requestRelease', info);
  }
  switch (reply[0]) {
    case 'NOTFOUND':
      throw new NotFoundError(`work item '${workId}' has no lease to request the release of`, {
        details: { workId },
      });
    case 'CONFLICT':
      throw requestConflict(
        workId,
        expectedToken,
        BigInt(String(reply[1])),
        String(reply[3]),
        String(reply[2]),
      );
    default:
      throw new InternalError(`unexpected reply from the Redis request-release script: ${String(reply[0])}`);
  }
}

export async function audit(io: Sender, workId: string | undefined, limit: number): Promise<AuditEntry[]> {
  const L = io.layout;
  type Raw = Array<[string, string[]]>;
  const toEntry = (bucket: number, [id, fields]: [string, string[]]): AuditEntry => {
    const m = fieldMap(fields);
    const at = m.get('at');
    const action = m.get('action');
    // A recovery's entry (recover.ts) names no work item; its reason says which bucket it brought back.
    const reason = m.get('reason') ?? '';
    return {
      id: `b${bucket}:${id}`,
      at: new Date(at === undefined ? Number(id.split('-')[0]) : Number(at)),
      action:
        action === 'request-release' || action === 'recover' || action === 'hold' || action === 'unhold'
          ? action
          : 'force-release',
      workId: m.get('workId') ?? '',
      operator: m.get('operator') ?? '',
      reason:
        action === 'recover'
          ? `${reason} [recovered ${m.get('bucket') === 'meta' ? 'the meta key' : `bucket b${bucket}`}]`
          : reason,
      oldHolderId: m.get('old_holder') ?? '',
      oldToken: BigInt(m.get('old_token') ?? '0'),
      newToken: BigInt(m.get('new_token') ?? '0'),
      batchId: m.get('batch') ?? null,
    };
  };
  if (workId !== undefined) {
    // One bucket's stream holds other work items' entries too: page back through it until enough match.
    const b = L.bucketOf(workId);
    const out: AuditEntry[] = [];
    let end = '+';
    for (;;) {
      const page = await io.send<Raw>('audit', 'xrevrange', [L.aud[b]!, end, '-', 'COUNT', 500]);
      for (const raw of page) {
        const entry = toEntry(b, raw);
        if (entry.workId === workId) out.push(entry);
        if (out.length >= limit) return out;
      }
      if (page.length < 500) return out;
      end = `(${page[page.length - 1]![0]}`;
    }
  }
  const pages = await Promise.all(
    L.aud.map((key) => io.send<Raw>('audit', 'xrevrange', [key, '+', '-', 'COUNT', limit])),
  );
  const all: Array<{ bucket: number; raw: [string, string[]] }> = [];
  pages.forEach((page, bucket) => {
    for (const raw of page) all.push({ bucket, raw });
  });
  all.sort((x, y) => compareStreamIds(y.raw[0], x.raw[0]) || x.bucket - y.bucket);
  return all.slice(0, limit).map(({ bucket, raw }) => toEntry(bucket, raw));
}

export async function prune(io: Sender, olderThanMs: number, limit: number): Promise<number> {
  const L = io.layout;
  let total = 0;
  // Bucket by bucket, so the total never exceeds `limit`.
  for (let b = 0; b < L.buckets && total < limit; b++) {
    await catchUp(io, 'prune', b);
    const n = await io.runIn<number>(
      'prune',
      S.prune,
      b,
      [L.exp[b]!, L.ids[b]!, L.chg[b]!, L.m[b]!, L.hold[b]!],
      [olderThanMs, limit - total, L.statePrefixes[b]!],
    );
    total += Number(n);
  }
  return total;
}

export async function readState(
  io: Sender,
  workId: string,
  offset: number,
  length: number,
): Promise<StatePage | null> {
  const L = io.layout;
  const b = L.bucketOf(workId);
  const reply = await io.runIn<[Buffer, number | null, Buffer] | null>(
    'readState',
    S.readState,
    b,
    [L.m[b]!, L.stateKey(b, workId)],
    [workId, offset, length],
    true,
  );
  if (reply === null) return null;
  const [token, size, bytes] = reply;
  return { fencingToken: BigInt(token.toString('latin1')), size: size ?? null, offset, bytes };
}

export async function serverTime(io: Sender): Promise<Date> {
  const [s, us] = await io.send<[string, string]>('serverTime', 'time', []);
  return new Date(Number(s) * 1000 + Math.floor(Number(us) / 1000));
}

export async function serverVersion(io: Sender): Promise<string> {
  const info = String(await io.send<string>('serverVersion', 'info', ['server']));
  return /^redis_version:(.+)$/m.exec(info)?.[1]?.trim() ?? '';
}
