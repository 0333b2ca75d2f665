/**
 * One error hierarchy for the whole project. Callers branch on `code`, never on
 * message text; the code survives every boundary (IPC, HTTP, CLI exit status)
 * because errors are turned into plain data with {@link errorToData} and rebuilt
 * as the same class with {@link errorFromData}.
 */

export const ErrorCode = {
  /** A live lease exists on the work item (also when it is the caller's own). */
  LEASE_HELD: 'LEASE_HELD',
  /** The record's fencing token is no longer the stored one: someone else took over. */
  FENCED: 'FENCED',
  /** The token still matches but the lease ran out (by the server's clock). */
  LEASE_EXPIRED: 'LEASE_EXPIRED',
  /** A holder lost its lease and must stop and write nothing more. */
  LEASE_LOST: 'LEASE_LOST',
  /** An admin action was based on a token the operator saw, and the lease has changed since. */
  CONFLICT: 'CONFLICT',
  /** The named work item (or other object) does not exist. */
  NOT_FOUND: 'NOT_FOUND',
  /** The call was refused before any I/O: bad id, ttl, state, option or type. */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  /** The backend could not be reached, dropped the connection, or timed out. */
  BACKEND_UNAVAILABLE: 'BACKEND_UNAVAILABLE',
  /** The backend's schema is missing or older than this code needs, and migration is off. */
  SCHEMA_MISMATCH: 'SCHEMA_MISMATCH',
  /** The action is not allowed on this connection (for example a read-only console profile). */
  FORBIDDEN: 'FORBIDDEN',
  /**
   * The backend no longer holds the dataset this backend object opened (a Redis restarted without
   * persistence, a flushed or replaced database): no lease it knew exists any more. Final: holders
   * must stop; reopen to start on whatever the backend holds now (docs/durability.md).
   */
  DATASET_LOST: 'DATASET_LOST',
  /**
   * The write ran on the primary but the `durability` option's replicas (or sync) did not confirm it
   * in time: it may or may not survive a failover. Never reported as a success (docs/durability.md).
   */
  NOT_DURABLE: 'NOT_DURABLE',
  /**
   * An operator put the work item on hold (admin.hold, docs/history.md): acquire and claim refuse it
   * until admin.unhold. Waiting does not help, so a waiting claim gives up at once with it.
   */
  ON_HOLD: 'ON_HOLD',
  /** Anything else: a bug or an unexpected server reply. */
  INTERNAL: 'INTERNAL',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export interface ErrorOptions {
  cause?: unknown;
  /** Structured facts for operators and programs (never secrets). */
  details?: Record<string, unknown>;
}

export class WorkleaseError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details;
    this.name = new.target.name;
  }
}

export class LeaseHeldError extends WorkleaseError {
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.LEASE_HELD, message, options);
  }
}
export class FencedError extends WorkleaseError {
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.FENCED, message, options);
  }
}
export class LeaseExpiredError extends WorkleaseError {
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.LEASE_EXPIRED, message, options);
  }
}
export class LeaseLostError extends WorkleaseError {
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.LEASE_LOST, message, options);
  }
}
export class ConflictError extends WorkleaseError {
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.CONFLICT, message, options);
  }
}
export class NotFoundError extends WorkleaseError {
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.NOT_FOUND, message, options);
  }
}
export class InvalidArgumentError extends WorkleaseError {
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.INVALID_ARGUMENT, message, options);
  }
}
/**
 * The backend's client library is not installed. The drivers are optional peer
 * dependencies (a pg-only service should not install PGlite's 27 MB or
 * ioredis), so this is a set-up problem: final, never retried, and the
 * message names the package to install. Crosses IPC/HTTP as INVALID_ARGUMENT.
 */
export class DriverMissingError extends InvalidArgumentError {
  /** The npm package to install, e.g. `pg`. */
  readonly packageName: string;

  constructor(packageName: string, backend: string, options: ErrorOptions = {}) {
    super(
      `the ${backend} backend needs the npm package '${packageName}', which is not installed: run npm install ${packageName}`,
      { ...options, details: { package: packageName, backend, ...options.details } },
    );
    this.packageName = packageName;
  }
}
export class BackendUnavailableError extends WorkleaseError {
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.BACKEND_UNAVAILABLE, message, options);
  }
}
export class SchemaMismatchError extends WorkleaseError {
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.SCHEMA_MISMATCH, message, options);
  }
}
export class ForbiddenError extends WorkleaseError {
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.FORBIDDEN, message, options);
  }
}
export class DatasetLostError extends WorkleaseError {
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.DATASET_LOST, message, options);
  }
}
export class NotDurableError extends WorkleaseError {
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.NOT_DURABLE, message, options);
  }
}
export class OnHoldError extends WorkleaseError {
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.ON_HOLD, message, options);
  }
}
export class InternalError extends WorkleaseError {
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.INTERNAL, message, options);
  }
}

const classes: Record<ErrorCode, new (message: string, options?: ErrorOptions) => WorkleaseError> = {
  LEASE_HELD: LeaseHeldError,
  FENCED: FencedError,
  LEASE_EXPIRED: LeaseExpiredError,
  LEASE_LOST: LeaseLostError,
  CONFLICT: ConflictError,
  NOT_FOUND: NotFoundError,
  INVALID_ARGUMENT: InvalidArgumentError,
  BACKEND_UNAVAILABLE: BackendUnavailableError,
  SCHEMA_MISMATCH: SchemaMismatchError,
  FORBIDDEN: ForbiddenError,
  DATASET_LOST: DatasetLostError,
  NOT_DURABLE: NotDurableError,
  ON_HOLD: OnHoldError,
  INTERNAL: InternalError,
};

/** An error as plain JSON-safe data, for IPC, HTTP and logs. */
export interface ErrorData {
  name: string;
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown> | undefined;
  cause?: ErrorData | undefined;
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(classes, value);
}

/** True when `err` is a worklease error with the given code. */
export function hasCode(err: unknown, code: ErrorCode): err is WorkleaseError {
  return err instanceof WorkleaseError && err.code === code;
}

/**
 * Turns any thrown value into data. Non-worklease errors become INTERNAL with
 * their message; a cause chain is kept to a small depth so a cycle cannot loop.
 */
export function errorToData(err: unknown, depth = 0): ErrorData {
  const base: ErrorData =
    err instanceof WorkleaseError
      ? { name: err.name, code: err.code, message: err.message }
      : {
          name: err instanceof Error ? err.name : 'Error',
          code: ErrorCode.INTERNAL,
          message: err instanceof Error ? err.message : String(err),
        };
  if (err instanceof WorkleaseError && err.details !== undefined) base.details = jsonSafe(err.details);
  const cause = err instanceof Error ? err.cause : undefined;
  if (cause !== undefined && depth < 4) base.cause = errorToData(cause, depth + 1);
  return base;
}

/** Rebuilds the error class named by `data.code`, with its cause chain. */
export function errorFromData(data: ErrorData): WorkleaseError {
  const Cls = classes[data.code] ?? InternalError;
  const options: ErrorOptions = {};
  if (data.details !== undefined) options.details = data.details;
  if (data.cause !== undefined) options.cause = errorFromData(data.cause);
  return new Cls(data.message, options);
}

/** Details may hold bigints (tokens) and dates; JSON carries them as strings. */
function jsonSafe(details: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(details)) {
    out[k] = typeof v === 'bigint' ? v.toString() : v instanceof Date ? v.toISOString() : v;
  }
  return out;
}
