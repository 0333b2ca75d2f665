/**
 * Node.js socket error codes (`err.code`) that mean the connection to a server
 * is gone or never came up. Every server backend classifies them as
 * BACKEND_UNAVAILABLE; they live here so the backends share one list.
 */
export const SOCKET_ERRNOS: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_NONAME',
  'ERR_SOCKET_CLOSED',
  'ERR_STREAM_DESTROYED',
]);

/**
 * Why a connection failed, for operators: carried as `details.reason` on the
 * error so the CLI can give each its own exit status and the console its own
 * hint, without matching message text.
 * - `dns`: the host name does not resolve (ENOTFOUND, EAI_AGAIN);
 * - `refused`: nothing listens on that host and port (ECONNREFUSED);
 * - `unknown-database`: the server (or PGlite directory) has no such database;
 * - `auth`: unknown role/user, wrong password, or not allowed to connect;
 * - `privilege`: logged in, but the role lacks a grant a statement needs (PostgreSQL 42501);
 * - `tls`: TLS does not fit (asked of a server without it, or a certificate the client does not trust).
 */
export type ConnectReason = 'dns' | 'refused' | 'unknown-database' | 'auth' | 'privilege' | 'tls';

/** Node.js errnos that name a {@link ConnectReason}. */
export const ERRNO_REASON: Readonly<Record<string, ConnectReason>> = {
  ENOTFOUND: 'dns',
  EAI_AGAIN: 'dns',
  EAI_NONAME: 'dns',
  ECONNREFUSED: 'refused',
};

/** The socket errno of `err` (or of the errors inside an AggregateError), if any. */
export function socketErrno(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && SOCKET_ERRNOS.has(code)) return code;
  // Node's happy-eyeballs connect (several addresses) rejects with an AggregateError of one per address.
  if (err instanceof AggregateError) {
    for (const inner of err.errors) {
      const found = socketErrno(inner);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}
