/**
 * Turning result rows into contract types, and the opaque cursors of `list` and
 * `changes`. `pg` returns int8 and xid8 as strings, PGlite returns int8 as a
 * number (or a bigint when it does not fit), so every integer goes through
 * {@link toBigInt}. Nothing here does I/O.
 */
import { InternalError, InvalidArgumentError } from '../../lease/errors.ts';
import type { AuditEntry, LeaseEnd, LeaseInfo, PredecessorEnd } from '../../lease/types.ts';
import { MAX_ID_LENGTH } from '../../lease/validate.ts';
import type { Row } from './client.ts';

export function toBigInt(value: unknown, column: string): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value)))
    return BigInt(value);
  throw new InternalError(`unexpected value in column ${column}: ${typeof value}`);
}

export function toDate(value: unknown, column: string): Date {
  if (value instanceof Date) return value;
  throw new InternalError(`unexpected value in column ${column}: ${typeof value}`);
}

export function toDateOrNull(value: unknown, column: string): Date | null {
  return value === null || value === undefined ? null : toDate(value, column);
}

function toText(value: unknown, column: string): string {
  if (typeof value === 'string') return value;
  throw new InternalError(`unexpected value in column ${column}: ${typeof value}`);
}

/** bytea as a plain Uint8Array view (pg hands out Buffers; callers compare with Uint8Array). */
export function toBytes(value: unknown): Uint8Array | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Uint8Array) {
    return value.constructor === Uint8Array
      ? value
      : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  }
  throw new InternalError(`unexpected bytea value: ${typeof value}`);
}

export function toLeaseInfo(row: Row): LeaseInfo {
  return {
    workId: toText(row.work_id, 'work_id'),
    holderId: toText(row.holder_id, 'holder_id'),
    fencingToken: toBigInt(row.token, 'token'),
    expiresAt: toDate(row.expires_at, 'expires_at'),
    ttlMs: Number(row.ttl_ms),
    stepId: row.step_id === null || row.step_id === undefined ? null : toText(row.step_id, 'step_id'),
    acquiredAt: toDate(row.acquired_at, 'acquired_at'),
    renewedAt: toDateOrNull(row.renewed_at, 'renewed_at'),
    checkpointedAt: toDateOrNull(row.checkpointed_at, 'checkpointed_at'),
    releasedAt: toDateOrNull(row.released_at, 'released_at'),
    checkpointSize: row.state_size === null || row.state_size === undefined ? null : Number(row.state_size),
    cleanHandoff: row.clean_handoff === true,
    predecessorEnd: toText(row.predecessor_end, 'predecessor_end') as PredecessorEnd,
    ended: row.ended === null || row.ended === undefined ? null : (toText(row.ended, 'ended') as LeaseEnd),
    version: toBigInt(row.version, 'version'),
  };
}

export function toAuditEntry(row: Row): AuditEntry {
  return {
    id: String(row.id),
    at: toDate(row.at, 'at'),
    action: 'force-release',
    workId: toText(row.work_id, 'work_id'),
    operator: toText(row.operator, 'operator'),
    reason: toText(row.reason, 'reason'),
    oldHolderId: toText(row.old_holder_id, 'old_holder_id'),
    oldToken: toBigInt(row.old_token, 'old_token'),
    newToken: toBigInt(row.new_token, 'new_token'),
  };
}

// --- cursors ---------------------------------------------------------------

function encodeId(id: string): string {
  return Buffer.from(id, 'utf8').toString('base64url');
}

function decodeId(text: string, what: string): string {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new InvalidArgumentError(`${what} is not a valid cursor`);
  const bytes = Buffer.from(text, 'base64url');
  const id = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  // Round-trip check: anything not produced by encodeId is refused.
  if (encodeId(id) !== text || id.length > MAX_ID_LENGTH)
    throw new InvalidArgumentError(`${what} is not a valid cursor`);
  return id;
}

const LIST_PREFIX = 'l1:';

export function encodeListCursor(lastWorkId: string): string {
  return LIST_PREFIX + encodeId(lastWorkId);
}

export function decodeListCursor(cursor: string): string {
  if (!cursor.startsWith(LIST_PREFIX) || cursor.length === LIST_PREFIX.length) {
    throw new InvalidArgumentError('options.cursor is not a cursor from a previous list() page');
  }
  return decodeId(cursor.slice(LIST_PREFIX.length), 'options.cursor');
}

/**
 * A change-feed position. `from` is the lower bound of the scan (an xmin seen by
 * an earlier poll). While a scan is paged, `scanXmin` is the xmin of the scan's
 * first page and `after` the last (change_xid, work_id) delivered.
 */
export interface ChangeCursor {
  from: bigint;
  page: { scanXmin: bigint; afterXid: bigint; afterWorkId: string } | null;
}

const XID = '(0|[1-9][0-9]{0,19})';
const CHANGE_CURSOR = new RegExp(`^pg1:${XID}(?::${XID}:${XID}:([A-Za-z0-9_-]+))?$`);
const MAX_XID8 = 18_446_744_073_709_551_615n;

function xid(text: string): bigint {
  const v = BigInt(text);
  if (v > MAX_XID8) throw new InvalidArgumentError('options.cursor is not a valid change cursor');
  return v;
}

export function encodeChangeCursor(c: ChangeCursor): string {
  const head = `pg1:${c.from}`;
  return c.page === null
    ? head
    : `${head}:${c.page.scanXmin}:${c.page.afterXid}:${encodeId(c.page.afterWorkId)}`;
}

export function decodeChangeCursor(cursor: string): ChangeCursor {
  const m = CHANGE_CURSOR.exec(cursor);
  if (m === null) {
    throw new InvalidArgumentError(
      'options.cursor is not a change cursor of this backend (from changeCursor())',
    );
  }
  const [, from, scanXmin, afterXid, workId] = m;
  if (scanXmin === undefined || afterXid === undefined || workId === undefined) {
    return { from: xid(from!), page: null };
  }
  return {
    from: xid(from!),
    page: {
      scanXmin: xid(scanXmin),
      afterXid: xid(afterXid),
      afterWorkId: decodeId(workId, 'options.cursor'),
    },
  };
}

/**
 * The smallest string above every string that starts with `prefix`, in code
 * point order (the "C" collation of work_id), or undefined when there is none
 * (the prefix is all U+10FFFF). Lets a prefix filter use the primary key range.
 */
export function prefixUpperBound(prefix: string): string | undefined {
  const cps = Array.from(prefix, (ch) => ch.codePointAt(0)!);
  while (cps.length > 0) {
    const last = cps.pop()!;
    if (last < 0x10ffff) {
      // Skip the surrogate range: those code points cannot occur in well-formed text.
      cps.push(last + 1 === 0xd800 ? 0xe000 : last + 1);
      return String.fromCodePoint(...cps);
    }
  }
  return undefined;
}
