/**
 * The words the console shows for an error: what happened, what to do, and a command to run. Plain
 * TypeScript (no JSX), so the tests read it as the page does.
 */
import { type ErrorDataWire, schemaNewerThanThis } from '../../src/console/common/index.ts';

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
  const flag = /^rediss?:|^redis\+(cluster|sentinel):/.test(base)
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
      if (schemaNewerThanThis(data.details)) {
        return {
          headline: 'A newer worklease wrote this backend’s schema: this console cannot read it.',
          advice: 'Upgrade the worklease this console runs; migrating cannot take a schema back.',
          command: null,
        };
      }
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
