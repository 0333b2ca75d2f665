/**
 * Turning result rows into contract types, and the opaque cursors of `list` and
 * `changes`. In parsed rows `pg` returns int8 and xid8 as strings, PGlite
 * returns int8 as a number (or a bigint when it does not fit), so every integer
 * goes through {@link toBigInt}; text rows (LeaseInfo) are the same on both.
 * Nothing here does I/O.
 */
import { InternalError, InvalidArgumentError } from '../../lease/errors.ts';
import type {
  AuditAction,
  AuditEntry,
  LeaseEnd,
  LeaseInfo,
  PredecessorEnd,
  ReleaseRequest,
} from '../../lease/types.ts';
import { MAX_ID_LENGTH } from '../../lease/validate.ts';
import type { Row, SqlNotice, TextRow } from './client.ts';

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

function required(value: string | null | undefined, column: string): string {
  if (typeof value === 'string') return value;
  throw new InternalError(`unexpected ${value === null ? 'NULL' : 'missing value'} in column ${column}`);
}

/** A nullable column; undefined means the row is shorter than the statement promised. */
function optional(value: string | null | undefined, column: string): string | null {
  return value === null ? null : required(value, column);
}

/** A timestamp selected as epoch milliseconds (see `epochMs` in statements.ts). */
function epochDate(value: string | null | undefined, column: string): Date {
  const ms = Number(required(value, column));
  if (!Number.isSafeInteger(ms)) throw new InternalError(`unexpected value in column ${column}: ${value}`);
  return new Date(ms);
}

function epochDateOrNull(value: string | null | undefined, column: string): Date | null {
  return optional(value, column) === null ? null : epochDate(value, column);
}

/**
 * The LeaseInfo in `r` from position `at` on: the INFO_COLUMNS of statements.ts,
 * in that order, as text (timestamps as epoch milliseconds). Every statement that
 * returns a LeaseInfo (get, list, changes, forceRelease) selects the same columns
 * and comes through here, so they all agree to the millisecond.
 */
export function leaseInfoFromText(r: TextRow, at: number): LeaseInfo {
  const size = optional(r[at + 10], 'state_size');
  const requestedAt = epochDateOrNull(r[at + 18], 'release_requested_at');
  const heldAt = epochDateOrNull(r[at + 21], 'held_at');
  return {
    workId: required(r[at], 'work_id'),
    holderId: required(r[at + 1], 'holder_id'),
    fencingToken: BigInt(required(r[at + 2], 'token')),
    expiresAt: epochDate(r[at + 3], 'expires_at'),
    ttlMs: Number(required(r[at + 4], 'ttl_ms')),
    stepId: optional(r[at + 5], 'step_id'),
    acquiredAt: epochDate(r[at + 6], 'acquired_at'),
    renewedAt: epochDateOrNull(r[at + 7], 'renewed_at'),
    checkpointedAt: epochDateOrNull(r[at + 8], 'checkpointed_at'),
    releasedAt: epochDateOrNull(r[at + 9], 'released_at'),
    checkpointSize: size === null ? null : Number(size),
    cleanHandoff: required(r[at + 11], 'clean_handoff') === 't',
    predecessorEnd: required(r[at + 12], 'predecessor_end') as PredecessorEnd,
    ended: optional(r[at + 13], 'ended') as LeaseEnd | null,
    version: BigInt(required(r[at + 14], 'version')),
    handoffs: {
      acquisitions: Number(required(r[at + 15], 'acquisitions')),
      releases: Number(required(r[at + 16], 'releases')),
      forceReleases: Number(required(r[at + 17], 'force_releases')),
    },
    releaseRequest:
      requestedAt === null
        ? null
        : {
            at: requestedAt,
            operator: required(r[at + 19], 'release_requested_by'),
            reason: required(r[at + 20], 'release_request_reason'),
          },
    hold:
      heldAt === null
        ? null
        : {
            at: heldAt,
            operator: required(r[at + 22], 'held_by'),
            reason: required(r[at + 23], 'hold_reason'),
          },
  };
}

/**
 * The release request a checkpoint / renew returns in its `rq` column (statements.ts): NULL when
 * there is none, else JSON [at (epoch ms), operator, reason].
 */
export function releaseRequestFromRow(row: Row): ReleaseRequest | undefined {
  if (row.rq === null || row.rq === undefined) return undefined;
  const parsed: unknown = JSON.parse(toText(row.rq, 'rq'));
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 3 ||
    !Number.isSafeInteger(parsed[0]) ||
    typeof parsed[1] !== 'string' ||
    typeof parsed[2] !== 'string'
  ) {
    throw new InternalError('unexpected value in column rq');
  }
  return { at: new Date(parsed[0] as number), operator: parsed[1], reason: parsed[2] };
}

/**
 * The stored lease a refusal's DETAIL carries (migrations 8 and 9): JSON with the token (a decimal
 * string), the expiry (epoch ms) and one more text field, `key`; undefined when it does not parse.
 */
function storedLease(
  detail: unknown,
  key: string,
): { token: string; expiresAt: Date; text: string } | undefined {
  if (typeof detail !== 'string') return undefined;
  let d: Record<string, unknown>;
  try {
    d = JSON.parse(detail) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const text = d?.[key];
  if (typeof d?.token !== 'string' || !Number.isSafeInteger(d.expires_at) || typeof text !== 'string') {
    return undefined;
  }
  return { token: d.token, expiresAt: new Date(d.expires_at as number), text };
}

/** What a refused acquire's notice reports of the live lease (migration 9, lease_held). */
export interface HeldNotice {
  readonly token: string;
  readonly expiresAt: Date;
  readonly holder: string;
}

/** The SQLSTATE of lease_held's NOTICE (migration 9). */
export const HELD_SQLSTATE = 'WL002';

/** The live lease a refused acquire's NOTICE carries, or undefined for any other notice. */
export function heldNotice(n: SqlNotice): HeldNotice | undefined {
  if (n.code !== HELD_SQLSTATE) return undefined;
  const s = storedLease(n.detail, 'holder');
  return s === undefined ? undefined : { token: s.token, expiresAt: s.expiresAt, holder: s.text };
}

/** What a refused checkpoint / renew / release reports of the stored row (migration 8, lease_refused). */
export interface RefusedRow {
  readonly token: string;
  readonly expires_at: Date;
  readonly last_op: string;
}

/** The SQLSTATE of lease_refused (migration 8). */
export const REFUSED_SQLSTATE = 'WL001';

/**
 * The stored row a lease call's refusal carries (the DETAIL of SQLSTATE WL001, raised by
 * lease_refused), or undefined when `err` is any other error. `err` is what the SqlClient threw:
 * the classified error, its `cause` the client's own error (`pg` and PGlite both set `code` and
 * `detail`).
 */
export function refusedRow(err: unknown): RefusedRow | undefined {
  const cause =
    err instanceof Error ? (err.cause as { code?: unknown; detail?: unknown } | undefined) : undefined;
  if (cause?.code !== REFUSED_SQLSTATE) return undefined;
  const s = storedLease(cause.detail, 'last_op');
  if (s === undefined) {
    throw new InternalError(`a lease call's refusal came without its stored row (${String(cause.detail)})`, {
      cause: err,
    });
  }
  return { token: s.token, expires_at: s.expiresAt, last_op: s.text };
}

const AUDIT_ACTIONS: readonly AuditAction[] = ['force-release', 'request-release', 'hold', 'unhold'];

export function toAuditEntry(row: Row): AuditEntry {
  return {
    id: String(row.id),
    at: toDate(row.at, 'at'),
    action: AUDIT_ACTIONS.find((a) => a === row.action) ?? 'force-release',
    workId: toText(row.work_id, 'work_id'),
    operator: toText(row.operator, 'operator'),
    reason: toText(row.reason, 'reason'),
    oldHolderId: toText(row.old_holder_id, 'old_holder_id'),
    oldToken: toBigInt(row.old_token, 'old_token'),
    newToken: toBigInt(row.new_token, 'new_token'),
    batchId: row.batch_id === null || row.batch_id === undefined ? null : String(row.batch_id),
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

/**
 * The parameters of the `changes` statement for a cursor: lower bound, keyset start, limit.
 *
 * The keyset start of a scan's first page is (from, ''), not (0, ''): both select the same rows
 * (`change_xid >= from`, and no work id is empty), but a B-tree scan starts at the row
 * comparison's bound, so with (0, '') an idle poll walked the whole change index from its
 * left edge to return nothing — 386 index pages at 100 000 leases, 3 pages with (from, '').
 * The poll now costs the same at any fleet size (test/backends/postgres.test.ts counts it).
 */
export function changeScanParams(c: ChangeCursor, limit: number): [string, string, string, number] {
  return [c.from.toString(), (c.page?.afterXid ?? c.from).toString(), c.page?.afterWorkId ?? '', limit + 1];
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
