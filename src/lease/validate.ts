/**
 * Argument checks shared by every backend. They run before any I/O, so a bad
 * call writes nothing and costs no round trip. Each throws InvalidArgumentError
 * naming the argument and what was wrong with it.
 */
import { InvalidArgumentError } from './errors.ts';
import type { LeaseRecord } from './types.ts';

/** Longest work id, holder id or step id, in UTF-16 code units. */
export const MAX_ID_LENGTH = 512;
/** Longest ttl accepted: 2^31-1 ms (about 24.8 days). Longer leases defeat the point of leasing. */
export const MAX_TTL_MS = 2_147_483_647;
export const DEFAULT_MAX_STATE_BYTES = 1024 * 1024;
export const MAX_MAX_STATE_BYTES = 64 * 1024 * 1024;

// Control characters (C0, DEL, C1) and the Unicode line/paragraph separators:
// they break logs, terminals and the CLI's one-line output.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number' && Number.isNaN(value)) return 'NaN';
  if (typeof value === 'string') return `a string of length ${value.length}`;
  return typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`;
}

/** A work id, holder id or step id: a non-empty string of at most 512 characters without control characters. */
export function checkId(name: string, value: unknown): string {
  if (typeof value !== 'string')
    throw new InvalidArgumentError(`${name} must be a string, got ${describe(value)}`);
  if (value.length === 0) throw new InvalidArgumentError(`${name} must not be empty`);
  if (value.length > MAX_ID_LENGTH) {
    throw new InvalidArgumentError(
      `${name} is ${value.length} characters long; the limit is ${MAX_ID_LENGTH}`,
    );
  }
  if (CONTROL.test(value)) throw new InvalidArgumentError(`${name} must not contain control characters`);
  if (!value.isWellFormed())
    throw new InvalidArgumentError(`${name} must be well-formed Unicode (lone surrogate)`);
  return value;
}

// Unicode format characters (\p{Cf}): bidi embeddings, overrides, isolates
// and marks (U+202A-E, U+2066-9, U+200E/F, U+061C), zero-width characters
// (U+200B-D, U+2060), the BOM (U+FEFF), the soft hyphen, tag characters. They
// are invisible or reorder what is shown, so two different ids could look
// the same in the console or a terminal: a new id must not contain them.
const INVISIBLE = /\p{Cf}/u;

/**
 * An id that is being created (acquire, claim): {@link checkId}, and no
 * invisible or direction-changing character. Lookups (get, force-release,
 * readState) take {@link checkId} alone, so an id stored before this rule can
 * still be inspected and force-released; the console shows such ids escaped.
 */
export function checkNewId(name: string, value: unknown): string {
  const id = checkId(name, value);
  const bad = INVISIBLE.exec(id);
  if (bad !== null) {
    const code = bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
    throw new InvalidArgumentError(
      `${name} must not contain invisible or bidi characters (found U+${code} at index ${bad.index})`,
    );
  }
  return id;
}

/** An operator name for the audit log: {@link checkText} on one line, no control or invisible characters. */
export function checkOperator(name: string, value: unknown): string {
  const text = checkText(name, value, 200);
  if (CONTROL.test(text) || INVISIBLE.test(text)) {
    throw new InvalidArgumentError(`${name} must not contain control or invisible characters`);
  }
  return text;
}

/** A bulk action's batch id ({@link ForceReleaseOptions.batchId}): 1..64 of `A-Z a-z 0-9 _ -`. */
export const BATCH_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** A batch id, or undefined when none was given. */
export function checkBatchId(name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string')
    throw new InvalidArgumentError(`${name} must be a string, got ${describe(value)}`);
  if (!BATCH_ID_PATTERN.test(value)) {
    throw new InvalidArgumentError(
      `${name} must be 1 to 64 characters of A-Z, a-z, 0-9, '_' and '-' (got ${value.length} characters)`,
    );
  }
  return value;
}

/**
 * A ttl in milliseconds: a positive finite number up to {@link MAX_TTL_MS}.
 * Fractions are rounded up to the next whole millisecond (the backends' resolution).
 */
export function checkTtl(value: unknown, name = 'ttlMs'): number {
  if (typeof value !== 'number')
    throw new InvalidArgumentError(`${name} must be a number, got ${describe(value)}`);
  if (!Number.isFinite(value) || value <= 0) {
    throw new InvalidArgumentError(
      `${name} must be a positive finite number of milliseconds, got ${describe(value)}`,
    );
  }
  if (value > MAX_TTL_MS)
    throw new InvalidArgumentError(`${name} must be at most ${MAX_TTL_MS} ms, got ${value}`);
  return Math.ceil(value);
}

export function checkState(value: unknown, maxBytes: number): Uint8Array {
  if (!(value instanceof Uint8Array)) {
    throw new InvalidArgumentError(`state must be a Uint8Array (or Buffer), got ${describe(value)}`);
  }
  if (value.byteLength > maxBytes) {
    throw new InvalidArgumentError(`state is ${value.byteLength} bytes; the limit is ${maxBytes} bytes`);
  }
  return value;
}

/** A positive bigint token (tokens start at 1). */
export function checkToken(value: unknown, name = 'fencingToken'): bigint {
  if (typeof value !== 'bigint')
    throw new InvalidArgumentError(`${name} must be a bigint, got ${describe(value)}`);
  if (value <= 0n || value > 9_223_372_036_854_775_807n) {
    throw new InvalidArgumentError(`${name} must be between 1 and 2^63-1, got ${value}`);
  }
  return value;
}

/** A record as returned by acquire/renew; only the fields the backend uses are checked deeply. */
export function checkRecord(value: unknown): LeaseRecord {
  if (typeof value !== 'object' || value === null) {
    throw new InvalidArgumentError(`record must be a LeaseRecord, got ${describe(value)}`);
  }
  const r = value as Record<string, unknown>;
  checkId('record.workId', r.workId);
  checkId('record.holderId', r.holderId);
  checkToken(r.fencingToken, 'record.fencingToken');
  if (!(r.expiresAt instanceof Date) || Number.isNaN(r.expiresAt.getTime())) {
    throw new InvalidArgumentError('record.expiresAt must be a valid Date');
  }
  return value as LeaseRecord;
}

export function checkText(name: string, value: unknown, maxLength = 2000): string {
  if (typeof value !== 'string')
    throw new InvalidArgumentError(`${name} must be a string, got ${describe(value)}`);
  if (value.trim().length === 0) throw new InvalidArgumentError(`${name} must not be empty`);
  if (value.length > maxLength) {
    throw new InvalidArgumentError(`${name} is ${value.length} characters long; the limit is ${maxLength}`);
  }
  return value;
}

/** An integer in [min, max], or the default when undefined. */
export function checkInt(name: string, value: unknown, min: number, max: number, dflt: number): number {
  if (value === undefined) return dflt;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(
      `${name} must be an integer from ${min} to ${max}, got ${describe(value)}`,
    );
  }
  return value;
}

export function checkOptionalPrefix(name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string')
    throw new InvalidArgumentError(`${name} must be a string, got ${describe(value)}`);
  if (value.length > MAX_ID_LENGTH) throw new InvalidArgumentError(`${name} is longer than ${MAX_ID_LENGTH}`);
  if (CONTROL.test(value)) throw new InvalidArgumentError(`${name} must not contain control characters`);
  return value;
}

/** Options objects: refuse non-objects and unknown keys so a typo is not silently ignored. */
export function checkOptions<T extends object>(
  name: string,
  value: unknown,
  allowed: readonly string[],
): Partial<T> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError(`${name} must be an object, got ${describe(value)}`);
  }
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      throw new InvalidArgumentError(`${name} has unknown option '${key}' (known: ${allowed.join(', ')})`);
    }
  }
  return value as Partial<T>;
}
