/**
 * The PostgreSQL URL grammar, checked whole before any I/O (url.ts calls it for every
 * `postgres://` URL; the backend builds its connections from what it returns):
 *
 *     postgres[ql]://[user[:password]@][host[:port][,host[:port]…]][/database][?option=value&…]
 *
 * with libpq's meaning for a host list: the hosts are tried in order, and `target_session_attrs`
 * says which server is acceptable. `pg` itself takes one host only (its URL parser fails on a
 * list with `Invalid URL`), so the backend connects host by host, each with a one-host URL
 * ({@link PostgresUrl.hostUrl}) that `pg` reads as before.
 *
 * Every mistake is an INVALID_ARGUMENT naming the option and its allowed values: a port that is
 * not 1-65535 (`pg` took `?port=99999` and never settled), a host list given both in the authority
 * and in `?host=`, an unknown `sslmode`, and so on. Nothing here does I/O.
 */
import { InvalidArgumentError } from '../lease/errors.ts';

/** How the library reaches the server: directly, or through a connection pooler in one of its modes. */
export type PoolerMode = 'auto' | 'none' | 'session' | 'transaction';
export const POOLER_MODES: readonly PoolerMode[] = ['auto', 'none', 'session', 'transaction'];

/** Which server of a host list is acceptable (libpq's target_session_attrs, the values a lease backend can use). */
export type TargetSessionAttrs = 'read-write' | 'primary' | 'any';
export const TARGET_SESSION_ATTRS: readonly TargetSessionAttrs[] = ['read-write', 'primary', 'any'];

export const SSL_MODES = ['disable', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify'] as const;

export interface PostgresHost {
  /** A name, an IPv4 or IPv6 address (without brackets), or a Unix socket directory (starting with `/`). */
  readonly host: string;
  readonly port: number;
}

export interface PostgresUrl {
  readonly hosts: readonly PostgresHost[];
  readonly pooler: PoolerMode;
  readonly targetSessionAttrs: TargetSessionAttrs;
  /** True when the URL names target_session_attrs itself (a one-host URL then checks its server too). */
  readonly targetGiven: boolean;
  /** A one-host URL for `pg`: the same user, password, database and driver parameters, host `i`. */
  hostUrl(i: number): string;
  /** `host:port` of host `i`, for messages. */
  hostName(i: number): string;
}

/** The parameters this grammar reads itself; the others go to `pg` unchanged. */
const OWN = new Set(['host', 'port', 'pooler', 'target_session_attrs']);

const DEFAULT_PORT = 5432;

function fail(redacted: string, what: string): never {
  throw new InvalidArgumentError(`PostgreSQL URL '${redacted}': ${what}`);
}

function decode(text: string, redacted: string, what: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return fail(redacted, `${what} has a malformed %-escape`);
  }
}

function port(text: string, redacted: string, where: string): number {
  if (!/^[0-9]{1,5}$/.test(text) || Number(text) < 1 || Number(text) > 65535) {
    fail(redacted, `${where} must be a port number from 1 to 65535, got '${text}'`);
  }
  return Number(text);
}

function oneOf<T extends string>(
  value: string,
  allowed: readonly T[],
  name: string,
  redacted: string,
  why = '',
): T {
  if (!(allowed as readonly string[]).includes(value)) {
    fail(redacted, `option ${name} must be one of ${allowed.join(', ')}${why}, got '${value}'`);
  }
  return value as T;
}

/** One `host[:port]` of the authority: a name, IPv4, or `[IPv6]`. */
function authorityHost(part: string, redacted: string): { host: string; port: number | null } {
  if (part.startsWith('[')) {
    const close = part.indexOf(']');
    if (close < 0) fail(redacted, `host '${part}' has '[' without ']'`);
    const host = part.slice(1, close);
    const rest = part.slice(close + 1);
    if (rest === '') return { host, port: null };
    if (!rest.startsWith(':')) fail(redacted, `unexpected '${rest}' after host [${host}]`);
    return { host, port: port(rest.slice(1), redacted, `the port of host [${host}]`) };
  }
  const colon = part.indexOf(':');
  const host = decode(colon < 0 ? part : part.slice(0, colon), redacted, 'a host name');
  if (host === '') fail(redacted, 'the host list has an empty entry');
  if (!/^[A-Za-z0-9._-]+$/.test(host)) fail(redacted, `'${host}' is not a host name or address`);
  if (colon < 0) return { host, port: null };
  return { host, port: port(part.slice(colon + 1), redacted, `the port of host ${host}`) };
}

/**
 * Parses and checks a `postgres://` / `postgresql://` URL (worklease's own options already taken
 * out: `schema`, `callTimeoutMs`, …; see url.ts). `redacted` is the URL as messages show it.
 */
export function parsePostgresUrl(url: string, redacted: string): PostgresUrl {
  const scheme = /^postgres(ql)?:\/\//i.exec(url);
  if (scheme === null) fail(redacted, 'must start with postgres:// or postgresql://');
  let rest = url.slice(scheme[0].length);
  const hashAt = rest.indexOf('#');
  if (hashAt >= 0) rest = rest.slice(0, hashAt);
  const q = rest.indexOf('?');
  const query = q < 0 ? '' : rest.slice(q + 1);
  rest = q < 0 ? rest : rest.slice(0, q);
  const slash = rest.indexOf('/');
  const authority = slash < 0 ? rest : rest.slice(0, slash);
  const path = slash < 0 ? '' : rest.slice(slash + 1);
  if (path.includes('/')) fail(redacted, `the database name '${path}' has a '/'`);
  const at = authority.lastIndexOf('@');
  const userinfo = at < 0 ? '' : authority.slice(0, at);
  const hostList = at < 0 ? authority : authority.slice(at + 1);

  const params = new Map<string, string>();
  const passOn: string[] = [];
  for (const part of query.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const name = eq < 0 ? part : part.slice(0, eq);
    const value = decode(eq < 0 ? '' : part.slice(eq + 1).replace(/\+/g, ' '), redacted, `option ${name}`);
    params.set(name, value);
    if (!OWN.has(name)) passOn.push(part);
    checkDriverOption(name, value, redacted);
  }

  // Hosts: from the authority, or from ?host= (a list too), never both.
  let hosts: { host: string; port: number | null }[];
  const hostParam = params.get('host');
  if (hostList !== '') {
    if (hostParam !== undefined)
      fail(redacted, 'hosts are given both before the path and in ?host=: give them once');
    hosts = hostList.split(',').map((h) => authorityHost(h, redacted));
  } else if (hostParam !== undefined) {
    hosts = hostParam.split(',').map((h) => {
      if (h === '') fail(redacted, 'option host has an empty entry');
      return { host: h, port: null };
    });
  } else {
    hosts = [{ host: 'localhost', port: null }];
  }
  const portParam = params.get('port');
  if (portParam !== undefined) {
    if (hosts.some((h) => h.port !== null)) {
      fail(redacted, 'ports are given both with the hosts and in ?port=: give them once');
    }
    const ports = portParam.split(',').map((p) => port(p, redacted, 'option port'));
    if (ports.length !== 1 && ports.length !== hosts.length) {
      fail(
        redacted,
        `option port lists ${ports.length} ports for ${hosts.length} hosts (give one, or one per host)`,
      );
    }
    hosts = hosts.map((h, i) => ({ host: h.host, port: ports[ports.length === 1 ? 0 : i]! }));
  }
  const resolved: PostgresHost[] = hosts.map((h) => ({ host: h.host, port: h.port ?? DEFAULT_PORT }));

  const pooler = oneOf(params.get('pooler') ?? 'auto', POOLER_MODES, 'pooler', redacted);
  const tsa = params.get('target_session_attrs');
  const targetSessionAttrs =
    tsa === undefined
      ? 'read-write'
      : oneOf(tsa, TARGET_SESSION_ATTRS, 'target_session_attrs', redacted, ' (lease calls write)');

  const passQuery = passOn.join('&');
  const hostName = (i: number): string => {
    const h = resolved[i]!;
    return h.host.startsWith('/')
      ? `${h.host}:${h.port}`
      : `${h.host.includes(':') ? `[${h.host}]` : h.host}:${h.port}`;
  };
  return {
    hosts: resolved,
    pooler,
    targetSessionAttrs,
    targetGiven: tsa !== undefined,
    hostName,
    hostUrl(i) {
      const h = resolved[i]!;
      const user = userinfo === '' ? '' : `${userinfo}@`;
      const extra = [passQuery];
      let authorityPart: string;
      if (h.host.startsWith('/')) {
        authorityPart = '';
        extra.push(`host=${encodeURIComponent(h.host)}`, `port=${h.port}`);
      } else authorityPart = h.host.includes(':') ? `[${h.host}]:${h.port}` : `${h.host}:${h.port}`;
      const q2 = extra.filter((e) => e !== '').join('&');
      return `postgres://${user}${authorityPart}/${path}${q2 === '' ? '' : `?${q2}`}`;
    },
  };
}

/** The values of the driver parameters `pg` reads (the names are checked by url.ts's table). */
function checkDriverOption(name: string, value: string, redacted: string): void {
  switch (name) {
    case 'sslmode':
      oneOf(value, SSL_MODES, name, redacted);
      return;
    case 'ssl':
    case 'uselibpqcompat':
      oneOf(value, ['true', 'false', '1', '0'], name, redacted);
      return;
    case 'sslnegotiation':
      oneOf(value, ['postgres', 'direct'], name, redacted);
      return;
    case 'sslcert':
    case 'sslkey':
    case 'sslrootcert':
    case 'user':
    case 'client_encoding':
      if (value === '') fail(redacted, `option ${name} is empty`);
      return;
  }
}
