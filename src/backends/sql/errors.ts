/**
 * One table that decides, for every error a Postgres client can raise, whether
 * the backend was unavailable (the caller may retry: connection lost, server
 * shutting down, timeout, overload) or the failure is final. Shared by `pg` and
 * PGlite, which both report the server's SQLSTATE in `err.code`.
 */
import {
  BackendUnavailableError,
  ForbiddenError,
  InternalError,
  NotFoundError,
  SchemaMismatchError,
  WorkleaseError,
} from '../../lease/errors.ts';
import { type ConnectReason, ERRNO_REASON, SOCKET_ERRNOS, socketErrno } from '../errno.ts';
import { migrateCommandFor } from '../url.ts';

/**
 * `unknown-database` and `auth` are final (retrying with the same URL cannot
 * help) and say what the operator has to fix; the message keeps the server's
 * own words (`role "x" does not exist`, `password authentication failed …`).
 */
type Verdict = 'unavailable' | 'schema' | 'unknown-database' | 'auth' | 'privilege' | 'tls' | 'internal';

/**
 * TLS that does not fit: the client asks for TLS from a server without it, or the server's
 * certificate is not one the client trusts (Node's codes). Final for this URL, so not 'unavailable'
 * alone: the error says which side to change ({@link TLS_HINT}).
 */
const TLS_MESSAGES = [
  'The server does not support SSL connections',
  'There was an error establishing an SSL connection',
];
const TLS_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERR_SSL_WRONG_VERSION_NUMBER',
]);
const TLS_HINT =
  'TLS does not fit: without TLS on the server use sslmode=disable (or drop ssl=true); for a certificate the client does not trust, give its CA with sslrootcert=<file>, or sslmode=no-verify to encrypt without checking it';

/** Exact SQLSTATEs. Checked before the class table below. */
const SQLSTATE: Record<string, Verdict> = {
  '57P01': 'unavailable', // admin_shutdown (also pg_terminate_backend)
  '57P02': 'unavailable', // crash_shutdown
  '57P03': 'unavailable', // cannot_connect_now (starting up, recovery)
  '57P05': 'unavailable', // idle_session_timeout
  '57014': 'unavailable', // query_canceled: statement_timeout fired, i.e. the call timed out
  '55P03': 'unavailable', // lock_not_available (lock_timeout)
  '40001': 'unavailable', // serialization_failure: transient by definition
  '40P01': 'unavailable', // deadlock_detected: transient by definition
  '25006': 'unavailable', // read_only_sql_transaction: connected to a standby during failover
  // The acquire's deadline (its caller's give-up moment in the server's clock) had passed when the
  // server came to decide: nothing was written (migration 12, statements/acquire.ts).
  WL003: 'unavailable',
  '3F000': 'schema', // invalid_schema_name: schema dropped under a running backend
  '42P01': 'schema', // undefined_table
  '3D000': 'unknown-database', // invalid_catalog_name: the URL's database does not exist
  '28000': 'auth', // invalid_authorization_specification: unknown role, or pg_hba.conf rejects it
  '28P01': 'auth', // invalid_password
  '42501': 'privilege', // insufficient_privilege: the role lacks a grant (named in the message)
};

/** SQLSTATE classes (first two characters). */
const SQLSTATE_CLASS: Record<string, Verdict> = {
  '08': 'unavailable', // connection_exception
  '53': 'unavailable', // insufficient_resources (too many connections, out of memory, disk full)
  '58': 'unavailable', // system_error (I/O)
};

/**
 * `pg` raises these without any code, so matching the message is the only way
 * to recognise them; they are the library's own fixed strings, not server text.
 */
/**
 * `pg.Client`'s own connectionTimeoutMillis: the server did not finish the handshake in time, as
 * with a partition (the lease calls' connections, postgres/hot.ts, meet it as a call deadline).
 */
export const PG_CONNECT_TIMEOUT = 'timeout expired';

/**
 * The start of the error a connection fails with when the server sent something the client cannot
 * read (postgres/connect.ts, hot.ts): an unknown authentication type, a malformed message.
 */
export const PG_PROTOCOL_ERROR = 'protocol violation: could not read what the server sent from';

const PG_CLIENT_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  PG_CONNECT_TIMEOUT,
  'Client has encountered a connection error and is not queryable',
  'Cannot use a pool after calling end on the pool',
  'Client was closed and is not queryable',
  'PGlite is closed',
  PG_PROTOCOL_ERROR,
  // The server asked for a SASL mechanism `pg` does not speak (only SCRAM-SHA-256): no login possible.
  'SASL: ',
];

/**
 * The grant a 42501 message asks for, from the object it names (PostgreSQL's "permission denied for
 * <kind> <name>"). The runtime role's grants are in docs/postgres.md; a role that must migrate needs
 * to own the schema (CREATE on the database, or the schema created for it).
 */
export function missingGrant(message: string): string | null {
  const m = /permission denied for (database|schema|table|sequence|function|relation) "?([^"\s]+)"?/i.exec(
    message,
  );
  if (m === null) {
    return /must be owner of/i.test(message)
      ? 'ownership of the worklease schema (migrations alter its tables; run them as the migration role)'
      : null;
  }
  const kind = m[1]!.toLowerCase();
  const name = m[2]!;
  switch (kind) {
    case 'database':
      return `GRANT CONNECT ON DATABASE ${name}`;
    case 'schema':
      return `GRANT USAGE ON SCHEMA ${name}`;
    case 'sequence':
      return `GRANT USAGE ON SEQUENCE ${name}`;
    case 'function':
      return `GRANT EXECUTE ON FUNCTION ${name}`;
    default:
      return `GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE ${name} (the runtime grants)`;
  }
}

function verdict(err: unknown): Verdict {
  if (typeof err !== 'object' || err === null) return 'internal';
  if (socketErrno(err) !== undefined) return 'unavailable';
  const code = (err as { code?: unknown }).code;
  const text = err instanceof Error ? err.message : '';
  if ((typeof code === 'string' && TLS_CODES.has(code)) || TLS_MESSAGES.some((m) => text.startsWith(m))) {
    return 'tls';
  }
  if (typeof code === 'string') {
    if (SOCKET_ERRNOS.has(code)) return 'unavailable';
    const exact = SQLSTATE[code];
    if (exact !== undefined) return exact;
    if (code.length === 5) {
      const cls = SQLSTATE_CLASS[code.slice(0, 2)];
      if (cls !== undefined) return cls;
    }
  }
  const message = err instanceof Error ? err.message : '';
  if (PG_CLIENT_MESSAGES.some((m) => message.startsWith(m))) return 'unavailable';
  return 'internal';
}

/** True when the connection the error came from must not be reused. */
export function isConnectionError(err: unknown): boolean {
  return verdict(err) === 'unavailable';
}

/** Turns a client error into the project's error classes; worklease errors pass through unchanged. */
export function classifySqlError(err: unknown, what: string, url: string): WorkleaseError {
  if (err instanceof WorkleaseError) return err;
  const errno = socketErrno(err);
  const own = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  const code = errno ?? own;
  const v = verdict(err);
  const reason: ConnectReason | undefined =
    v === 'unknown-database' || v === 'auth' || v === 'privilege' || v === 'tls'
      ? v
      : errno === undefined
        ? undefined
        : ERRNO_REASON[errno];
  const details: Record<string, unknown> = {};
  if (typeof code === 'string') details.code = code;
  if (reason !== undefined) details.reason = reason;
  // An AggregateError's own message is empty: name the first address's failure instead.
  const message =
    err instanceof AggregateError && err.message === ''
      ? String((err.errors[0] as Error | undefined)?.message ?? errno ?? 'connection failed')
      : err instanceof Error
        ? err.message
        : String(err);
  const options = Object.keys(details).length === 0 ? { cause: err } : { cause: err, details };
  switch (v) {
    case 'unavailable':
      return new BackendUnavailableError(`${what} failed: ${url} is unavailable (${message})`, options);
    case 'tls':
      return new BackendUnavailableError(`${what} failed: ${url}: ${message} — ${TLS_HINT}`, options);
    case 'unknown-database':
      return new NotFoundError(`${what} failed on ${url}: ${message}`, options);
    case 'auth':
      return new ForbiddenError(
        `${what} failed on ${url}: ${message}${/no encryption/.test(message) ? ' — the server takes this role only over TLS: add sslmode=require (or verify-full)' : ''}`,
        options,
      );
    case 'privilege': {
      const grant = missingGrant(message);
      if (grant !== null) details.grant = grant;
      return new ForbiddenError(
        `${what} failed on ${url}: ${message}${grant === null ? '' : `; the role needs: ${grant}`}`,
        { cause: err, details },
      );
    }
    case 'schema':
      return new SchemaMismatchError(
        `${what} failed: the worklease tables are missing on ${url} (${message}); run \`${migrateCommandFor(url)}\``,
        options,
      );
    case 'internal':
      return new InternalError(`${what} failed on ${url}: ${message}`, options);
  }
}
