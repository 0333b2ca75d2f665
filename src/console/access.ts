/**
 * Who is calling the console service, and what they may do.
 *
 * The desktop app has one local user (the OS user) who may do everything the
 * connection allows. A served console (`worklease serve`) is shared: the web
 * server authenticates each request (a per-user token, a trusted proxy's
 * identity header, or the one shared token) and passes the {@link Caller} to
 * the service, which checks the caller's role on the connection for every
 * call — the transport never decides alone.
 *
 * Roles are per connection, by connection name (names are what a config file
 * and an operator use; ids are generated), with `*` for every other one:
 *   viewer   — read: fleet, lease, checkpoint, audit;
 *   operator — viewer + force-release;
 *   admin    — operator + connections.add/update/remove/test (when the
 *              server allows connection edits at all; on a served console
 *              only as an admin of every connection, see adminOfEvery).
 * No role on a connection: the caller does not see it.
 */
import { resolve, sep } from 'node:path';
import { InvalidArgumentError } from '../lease/errors.ts';
import { splitUrlText } from '../lease/redact.ts';
import type { Permission, Role } from './api.ts';

export type { Permission, Role } from './api.ts';

export interface Caller {
  /** The authenticated identity: shown on the page and written to the audit log. */
  user: string;
  /** How the identity was established. */
  via: 'desktop' | 'token' | 'shared-token' | 'proxy';
  /** Role per connection name; `*` covers every connection not named. */
  roles: Readonly<Record<string, Role>>;
}

const RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };

/** The caller's role on the connection named `name`, or null (no access). */
export function roleOn(caller: Caller, name: string): Role | null {
  return (Object.hasOwn(caller.roles, name) ? caller.roles[name] : caller.roles['*']) ?? null;
}

export function atLeast(role: Role | null, needed: Role): boolean {
  return role !== null && RANK[role] >= RANK[needed];
}

export const ALLOWED: Permission = { allowed: true };
export function denied(reason: string): Permission {
  return { allowed: false, reason };
}

/**
 * Restrictions for a console served to several people (`serve`); the desktop
 * app has none of them.
 */
export interface SharedConsoleOptions {
  /**
   * Allow connections.add/update/remove/test through the API (admins only).
   * Default false: connections come from the command line or the config file.
   * Refused together with a read-only console.
   */
  allowConnectionEdits?: boolean;
  /**
   * The only directory under which `pglite:///dir` connections may be added
   * through the API. Default none: such connections are refused.
   */
  pgliteDataDir?: string;
  /** Most `pglite://memory` connections at once (each holds a whole database in memory). Default 2. */
  maxMemoryConnections?: number;
  /**
   * `host:port` pairs that connections added or edited through the API may reach
   * (`serve --connection-hosts`), besides those of the connections the server was started
   * with. Default none: only the configured ones (as Grafana's `data_source_proxy_whitelist`).
   */
  connectionHosts?: readonly string[];
}

/**
 * Checks a URL given through the API of a shared console: a PGlite directory
 * must lie inside `dataDir` (its own subdirectory, not the directory itself),
 * `pglite://memory` may exist at most `max` times (`memoryInUse` counts the
 * current ones). Returns the refusal reason, or null when allowed. Pure; no I/O.
 */
export function pgliteRefusal(
  url: string,
  dataDir: string | undefined,
  memoryInUse: number,
  max: number,
): string | null {
  if (!/^pglite:/i.test(url)) return null;
  const rest = url.slice('pglite:'.length);
  if (rest === '//memory' || rest === '//memory/') {
    return memoryInUse >= max
      ? `at most ${max} pglite://memory connections can be open on this console`
      : null;
  }
  if (dataDir === undefined) {
    return 'pglite:///dir connections cannot be added on this console (the server has no --pglite-dir)';
  }
  let path: string;
  try {
    path = decodeURIComponent(rest.replace(/^\/\//, ''));
  } catch {
    return 'the pglite path is not valid percent-encoding';
  }
  // `..` is refused outright rather than resolved: no legitimate path needs it.
  if (!path.startsWith('/') || path.split('/').includes('..') || path.includes('\0')) {
    return 'a pglite path must be absolute, without ".." segments';
  }
  const root = resolve(dataDir);
  const target = resolve(path);
  if (!target.startsWith(root + sep)) return `pglite paths must lie inside ${root}`;
  return null;
}

/**
 * Whether the caller is an admin of every connection: `*` is admin and no connection is named
 * with less. What a served console asks of whoever adds, edits or removes connections — an
 * admin of one name could otherwise add a connection of that name pointing at another's
 * database, and act there with the roles of that name.
 */
export function adminOfEvery(caller: Caller): boolean {
  const roles = Object.values(caller.roles);
  return caller.roles['*'] === 'admin' && roles.every((r) => r === 'admin');
}

/**
 * Characters that do not show, or show as something else, in a name: controls, format
 * characters (zero-width joiners and spaces, bidi controls, the BOM, tag characters), line and
 * paragraph separators, private-use and unassigned code points, and the blank fillers of
 * Hangul and Braille (U+115F, U+1160, U+3164, U+FFA0, U+2800), which render as nothing.
 */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}\u115F\u1160\u3164\uFFA0\u2800]/u;

/**
 * A connection name as stored: NFKC-normalised (so `ｐｒｏｄ` and `prod` are one name), trimmed,
 * 1 to 100 characters, without invisible characters ({@link INVISIBLE}). Roles are given by
 * name, so a name that looks like another's would borrow its roles in a reader's eyes.
 */
export function checkConnectionName(name: string, what = 'a connection name'): string {
  const normal = name.normalize('NFKC').trim();
  if (normal.length === 0 || normal.length > 100) {
    throw new InvalidArgumentError(`${what} must be 1 to 100 characters long`);
  }
  if (INVISIBLE.test(normal) || !normal.isWellFormed()) {
    throw new InvalidArgumentError(
      `${what} must not contain invisible characters (controls, zero-width or bidi characters, blank fillers)`,
      { details: { option: 'name' } },
    );
  }
  return normal;
}

/** Two names with the same key are one name: NFKC, then lower case (`Prod`, `PROD`, `ｐｒｏｄ`). */
export function connectionNameKey(name: string): string {
  return name.normalize('NFKC').trim().toLowerCase();
}

/** `host:port` as compared: lower case, IPv6 in brackets. */
function target(host: string, port: string): string {
  const h = host.toLowerCase();
  return `${h.includes(':') && !h.startsWith('[') ? `[${h}]` : h}:${Number(port)}`;
}

const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[^:[\]/?#@,\s]+)(?::(\d{1,5}))?$/;

/** `--connection-hosts`: entries `host:port` (comma-separated, repeatable), as compared. */
export function parseConnectionHosts(entries: readonly string[]): string[] {
  const out: string[] = [];
  for (const entry of entries.flatMap((e) => e.split(','))) {
    const text = entry.trim();
    if (text === '') continue;
    const m = HOST_PORT.exec(text);
    const port = m?.[2] === undefined ? Number.NaN : Number(m[2]);
    if (m === null || !(port >= 1 && port <= 65_535)) {
      throw new InvalidArgumentError(
        `--connection-hosts takes host:port entries (port 1..65535, IPv6 as [::1]:5432), got '${text}'`,
      );
    }
    out.push(target(m[1]!, m[2]!));
  }
  return out;
}

/**
 * The `host:port` pairs a backend URL names in its authority, with `defaultPort` for a host
 * given without one; empty when it names none (a PGlite URL, a malformed one).
 */
export function urlTargets(url: string, defaultPort: number): string[] {
  const parts = splitUrlText(url);
  if (parts === null || parts.hosts === '') return [];
  const out: string[] = [];
  for (const h of parts.hosts.split(',')) {
    const m = HOST_PORT.exec(h);
    if (m !== null) out.push(target(m[1]!, m[2] ?? String(defaultPort)));
  }
  return out;
}

/**
 * Query options an added URL may not carry: another host or port than the authority's (which
 * the allow-list checks), a user or password outside it, files on the server (client
 * certificates and keys, CA and CRL files, a password file, a service file), or startup
 * options.
 */
const SERVER_SIDE_OPTION =
  /^(host|hostaddr|port|user|password|passfile|service|servicefile|options|ssl(cert|key|rootcert|crl|crldir|password))$/i;

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * Why a URL given through a shared console's API (`connections.add`, `connections.update`) is
 * refused, or null. Pure, no I/O: a refused host is never contacted, so the answer is the same
 * whether anything listens there. The server's own credentials must never go where a caller
 * points: every host must be on the allow-list and carry its port, and a PostgreSQL URL must
 * name its user, password, database and `sslmode` itself — `pg` would otherwise take them from
 * the server's `PGUSER`, `PGPASSWORD`, `~/.pgpass`, `PGDATABASE`, `PGPORT` and `PGSSLMODE`. No
 * query option may name a host, a credential or a file on the server (client certificates).
 */
export function addedUrlRefusal(url: string, kind: string, allowed: ReadonlySet<string>): string | null {
  if (kind === 'pglite') return null;
  const parts = splitUrlText(url);
  if (parts === null) return 'the URL must be scheme://host:port/…';
  const rest = url.slice(parts.scheme.length + 2);
  const at = rest.indexOf('@');
  if (at !== rest.lastIndexOf('@') || (at >= 0 && /[/?#]/.test(rest.slice(0, at)))) {
    return 'the URL is ambiguous: percent-encode @, /, ? and # in the user name and password (%40, %2F, %3F, %23)';
  }
  if (parts.hosts === '') {
    return 'name the host: without one the server would use its own default host or Unix socket';
  }
  for (const h of parts.hosts.split(',')) {
    const m = HOST_PORT.exec(h);
    if (m === null) return `'${h}' is not a host:port`;
    if (m[2] === undefined)
      return `give the port of ${h} (${h}:PORT): without one the server's own default would decide`;
    const t = target(m[1]!, m[2]);
    if (!allowed.has(t)) {
      return `${t} is not a host this console may reach (serve --connection-hosts); nothing was sent to it`;
    }
  }
  for (const param of (parts.query ?? '').split('&')) {
    if (param === '') continue;
    const name = decoded(param.split('=')[0]!);
    if (SERVER_SIDE_OPTION.test(name)) {
      return `the URL option '${name}' is not allowed in an added connection: it names a host, a credential or a file on the server`;
    }
  }
  if (kind === 'postgres') {
    const userinfo = parts.userinfo ?? '';
    const colon = userinfo.indexOf(':');
    const user = decoded(colon < 0 ? userinfo : userinfo.slice(0, colon));
    const password = colon < 0 ? '' : decoded(userinfo.slice(colon + 1));
    if (user === '' || password === '') {
      return (
        'an added PostgreSQL connection carries its own user and password (postgres://user:password@host:port/db): ' +
        "without them the server's PGUSER, PGPASSWORD or ~/.pgpass would be used"
      );
    }
    if (parts.path === '' || parts.path === '/') {
      return "name the database (postgres://…/dbname): without one the server's PGDATABASE would decide";
    }
    if (!/(^|&)(sslmode|ssl)=/i.test(parts.query ?? '')) {
      return "give ?sslmode= (disable, require, verify-full…): without it the server's PGSSLMODE would decide";
    }
  }
  return null;
}
