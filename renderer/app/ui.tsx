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

function hint(code: string, url?: string): string | null {
  switch (code) {
    case 'SCHEMA_MISMATCH':
      return `The backend has no worklease schema, or an older one. Run worklease migrate ${url ?? '<url>'} and reconnect.`;
    case 'BACKEND_UNAVAILABLE':
      return 'The backend cannot be reached right now. The console keeps retrying.';
    case 'FORBIDDEN':
      return 'Not allowed here: the connection or the whole console is read-only, or the access token is wrong.';
    case 'NOT_FOUND':
      return 'It no longer exists (it may have been pruned).';
    default:
      return null;
  }
}

export function toErrorData(err: unknown): ErrorDataWire {
  if (err instanceof ConsoleError) {
    return { name: err.name, code: err.code, message: err.message };
  }
  return { name: 'Error', code: 'INTERNAL', message: err instanceof Error ? err.message : String(err) };
}

/** An error as ops need it: the stable code, the message, and what to do next. */
export function ErrorNotice({
  error,
  url,
  title,
}: {
  error: ErrorDataWire | unknown;
  url?: string | undefined;
  title?: string | undefined;
}) {
  const data =
    typeof error === 'object' &&
    error !== null &&
    'code' in error &&
    'message' in error &&
    !(error instanceof Error)
      ? (error as ErrorDataWire)
      : toErrorData(error);
  const h = data.message.includes('worklease migrate') ? null : hint(data.code, url);
  return (
    <div className="error-notice" role="alert">
      {title !== undefined && <strong>{title}</strong>}
      <div>
        <code className="error-code">{data.code}</code> {data.message}
      </div>
      {h !== null && <div className="hint">{h}</div>}
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
