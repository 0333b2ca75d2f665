/**
 * How the CLI reports failure: one line `worklease: <CODE>: <message>` on
 * stderr and an exit status per error code, so scripts branch on the status
 * and people read one sentence instead of a stack trace.
 */
import { CommanderError } from 'commander';
import { redactUrl } from '../backends/url.ts';
import { schemaNewerThanThis } from '../console/api.ts';
import { type ErrorCode, SchemaMismatchError, WorkleaseError } from '../lease/errors.ts';

/**
 * Exit statuses, one per thing an operator does something different about
 * (documented in `worklease --help` and the README). 2-7 follow the error
 * code; 8-13 refine a code by the failure's `details.reason` (set by the
 * backends' error tables and by `serve`), so a script can tell "DNS" from
 * "refused" from "wrong password" without reading the message.
 */
export const EXIT = {
  OK: 0,
  INTERNAL: 1,
  INVALID_ARGUMENT: 2,
  NOT_FOUND: 3,
  CONFLICT: 4,
  BACKEND_UNAVAILABLE: 5,
  SCHEMA_MISMATCH: 6,
  FORBIDDEN: 7,
  PORT_IN_USE: 8,
  UNKNOWN_DATABASE: 9,
  AUTH_FAILED: 10,
  DNS_FAILED: 11,
  CONNECTION_REFUSED: 12,
  PRIVILEGE: 13,
} as const;

const EXIT_BY_CODE: Record<ErrorCode, number> = {
  INTERNAL: EXIT.INTERNAL,
  INVALID_ARGUMENT: EXIT.INVALID_ARGUMENT,
  NOT_FOUND: EXIT.NOT_FOUND,
  CONFLICT: EXIT.CONFLICT,
  // The CLI never holds leases; if a lease-state error ever reaches it, it is
  // a conflict with the lease's current state, like CONFLICT.
  LEASE_HELD: EXIT.CONFLICT,
  FENCED: EXIT.CONFLICT,
  LEASE_EXPIRED: EXIT.CONFLICT,
  LEASE_LOST: EXIT.CONFLICT,
  ON_HOLD: EXIT.CONFLICT,
  BACKEND_UNAVAILABLE: EXIT.BACKEND_UNAVAILABLE,
  SCHEMA_MISMATCH: EXIT.SCHEMA_MISMATCH,
  FORBIDDEN: EXIT.FORBIDDEN,
  // The data the schema held is gone (docs/durability.md): like a missing schema, migrate to start over.
  DATASET_LOST: EXIT.SCHEMA_MISMATCH,
  // A write the replicas did not confirm: the backend is not (fully) reachable.
  NOT_DURABLE: EXIT.BACKEND_UNAVAILABLE,
};

/** `details.reason` → exit status and the hint added to the one line. */
const BY_REASON: Record<string, { exit: number; hint: string }> = {
  'port-in-use': {
    exit: EXIT.PORT_IN_USE,
    hint: 'stop the other process, or use another --port (--port 0 picks a free one)',
  },
  'unknown-database': { exit: EXIT.UNKNOWN_DATABASE, hint: 'check the database name (the path) in the URL' },
  auth: { exit: EXIT.AUTH_FAILED, hint: 'check the user and password in the URL' },
  dns: { exit: EXIT.DNS_FAILED, hint: 'check the host name in the URL' },
  refused: {
    exit: EXIT.CONNECTION_REFUSED,
    hint: 'nothing listens there: check the host and port, and that the server runs',
  },
  privilege: {
    exit: EXIT.PRIVILEGE,
    hint: 'logged in, but the role lacks that grant: grant it, or use a role that has it (the runtime and migration roles: docs/postgres.md)',
  },
};

export const EXIT_HELP = `Exit status:
  0  ok
  1  internal error (a bug, or an unexpected server reply)
  2  bad arguments, e.g. an unknown URL option or --port 99999 (INVALID_ARGUMENT)
  3  not found (NOT_FOUND)
  4  conflict: the lease changed since the token you gave (CONFLICT)
  5  backend unreachable or timed out (BACKEND_UNAVAILABLE)
  6  schema missing or too old: run \`worklease migrate <url>\`; also \`migrate --check\` when a migration is needed
  7  forbidden (FORBIDDEN)
  8  port in use (serve, demo): use another --port, or --port 0
  9  unknown database (no such database on the server, no PGlite database in the directory)
  10 authentication failed or unknown role/user (the server's own words follow)
  11 host name does not resolve (DNS)
  12 connection refused: nothing listens on that host and port
  13 permission denied: logged in, but the role lacks a grant (named in the message)`;

export interface Failure {
  code: ErrorCode;
  exitCode: number;
  /** The one line for stderr, without a trailing newline. */
  line: string;
}

/** Passwords in any URL inside a message are replaced by `***`. */
function redactText(text: string): string {
  return text.replace(/[a-z][a-z0-9+.-]*:\/\/[^\s'"`]+/gi, (url) => redactUrl(url));
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Maps anything thrown (worklease errors, commander's argument errors, bugs) to a code, status and line. */
export function describeFailure(err: unknown): Failure {
  let code: ErrorCode;
  let message: string;
  let exitCode: number | undefined;
  if (err instanceof WorkleaseError) {
    code = err.code;
    message = err.message;
    if (
      err instanceof SchemaMismatchError &&
      !/worklease migrate/.test(message) &&
      !schemaNewerThanThis(err.details)
    ) {
      message += ' — run `worklease migrate <url>` to create or upgrade the schema';
    }
    const reason = err.details?.reason;
    const known =
      typeof reason === 'string' && Object.hasOwn(BY_REASON, reason) ? BY_REASON[reason] : undefined;
    if (known !== undefined) {
      exitCode = known.exit;
      message += ` — ${known.hint}`;
    }
  } else if (err instanceof CommanderError) {
    code = 'INVALID_ARGUMENT';
    message = err.message.replace(/^error: /, '');
  } else {
    code = 'INTERNAL';
    message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  }
  return {
    code,
    exitCode: exitCode ?? EXIT_BY_CODE[code] ?? EXIT.INTERNAL,
    line: `worklease: ${code}: ${oneLine(redactText(message)) || 'unknown error'}`,
  };
}

/** The stack and cause chain, for `--debug`. */
export function debugDetails(err: unknown): string {
  const parts: string[] = [];
  let current: unknown = err;
  for (let depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
    parts.push(redactText(current instanceof Error ? (current.stack ?? current.message) : String(current)));
    current = current instanceof Error ? current.cause : undefined;
    if (current !== undefined) parts.push('caused by:');
  }
  return parts.join('\n');
}
