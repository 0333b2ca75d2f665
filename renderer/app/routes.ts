/**
 * The page's address: view, connection, selected lease, filters and sort, so
 * a lease can be pasted into an incident channel and a reload or back/forward
 * lands where the operator was.
 *
 *   /                                          fleet, every connection
 *   /c/<connectionId>                          fleet of one connection
 *   /c/<connectionId>/lease/<workId>           one lease (the CLI builds the same shape)
 *   /<view>  /c/<connectionId>/<view>          another view (audit, activity, connections, …)
 *   ?q=…&status=stuck,expired&sort=expiresAt&dir=desc&holder=…&prefix=…&scope=all
 *
 * Both ids are percent-encoded with encodeURIComponent (a `/` in a work id is
 * `%2F`, so it stays one path segment) and decoded once here; nothing read
 * from the address is ever put into HTML, only into React text and back into
 * the address through the same encoder. Work ids `.` and `..` cannot be a
 * path segment (URL parsers resolve them, even percent-encoded), so those two
 * go in the query: `/c/<connectionId>/lease?workId=..`.
 *
 * Over http(s) the server answers every such path with the page (see
 * src/server/http.ts); in Electron the route lives in the fragment (see
 * ./router.ts, which holds the live address).
 */
export interface Route {
  /** A view id from the App's view table; unknown ids are the App's to handle. */
  view: string;
  connectionId: string | null;
  /** The selected lease (fleet view only). */
  workId: string | null;
  /** Every other piece of state, by name (filters, sort, scope). Empty values are absent. */
  query: Readonly<Record<string, string>>;
}

export const HOME: Route = { view: 'fleet', connectionId: null, workId: null, query: {} };

function decode(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/** The route named by a path and query string (as `location.pathname` / `location.search` give them). */
export function parseRoute(pathname: string, search: string): Route {
  const params = new URLSearchParams(search);
  const query: Record<string, string> = {};
  for (const [k, v] of params) if (v !== '' && k !== 'workId' && k !== 'token') query[k] = v;
  // `/a/b/` is `/a/b`; an empty segment elsewhere (`/c//lease/x`) names nothing.
  const segs = pathname.replace(/^\/+/, '').replace(/\/$/, '').split('/');
  if (segs.length === 1 && segs[0] === '') segs.length = 0;
  if (segs.includes('')) return { ...HOME, query };
  let connectionId: string | null = null;
  let rest = segs;
  if (segs[0] === 'c' && segs[1] !== undefined) {
    connectionId = decode(segs[1]);
    if (connectionId === null || connectionId === '') return { ...HOME, query };
    rest = segs.slice(2);
  }
  if (rest.length === 0) return { view: 'fleet', connectionId, workId: null, query };
  if (rest[0] === 'lease' && connectionId !== null) {
    const workId =
      rest.length === 2 ? decode(rest[1] as string) : rest.length === 1 ? params.get('workId') : null;
    if (workId === null || workId === '') return { view: 'fleet', connectionId, workId: null, query };
    return { view: 'fleet', connectionId, workId, query };
  }
  if (rest.length === 1) {
    const view = decode(rest[0] as string);
    if (view !== null && /^[a-z][a-z0-9-]*$/.test(view)) return { view, connectionId, workId: null, query };
  }
  return { ...HOME, query };
}

/** The path and query of a route; {@link parseRoute} reads it back to the same route. */
export function formatRoute(route: Route): string {
  let path = route.connectionId === null ? '' : `/c/${encodeURIComponent(route.connectionId)}`;
  const params = new URLSearchParams();
  if (route.view === 'fleet') {
    if (route.workId !== null && route.connectionId !== null) {
      if (route.workId === '.' || route.workId === '..') {
        path += '/lease';
        params.set('workId', route.workId);
      } else {
        path += `/lease/${encodeURIComponent(route.workId)}`;
      }
    }
  } else {
    path += `/${encodeURIComponent(route.view)}`;
  }
  for (const k of Object.keys(route.query).sort()) {
    const v = route.query[k];
    if (v !== undefined && v !== '') params.set(k, v);
  }
  const qs = params.toString();
  return `${path === '' ? '/' : path}${qs === '' ? '' : `?${qs}`}`;
}

/**
 * The route kept in a fragment (`#/c/…/lease/…?q=…`), as the desktop app's pages hold it: a
 * path there names a file of the app protocol, so the route goes after the `#`.
 */
export function parseFragment(hash: string): Route {
  const frag = hash.startsWith('#') ? hash.slice(1) : hash;
  const q = frag.indexOf('?');
  return parseRoute(q < 0 ? frag : frag.slice(0, q), q < 0 ? '' : frag.slice(q));
}

/** The link of one lease, as the CLI prints it (`show`, `ls --urls`). */
export function leasePath(connectionId: string, workId: string): string {
  return formatRoute({ view: 'fleet', connectionId, workId, query: {} });
}

/** The route with some query values set (undefined or '' removes one). */
export function withQuery(route: Route, changes: Record<string, string | undefined>): Route {
  const query: Record<string, string> = { ...route.query };
  for (const [k, v] of Object.entries(changes)) {
    if (v === undefined || v === '') delete query[k];
    else query[k] = v;
  }
  return { ...route, query };
}
