/**
 * The one table that turns what ioredis throws into worklease errors.
 *
 * BACKEND_UNAVAILABLE means "the call may or may not have been applied; the
 * server could not be reached or did not answer in time" — the caller (the
 * holder layer) may retry within its lease deadline. Everything else is final.
 * Callers branch on the resulting `code`, never on these messages.
 */
import {
  BackendUnavailableError,
  ErrorCode,
  ForbiddenError,
  InternalError,
  WorkleaseError,
} from '../../lease/errors.ts';
import { type ConnectReason, ERRNO_REASON, SOCKET_ERRNOS, socketErrno } from '../errno.ts';

type Verdict = typeof ErrorCode.BACKEND_UNAVAILABLE | typeof ErrorCode.FORBIDDEN | typeof ErrorCode.INTERNAL;

/** Redis error reply prefixes (the first word of the reply). */
const REPLY_PREFIX: Record<string, Verdict> = {
  // The server cannot serve right now; nothing was executed.
  LOADING: ErrorCode.BACKEND_UNAVAILABLE, // loading its dataset after a restart
  BUSY: ErrorCode.BACKEND_UNAVAILABLE, // another script is running past lua-time-limit
  MASTERDOWN: ErrorCode.BACKEND_UNAVAILABLE, // replica lost its master
  CLUSTERDOWN: ErrorCode.BACKEND_UNAVAILABLE, // cluster has unserved slots
  TRYAGAIN: ErrorCode.BACKEND_UNAVAILABLE, // slot migrating; ioredis already retried
  MOVED: ErrorCode.BACKEND_UNAVAILABLE, // redirect storm beyond maxRedirections
  ASK: ErrorCode.BACKEND_UNAVAILABLE,
  // A replica: during a Sentinel failover a passing state (BACKEND_UNAVAILABLE, the client asks the
  // sentinels again); on a plain URL the address is a replica's, which waiting never fixes
  // (classifyRedisError makes it FORBIDDEN).
  READONLY: ErrorCode.BACKEND_UNAVAILABLE,
  NOREPLICAS: ErrorCode.BACKEND_UNAVAILABLE, // min-replicas-to-write not met
  OOM: ErrorCode.BACKEND_UNAVAILABLE, // maxmemory reached: writes refused until memory frees up
  // Credentials or ACLs: retrying will not help.
  NOAUTH: ErrorCode.FORBIDDEN,
  WRONGPASS: ErrorCode.FORBIDDEN,
  NOPERM: ErrorCode.FORBIDDEN,
  // A key under our prefix holds another type, a script failed, or NOSCRIPT escaped the fallback: a bug
  // or someone else writing under our prefix.
  WRONGTYPE: ErrorCode.INTERNAL,
  NOSCRIPT: ErrorCode.INTERNAL,
  ERR: ErrorCode.INTERNAL,
};

/** Client-side conditions ioredis reports by message or class name. */
const CLIENT_MESSAGE: ReadonlyArray<readonly [RegExp, Verdict]> = [
  [/^Command timed out/, ErrorCode.BACKEND_UNAVAILABLE], // commandTimeout (= callTimeoutMs)
  [/^Connection is closed/, ErrorCode.BACKEND_UNAVAILABLE],
  [/^Command aborted due to connection close/, ErrorCode.BACKEND_UNAVAILABLE],
  [/^Reached the max retries per request limit/, ErrorCode.BACKEND_UNAVAILABLE], // in flight when the socket dropped
  [/^Stream isn't writeable/, ErrorCode.BACKEND_UNAVAILABLE], // socket dropped between ready check and write
  [/^Cluster isn't ready/, ErrorCode.BACKEND_UNAVAILABLE],
  [/^Cluster is ended/, ErrorCode.BACKEND_UNAVAILABLE],
  [/^Too many Cluster redirections/, ErrorCode.BACKEND_UNAVAILABLE],
  [/^None of startup nodes is available/, ErrorCode.BACKEND_UNAVAILABLE],
  [/^Failed to refresh slots cache/, ErrorCode.BACKEND_UNAVAILABLE],
  [/^connect ETIMEDOUT/, ErrorCode.BACKEND_UNAVAILABLE],
  [/^Ready check failed/, ErrorCode.BACKEND_UNAVAILABLE],
];

function verdictOf(err: unknown): Verdict {
  if (!(err instanceof Error)) return ErrorCode.INTERNAL;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && SOCKET_ERRNOS.has(code)) return ErrorCode.BACKEND_UNAVAILABLE;
  if (err.name === 'MaxRetriesPerRequestError') return ErrorCode.BACKEND_UNAVAILABLE;
  const message = err.message;
  for (const [pattern, verdict] of CLIENT_MESSAGE) if (pattern.test(message)) return verdict;
  if (err.name === 'ReplyError') {
    const prefix = /^[A-Z]+/.exec(message)?.[0];
    if (prefix !== undefined && prefix in REPLY_PREFIX) return REPLY_PREFIX[prefix]!;
    return ErrorCode.INTERNAL;
  }
  // A bare socket error without a code, or the cluster's wrapper around one.
  if (/ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|socket hang up/.test(message)) {
    return ErrorCode.BACKEND_UNAVAILABLE;
  }
  return ErrorCode.INTERNAL;
}

/** The error itself or, for the cluster's "Failed to refresh slots cache", the last node's error, if it has a socket errno. */
function withErrno(err: unknown, depth = 0): unknown {
  if (socketErrno(err) !== undefined) return err;
  const inner =
    typeof err === 'object' && err !== null ? (err as { lastNodeError?: unknown }).lastNodeError : undefined;
  return inner === undefined || inner === null || depth > 3 ? undefined : withErrno(inner, depth + 1);
}

/**
 * Node's TLS failures: a certificate the client does not trust or that names another host, and a
 * server that answered the handshake with something other than TLS.
 */
const TLS_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERR_SSL_WRONG_VERSION_NUMBER',
  'ERR_SSL_PACKET_LENGTH_TOO_LONG',
]);

/** The TLS failure among `err` and the last socket error, if any. */
function tlsFailure(err: unknown, socketError: unknown): Error | undefined {
  for (const e of [err, socketError]) {
    const code = typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined;
    if (e instanceof Error && typeof code === 'string' && TLS_CODES.has(code)) return e;
  }
  return undefined;
}

export const TLS_CERT_HINT =
  'the server certificate is not trusted or names another host: give Node its CA (NODE_EXTRA_CA_CERTS=<file>) or connect by the name the certificate carries';

/** Reply prefixes that mean the login itself failed. */
const AUTH_PREFIXES = new Set(['NOAUTH', 'WRONGPASS']);

/**
 * Maps an ioredis failure of `op` to a worklease error; worklease errors pass
 * through unchanged. ioredis rejects a call on a connection that never came up
 * with only "Connection is closed." (standalone) or "None of startup nodes is
 * available" (cluster), and reports the reason (ENOTFOUND, ECONNREFUSED, …) as
 * an 'error' / 'node error' event: `socketError` is the last one seen, so the
 * message and `details.reason` say why. `followsFailover` (a Sentinel target): READONLY is a
 * failover in progress (BACKEND_UNAVAILABLE); otherwise the URL names a replica (FORBIDDEN, final).
 */
export function classifyRedisError(
  err: unknown,
  op: string,
  url: string,
  socketError: unknown = undefined,
  followsFailover = false,
): WorkleaseError {
  if (err instanceof WorkleaseError) return err;
  const message = err instanceof Error ? err.message : String(err);
  if (!followsFailover && err instanceof Error && err.name === 'ReplyError' && /^READONLY/.test(message)) {
    return new ForbiddenError(
      `${op} on ${url} reached a read-only replica, which refuses writes (${message}): point the URL at the master, or use redis+sentinel://<sentinels>/<masterName> to follow failovers`,
      { cause: err, details: { code: 'READONLY', reason: 'replica' } },
    );
  }
  const tlsError = tlsFailure(err, socketError);
  if (tlsError !== undefined) {
    const code = (tlsError as { code?: string }).code!;
    const hint =
      code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'ERR_SSL_PACKET_LENGTH_TOO_LONG'
        ? 'the server does not speak TLS: use redis:// (or tls=false) for a plain server'
        : TLS_CERT_HINT;
    return new BackendUnavailableError(`${op} on ${url} failed: ${tlsError.message} — ${hint}`, {
      cause: tlsError,
      details: { code, reason: 'tls' },
    });
  }
  const verdict = verdictOf(err);
  switch (verdict) {
    case ErrorCode.BACKEND_UNAVAILABLE: {
      // A refused AUTH reaches us only as an 'error' event; the call itself just finds the connection closed.
      if (socketError instanceof Error && verdictOf(socketError) === ErrorCode.FORBIDDEN) {
        return classifyRedisError(socketError, op, url);
      }
      const why = socketErrno(err) === undefined ? withErrno(socketError) : undefined;
      const errno = socketErrno(err) ?? socketErrno(why);
      const details: Record<string, unknown> = {};
      if (errno !== undefined) details.code = errno;
      const reason: ConnectReason | undefined = errno === undefined ? undefined : ERRNO_REASON[errno];
      if (reason !== undefined) details.reason = reason;
      const text = why instanceof Error ? `${why.message} (${message.replace(/\.$/, '')})` : message;
      return new BackendUnavailableError(`${op} on ${url} failed: ${text}`, {
        cause: why ?? err,
        ...(Object.keys(details).length === 0 ? {} : { details }),
      });
    }
    case ErrorCode.FORBIDDEN: {
      const prefix = /^[A-Z]+/.exec(message)?.[0] ?? '';
      const details = AUTH_PREFIXES.has(prefix) ? { details: { code: prefix, reason: 'auth' } } : {};
      return new ForbiddenError(`${op} on ${url} was refused by the server: ${message}`, {
        cause: err,
        ...details,
      });
    }
    default:
      return new InternalError(`${op} on ${url} failed unexpectedly: ${message}`, { cause: err });
  }
}
