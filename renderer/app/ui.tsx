/** Small pieces shared by several features. */
import type { ConnectionInfo, ErrorDataWire, LeaseStatus } from '../../src/console/api.ts';
import { ConsoleError } from '../api/client.ts';
import { formatAgo } from '../lib/format.ts';

export function EnvBadge({ env }: { env: string }) {
  if (env === '') return null;
  const tone = /prod/i.test(env) ? 'prod' : /stag/i.test(env) ? 'staging' : 'other';
  return (
    <span className={`env env-${tone}`} title="Environment">
      {env}
    </span>
  );
}

export function StatusBadge({ status }: { status: LeaseStatus }) {
  return <span className={`status status-${status}`}>{status}</span>;
}

/**
 * Where an error is shown decides what it means: a connection's own error (it keeps retrying),
 * a one-off connection test (its result, nothing retries), or an action the operator took.
 */
export type ErrorContext = 'connection' | 'test' | 'action';

/** A console URL (`…?schema=x`, `…?keyPrefix=p`) as the CLI takes it: the base URL and the flag. */
export function migrateCommand(url: string, details: Record<string, unknown> | undefined): string {
  const q = url.indexOf('?');
  const base = q < 0 ? url : url.slice(0, q);
  const params = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  const schema = typeof details?.schema === 'string' ? details.schema : params.get('schema');
  const prefix = typeof details?.keyPrefix === 'string' ? details.keyPrefix : params.get('keyPrefix');
  const flag = /^rediss?:|^redis\+cluster:/.test(base)
    ? prefix !== null && prefix !== ''
      ? ` --key-prefix ${prefix}`
      : ''
    : schema !== null && schema !== ''
      ? ` --schema ${schema}`
      : '';
  return `worklease migrate ${base}${flag}`;
}

interface Described {
  /** What happened, in words: the one message of this state. */
  headline: string;
  /** What to do, when there is one thing to do. */
  advice: string | null;
  /** A command to run, shown as code. */
  command: string | null;
}

/** The one message for an error in its context; the server's text goes under "Details". */
export function describeError(data: ErrorDataWire, context: ErrorContext, url?: string): Described {
  const sqlstate = typeof data.details?.code === 'string' ? data.details.code : null;
  // Postgres refusals arrive as INTERNAL with the server's SQLSTATE: say what they mean.
  if (sqlstate === '3D000') {
    return {
      headline: 'Unknown database: the database named in the URL does not exist on this server.',
      advice: 'Check the database name in the URL.',
      command: null,
    };
  }
  if (sqlstate === '28000') {
    return {
      headline: 'Unknown role: the server has no such user (or does not let it connect from here).',
      advice: 'Check the user name in the URL.',
      command: null,
    };
  }
  if (sqlstate === '28P01') {
    return {
      headline: 'Authentication failed: the server refused the password for this user.',
      advice: 'Check the user and password in the URL.',
      command: null,
    };
  }
  switch (data.code) {
    case 'SCHEMA_MISMATCH':
      return {
        headline: 'This backend has no worklease schema here, or an older one.',
        advice: 'Run this once, then the console connects by itself:',
        command: migrateCommand(url ?? '<url>', data.details),
      };
    case 'BACKEND_UNAVAILABLE':
      return context === 'test'
        ? {
            headline: 'The test could not reach the backend at this URL.',
            advice: 'Check the host, the port and that the server runs.',
            command: null,
          }
        : context === 'connection'
          ? {
              headline: 'The backend cannot be reached.',
              advice: 'The console keeps retrying.',
              command: null,
            }
          : {
              headline: 'The backend cannot be reached right now.',
              advice: 'Try again in a moment.',
              command: null,
            };
    case 'FORBIDDEN':
      // A backend that refuses a connection refuses its credentials (Redis NOAUTH / WRONGPASS);
      // an action is refused because the connection or the console is read-only.
      return context === 'action'
        ? {
            headline: 'Not allowed: the connection or the whole console is read-only.',
            advice: null,
            command: null,
          }
        : {
            headline: 'Authentication failed: the backend refused these credentials.',
            advice: 'Check the user and password in the URL.',
            command: null,
          };
    case 'NOT_FOUND':
      return { headline: 'It no longer exists (it may have been pruned).', advice: null, command: null };
    default:
      return { headline: data.message, advice: null, command: null };
  }
}

export function toErrorData(err: unknown): ErrorDataWire {
  if (err instanceof ConsoleError) {
    return { name: err.name, code: err.code, message: err.message, details: err.details };
  }
  return { name: 'Error', code: 'INTERNAL', message: err instanceof Error ? err.message : String(err) };
}

/** An error as ops need it: what happened in words, what to do next, and the server's text under Details. */
export function ErrorNotice({
  error,
  url,
  title,
  context = 'action',
}: {
  error: ErrorDataWire | unknown;
  url?: string | undefined;
  title?: string | undefined;
  context?: ErrorContext;
}) {
  const data =
    typeof error === 'object' &&
    error !== null &&
    'code' in error &&
    'message' in error &&
    !(error instanceof Error)
      ? (error as ErrorDataWire)
      : toErrorData(error);
  const d = describeError(data, context, url);
  // Two lines at most (title, then the message with its advice, command and details), so an error
  // above the fleet table does not push the rows away.
  return (
    <div className="error-notice" role="alert">
      {title !== undefined && <strong>{title}</strong>}
      <div>
        <span className="error-headline">{d.headline}</span>
        {d.advice !== null && <span className="hint"> {d.advice}</span>}
        {d.command !== null && (
          <>
            {' '}
            <code className="command">{d.command}</code>
          </>
        )}
        {d.headline !== data.message && (
          <details className="error-details">
            <summary>Details</summary>
            <code className="error-code">{data.code}</code> {data.message}
          </details>
        )}
      </div>
    </div>
  );
}

/** "live", "reconnecting · as of 12 s ago", …: how current this connection's picture is. */
export function freshness(
  conn: ConnectionInfo,
  localNow: number,
  linkUp: boolean,
  lastEventAt: number,
): string {
  if (!linkUp) return `console server unreachable · as of ${formatAgo(localNow - lastEventAt)}`;
  const asOf =
    conn.syncedAt === null
      ? 'never synced'
      : `as of ${formatAgo(localNow + conn.clockOffsetMs - conn.syncedAt)}`;
  switch (conn.state) {
    case 'live':
      return 'live';
    case 'stale':
      return `stale: the backend is not answering · ${asOf}`;
    case 'connecting':
      return 'connecting…';
    case 'reconnecting':
      return `reconnecting · ${asOf}`;
    case 'error':
      return `error · ${asOf}`;
    case 'closed':
      return `closed · ${asOf}`;
  }
}
