/**
 * Links into the console page, for the CLI (`show`, `ls --urls`).
 *
 * A connection that `serve` (or the desktop app) was given by URL, not loaded
 * from a saved profile, gets an id derived from its effective URL (redacted,
 * namespace explicit: what `backend.url` says), so a CLI pointed at the same
 * backend computes the same id without asking the console. Saved profiles keep
 * their stored ids. When two given connections share one URL, the second gets
 * `-2` after the id (and so on); a link names the first.
 *
 * A lease's page is `/c/<connectionId>/lease/<encodeURIComponent(workId)>`
 * under the console's URL.
 */
import { createHash } from 'node:crypto';
import { InvalidArgumentError } from '../lease/errors.ts';

/** The id of a connection given by URL: `c_` and 12 hex digits of the SHA-256 of its effective URL. */
export function connectionIdFor(effectiveUrl: string): string {
  return `c_${createHash('sha256').update(effectiveUrl, 'utf8').digest('hex').slice(0, 12)}`;
}

/**
 * The console URL given to the CLI (`--console-url`, `WORKLEASE_CONSOLE_URL`) as a base for links:
 * http(s) only; a query and fragment (say a `?token=`) are dropped, never printed.
 */
export function consoleBase(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new InvalidArgumentError(`the console URL '${text.slice(0, 200)}' is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new InvalidArgumentError(`the console URL must be http:// or https://, got ${url.protocol}`);
  }
  url.search = '';
  url.hash = '';
  url.username = '';
  url.password = '';
  if (!url.pathname.endsWith('/')) url.pathname = `${url.pathname}/`;
  return url;
}

/** The page of one lease: `<console>/c/<connectionId>/lease/<encoded workId>`. */
export function leaseUrl(base: URL, connectionId: string, workId: string): string {
  return new URL(`c/${encodeURIComponent(connectionId)}/lease/${encodeURIComponent(workId)}`, base).href;
}
