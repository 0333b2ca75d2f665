/** Small pieces shared by several features. */
import type { ErrorDataWire, LeaseStatus } from '../../src/console/common/index.ts';
import { ConsoleError } from '../api/client.ts';
import { describeError, type ErrorContext } from './error-text.ts';

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
