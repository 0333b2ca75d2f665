/**
 * Backend URLs as text that is safe to show: the one redactor used wherever a
 * URL is printed, logged, sent to a page or written to a file (`redactUrl` in
 * src/backends/url.ts calls it), and the parser it rests on. Plain string work,
 * no I/O, no driver: the console and the web server use it as well as the
 * backends.
 *
 * Why not `new URL()`: for schemes it does not know (`postgres:`, `redis:`) the
 * WHATWG parser ends the authority at the first `/`, `?` or `#`, and refuses
 * multi-host authorities (`h1:5432,h2:5432`) outright. A password with an
 * unescaped `/`, `?`, `#` or `@` in it (`u:pa/ss@h`, `u:p@ss@h`) would then
 * come out partly or wholly as "host" or "path" — shown in clear. This parser
 * takes the other side: the user information runs to the **last** `@` after
 * `//`, wherever the first `/` is, because a host list never contains `@`.
 * When a path or query holds an `@` as well, more than the password is hidden;
 * never less.
 */

/** The parts of `scheme://[userinfo@]hosts[/path][?query][#fragment]`, as written (nothing decoded). */
export interface UrlText {
  /** With its colon: `postgres:`. */
  scheme: string;
  /** Between `//` and the last `@`; null when there is no `@`. */
  userinfo: string | null;
  /** The host list as written: `h1:5432,h2:5432`, `[::1]:6379`, or `` (PGlite's `///dir`). */
  hosts: string;
  /** From the first `/` after the hosts, up to `?` or `#`. */
  path: string;
  /** Without its `?`; null when there is none. */
  query: string | null;
  /** Without its `#`; null when there is none. */
  fragment: string | null;
}

const SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/**
 * Splits a URL with an authority (`scheme://…`); null for anything else. The
 * user information ends at the last `@` (see the file comment); the hosts end
 * at the first `/`, `?` or `#` after it.
 */
export function splitUrlText(url: string): UrlText | null {
  const scheme = SCHEME.exec(url)?.[0];
  if (scheme === undefined || !url.startsWith('//', scheme.length)) return null;
  const rest = url.slice(scheme.length + 2);
  // `pglite:///dir@x`: an empty authority, so whatever follows is a path, `@` and all.
  const at = rest.startsWith('/') ? -1 : rest.lastIndexOf('@');
  const userinfo = at < 0 ? null : rest.slice(0, at);
  const afterUser = rest.slice(at + 1);
  const end = afterUser.search(/[/?#]/);
  const hosts = end < 0 ? afterUser : afterUser.slice(0, end);
  let tail = end < 0 ? '' : afterUser.slice(end);
  let fragment: string | null = null;
  const hash = tail.indexOf('#');
  if (hash >= 0) {
    fragment = tail.slice(hash + 1);
    tail = tail.slice(0, hash);
  }
  const q = tail.indexOf('?');
  return {
    scheme,
    userinfo,
    hosts,
    path: q < 0 ? tail : tail.slice(0, q),
    query: q < 0 ? null : tail.slice(q + 1),
    fragment,
  };
}

/** Query parameters whose values are secrets: `password`, `sentinelPassword`, `token`, `client_secret`… */
const SECRET_PARAM = /pass(word|wd)?$|secret|token|^auth$/i;

/** `a=1&password=x` → `a=1&password=***`: every parameter named like a secret. */
function redactQuery(query: string): string {
  return query
    .split('&')
    .map((part) => {
      const eq = part.indexOf('=');
      if (eq < 0) return part;
      let name = part.slice(0, eq);
      try {
        name = decodeURIComponent(name);
      } catch {
        // A malformed name is compared as written.
      }
      return SECRET_PARAM.test(name) ? `${part.slice(0, eq)}=***` : part;
    })
    .join('&');
}

/**
 * `url` with every password replaced by `***`: the one in the user information
 * (everything after its first `:`, so `u:p:q@h` hides `p:q`) and the value of
 * every query parameter named like a secret. Multi-host URLs
 * (`postgres://u:p@h1:5432,h2:5432/db`, `redis+sentinel://…`), passwords with
 * `@`, `/`, `:`, `?` or `#` in them, and text that is no URL at all (only its
 * `password=…` parameters are hidden) are all handled.
 */
export function redactUrl(url: string): string {
  const parts = splitUrlText(url);
  if (parts === null) {
    // Not `scheme://…`: hide what looks like a secret parameter anyway.
    const q = url.indexOf('?');
    return q < 0 ? url : `${url.slice(0, q + 1)}${redactQuery(url.slice(q + 1))}`;
  }
  let userinfo = '';
  if (parts.userinfo !== null) {
    const colon = parts.userinfo.indexOf(':');
    userinfo = `${colon < 0 ? parts.userinfo : `${parts.userinfo.slice(0, colon)}:***`}@`;
  }
  return (
    `${parts.scheme}//${userinfo}${parts.hosts}${parts.path}` +
    (parts.query === null ? '' : `?${redactQuery(parts.query)}`) +
    (parts.fragment === null ? '' : `#${parts.fragment}`)
  );
}

/** Every `scheme://…` inside free text (an error message, a stack) redacted by {@link redactUrl}. */
export function redactUrlsIn(text: string): string {
  return text.replace(/[a-z][a-z0-9+.-]*:\/\/[^\s'"`<>]+/gi, (url) => redactUrl(url));
}
