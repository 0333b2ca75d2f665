/**
 * Reading the packed strings of the Redis layout (layout.ts) without splitting them: a lease, a
 * release request, an audit entry's fields. Nothing here does I/O.
 */
import type { LeaseInfo, ReleaseRequest } from '../../lease/types.ts';

/** The number written in decimal digits in s[from, to); NaN when empty or not all digits. */
export function digits(s: string, from: number, to: number): number {
  if (from >= to) return Number.NaN;
  let n = 0;
  for (let i = from; i < to; i++) {
    const d = s.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return Number(s.slice(from, to));
    n = n * 10 + d;
  }
  return n;
}

/** A token or version: exact (via the string) beyond 2^53. */
function bigint(s: string, from: number, to: number): bigint {
  if (from === to) return 0n;
  return to - from < 16 ? BigInt(digits(s, from, to)) : BigInt(s.slice(from, to));
}

function when(s: string, from: number, to: number): Date | null {
  return from === to ? null : new Date(digits(s, from, to));
}

function word<T extends string>(s: string, from: number, to: number, words: readonly T[]): T | null {
  for (const w of words) if (to - from === w.length && s.startsWith(w, from)) return w;
  return null;
}
const PRED_WORDS = ['none', 'released', 'expired', 'force-released'] as const;
const END_WORDS = ['released', 'force-released'] as const;

/** Where each field of the lease being parsed starts (module-level: parsing allocates no index). */
const FIELD_STARTS = new Array<number>(15).fill(0);
/** Where field k of the lease being parsed ends. */
const end = (k: number): number => FIELD_STARTS[k + 1]! - 1;

/**
 * Parses a packed lease (layout.ts: the INFO_FIELDS values joined by LF), starting after the
 * `skip`-th LF of `s` (change entries put kind and workId first); null for a tombstone or anything
 * that is not a whole lease. Reads fields in place: a console loads 100 000 of these at once, and
 * splitting into 14 strings made parsing and its garbage the biggest cost of a snapshot.
 */
export function parsePacked(workId: string, s: string, skip = 0): LeaseInfo | null {
  let p = 0;
  for (let i = 0; i < skip; i++) p = s.indexOf('\n', p) + 1;
  // Field k is s[at[k], at[k + 1] - 1).
  const at = FIELD_STARTS;
  at[0] = p;
  for (let k = 1; k < 14; k++) {
    const lf = s.indexOf('\n', at[k - 1]!);
    if (lf < 0) return null;
    at[k] = lf + 1;
  }
  // After the version, the optional release request (layout.ts): LF at LF operator LF quoted reason.
  const rq = s.indexOf('\n', at[13]!);
  at[14] = (rq < 0 ? s.length : rq) + 1;
  const releaseRequest = rq < 0 ? null : parseRequest(s, rq);
  if (releaseRequest === undefined) return null;
  return {
    workId,
    holderId: s.slice(at[0]!, end(0)),
    fencingToken: bigint(s, at[1]!, end(1)),
    expiresAt: new Date(digits(s, at[2]!, end(2))),
    ttlMs: digits(s, at[3]!, end(3)),
    stepId: at[4] === end(4) ? null : s.slice(at[4]!, end(4)),
    acquiredAt: new Date(digits(s, at[5]!, end(5))),
    renewedAt: when(s, at[6]!, end(6)),
    checkpointedAt: when(s, at[7]!, end(7)),
    releasedAt: when(s, at[8]!, end(8)),
    checkpointSize: at[9] === end(9) ? null : digits(s, at[9]!, end(9)),
    cleanHandoff: s.charCodeAt(at[10]!) === 0x31,
    predecessorEnd: word(s, at[11]!, end(11), PRED_WORDS) ?? 'none',
    ended: word(s, at[12]!, end(12), END_WORDS),
    version: bigint(s, at[13]!, end(13)),
    releaseRequest,
  };
}

/**
 * The release request in `s` from the LF at `from` on: LF at LF operator LF reason (a JSON string
 * literal). Undefined when malformed.
 */
export function parseRequest(s: string, from: number): ReleaseRequest | undefined {
  const a = s.indexOf('\n', from + 1);
  const b = a < 0 ? -1 : s.indexOf('\n', a + 1);
  if (b < 0) return undefined;
  const at = digits(s, from + 1, a);
  if (!Number.isFinite(at)) return undefined;
  try {
    const reason: unknown = JSON.parse(s.slice(b + 1));
    if (typeof reason !== 'string') return undefined;
    return { at: new Date(at), operator: s.slice(a + 1, b), reason };
  } catch {
    return undefined;
  }
}

export function fieldMap(fields: readonly string[]): Map<string, string> {
  const m = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) m.set(fields[i]!, fields[i + 1]!);
  return m;
}

export const iso = (ms: unknown): string => new Date(Number(ms)).toISOString();
