/**
 * Parsing of backend URLs, shared by `openBackend`, the CLI and the console, so
 * that one URL means the same thing everywhere. Nothing here does I/O.
 *
 * The URL grammar: `scheme://[user[:password]@]host…[/db][?option=value&…]`.
 * Every query option a URL may carry is in {@link URL_OPTIONS}, one table: an
 * option is either one of worklease's open options (`schema`, `keyPrefix`, …;
 * removed from the URL and merged with the caller's `OpenOptions`) or a
 * parameter of the driver (`tls`, `sslmode`, …; left in the URL for it). Any
 * other name is refused, because a driver that silently drops an unknown
 * parameter (as `pg` does) turns a typo such as `?shema=billing` into writes to
 * the default schema.
 */
import { InvalidArgumentError } from '../lease/errors.ts';
import { redactUrl as redactUrlText } from '../lease/redact.ts';
import type { BackendKind, OpenOptions } from '../lease/types.ts';
import { parsePostgresUrl } from './postgres-url.ts';

export interface ParsedBackendUrl {
  kind: BackendKind;
  /** The URL with any password replaced by `***`, safe to print and log. */
  redacted: string;
}

const SCHEMES: Record<string, BackendKind> = {
  'postgres:': 'postgres',
  'postgresql:': 'postgres',
  'redis:': 'redis',
  'rediss:': 'redis',
  'redis+cluster:': 'redis-cluster',
  // A Sentinel-managed master is one Redis server at a time: the standalone backend, following failovers.
  'redis+sentinel:': 'redis',
  'pglite:': 'pglite',
};

export function parseBackendUrl(url: unknown): ParsedBackendUrl {
  if (typeof url !== 'string' || url.length === 0) {
    throw new InvalidArgumentError('backend URL must be a non-empty string');
  }
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0]?.toLowerCase();
  const kind = scheme === undefined ? undefined : SCHEMES[scheme];
  if (kind === undefined) {
    throw new InvalidArgumentError(
      `unsupported backend URL scheme in '${redactUrl(url)}': use postgres://, postgresql://, redis://, rediss://, redis+cluster://host:port[,host:port…], redis+sentinel://host:port[,host:port…]/masterName, pglite://memory or pglite:///absolute/dir`,
    );
  }
  return { kind, redacted: redactUrl(url) };
}

/**
 * Replaces the password of `scheme://user:password@host…` and the values of secret query
 * parameters (`password=`, `sentinelPassword=`, …) with `***`; multi-host URLs and passwords
 * holding `@`, `/` or `:` included (src/lease/redact.ts).
 */
export function redactUrl(url: string): string {
  return redactUrlText(url);
}

const SQL: readonly BackendKind[] = ['postgres', 'pglite'];
const REDIS: readonly BackendKind[] = ['redis', 'redis-cluster'];
const ALL: readonly BackendKind[] = ['postgres', 'pglite', 'redis', 'redis-cluster'];

/** One query option of a backend URL. */
export interface UrlOption {
  /** The backends whose URLs accept it. */
  readonly kinds: readonly BackendKind[];
  /**
   * `open`: a worklease open option of the same name, taken out of the URL and
   * checked by `openBackend` like the `OpenOptions` field. `driver`: a driver
   * parameter, left in the URL for the driver.
   */
  readonly to: 'open' | 'driver';
  /** Text → value, for open options; throws InvalidArgumentError. Default: the text. */
  readonly parse?: (text: string, name: string) => unknown;
  /** For the docs and `--help`. */
  readonly about: string;
}

function wholeNumber(text: string, name: string): number {
  if (!/^[0-9]{1,15}$/.test(text)) {
    throw new InvalidArgumentError(`URL option ${name} must be a whole number, got '${text}'`);
  }
  return Number(text);
}

function decimal(text: string, name: string): number {
  if (!/^[0-9]{1,6}(\.[0-9]{1,6})?$/.test(text)) {
    throw new InvalidArgumentError(`URL option ${name} must be a decimal number such as 0.1, got '${text}'`);
  }
  return Number(text);
}

/**
 * Every query option a backend URL may carry. To add an open option, add its
 * `OpenOptions` field and one row here; the CLI and the console pick it up.
 * `migrate` is not a URL option: it is the caller's decision, never the URL's.
 */
export const URL_OPTIONS: Readonly<Record<string, UrlOption>> = {
  schema: { kinds: SQL, to: 'open', about: 'Postgres/PGlite schema (default worklease)' },
  keyPrefix: { kinds: REDIS, to: 'open', about: 'Redis key prefix (default worklease)' },
  callTimeoutMs: {
    kinds: ALL,
    to: 'open',
    parse: wholeNumber,
    about: 'how long one call may wait for the server, ms (default 10000)',
  },
  busyPollMs: {
    kinds: REDIS,
    to: 'open',
    parse: decimal,
    about: 'how long a lone lease call busy-polls for its reply, ms (default 0.2; 0 never)',
  },
  poolSize: { kinds: ['postgres'], to: 'open', parse: wholeNumber, about: 'connections (default 10)' },
  maxStateBytes: {
    kinds: ALL,
    to: 'open',
    parse: wholeNumber,
    about: 'largest checkpoint accepted, bytes (default 1048576)',
  },
  tls: { kinds: REDIS, to: 'driver', about: 'true: connect with TLS (as rediss://)' },
  db: {
    kinds: ['redis'],
    to: 'driver',
    about: 'redis+sentinel:// only: database number (default 0; redis:// has it as the path)',
  },
  sentinelPassword: {
    kinds: ['redis'],
    to: 'driver',
    about: "redis+sentinel:// only: the sentinels' password (redacted in every message)",
  },
  // node-postgres parameters that make sense for a lease backend. Left out on
  // purpose: application_name and options (the backend sets them: the
  // connection name operators find it by, and the plan cache mode), and the
  // timeouts (callTimeoutMs sets them).
  host: {
    kinds: ['postgres'],
    to: 'driver',
    about: 'host or Unix socket directory; a comma list is tried in order',
  },
  port: { kinds: ['postgres'], to: 'driver', about: 'port 1-65535 (one, or one per host)' },
  target_session_attrs: {
    kinds: ['postgres'],
    to: 'driver',
    about: 'which host of a list to use: read-write (default), primary, any',
  },
  pooler: {
    kinds: ['postgres'],
    to: 'driver',
    about:
      'auto (default: detected), none, session or transaction: a connection pooler in between and its mode',
  },
  user: { kinds: ['postgres'], to: 'driver', about: 'role name' },
  password: { kinds: ['postgres'], to: 'driver', about: 'password (redacted in every message)' },
  ssl: { kinds: ['postgres'], to: 'driver', about: 'true/1: connect with TLS' },
  sslmode: {
    kinds: ['postgres'],
    to: 'driver',
    about: 'disable, prefer, require, verify-ca, verify-full, no-verify',
  },
  sslcert: { kinds: ['postgres'], to: 'driver', about: 'client certificate file' },
  sslkey: { kinds: ['postgres'], to: 'driver', about: 'client key file' },
  sslrootcert: { kinds: ['postgres'], to: 'driver', about: 'CA certificate file' },
  sslnegotiation: { kinds: ['postgres'], to: 'driver', about: 'postgres or direct' },
  uselibpqcompat: { kinds: ['postgres'], to: 'driver', about: 'true: libpq semantics for sslmode' },
  client_encoding: { kinds: ['postgres'], to: 'driver', about: 'client encoding' },
};

/** The option names a URL of this kind accepts, in table order. */
export function urlOptionNames(kind: BackendKind): string[] {
  return Object.entries(URL_OPTIONS)
    .filter(([, o]) => o.kinds.includes(kind))
    .map(([name]) => name);
}

/** A backend URL resolved against the caller's options. */
export interface BackendAddress {
  kind: BackendKind;
  /** The URL for the driver: the driver parameters stay, worklease's open options are removed. */
  driverUrl: string;
  /** {@link driverUrl} with passwords replaced by `***`. */
  redactedDriverUrl: string;
  /** The caller's options merged with the URL's (a conflict between the two is refused). */
  options: OpenOptions;
}

function splitQuery(url: string): { base: string; query: string; hash: string } {
  const q = url.indexOf('?');
  if (q < 0) return { base: url, query: '', hash: '' };
  const h = url.indexOf('#', q);
  return {
    base: url.slice(0, q),
    query: url.slice(q + 1, h < 0 ? undefined : h),
    hash: h < 0 ? '' : url.slice(h),
  };
}

/**
 * Splits a backend URL into the driver's URL and worklease's open options,
 * checked before any I/O: an unknown option is refused naming the known ones;
 * an option given twice in the URL, or in the URL and in `options` with
 * different values, is refused. Options only in `options` pass through (they are
 * checked by `openBackend`).
 */
export function resolveBackendUrl(url: unknown, options: OpenOptions = {}): BackendAddress {
  const { kind } = parseBackendUrl(url);
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new InvalidArgumentError('options must be an object');
  }
  const text = url as string;
  const redacted = redactUrl(text);
  const { base, query, hash } = splitQuery(text);
  const kept: string[] = [];
  const fromUrl: Record<string, unknown> = {};
  const seen = new Set<string>();
  for (const part of query.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const name = eq < 0 ? part : part.slice(0, eq);
    const option = Object.hasOwn(URL_OPTIONS, name) ? URL_OPTIONS[name] : undefined;
    if (option === undefined || !option.kinds.includes(kind)) {
      throw new InvalidArgumentError(
        `unknown option '${name}' in backend URL '${redacted}' (known for ${kind}: ${urlOptionNames(kind).join(', ')})`,
      );
    }
    if (seen.has(name)) {
      throw new InvalidArgumentError(`option '${name}' is given twice in backend URL '${redacted}'`);
    }
    seen.add(name);
    if (option.to === 'driver') {
      kept.push(part);
      continue;
    }
    let value: string;
    try {
      value = decodeURIComponent((eq < 0 ? '' : part.slice(eq + 1)).replace(/\+/g, ' '));
    } catch {
      throw new InvalidArgumentError(
        `option '${name}' in backend URL '${redacted}' has a malformed %-escape`,
      );
    }
    fromUrl[name] = option.parse === undefined ? value : option.parse(value, name);
  }
  const merged: Record<string, unknown> = { ...(options as Record<string, unknown>) };
  for (const [name, value] of Object.entries(fromUrl)) {
    const given = merged[name];
    if (given !== undefined && given !== value) {
      throw new InvalidArgumentError(
        `option '${name}' is '${String(value)}' in the backend URL but '${String(given)}' in the options: give it once`,
      );
    }
    merged[name] = value;
  }
  const driverUrl = `${base}${kept.length > 0 ? `?${kept.join('&')}` : ''}${hash}`;
  // The driver's part of the URL, checked whole before any I/O (ports, host lists, option values).
  if (kind === 'postgres') parsePostgresUrl(driverUrl, redactUrl(driverUrl));
  return { kind, driverUrl, redactedDriverUrl: redactUrl(driverUrl), options: merged as OpenOptions };
}

/**
 * The URL a backend reports (`backend.url`) and names in its messages: the
 * driver URL, passwords redacted, with the namespace it works in made explicit
 * (`?schema=` for Postgres/PGlite, `?keyPrefix=` for Redis), so an operator
 * reading a message knows which data it is about, and can paste the URL back
 * into the CLI or the console.
 */
export function effectiveUrl(
  address: Pick<BackendAddress, 'kind' | 'redactedDriverUrl'>,
  resolved: { schema: string; keyPrefix: string },
): string {
  const [name, value] =
    address.kind === 'postgres' || address.kind === 'pglite'
      ? ['schema', resolved.schema]
      : ['keyPrefix', resolved.keyPrefix];
  const { base, query, hash } = splitQuery(address.redactedDriverUrl);
  const params = query === '' ? [] : [query];
  params.push(`${name}=${encodeURIComponent(value)}`);
  return `${base}?${params.join('&')}${hash}`;
}

/**
 * The command that creates or upgrades the schema of the backend at `url` (an
 * effective URL, see {@link effectiveUrl}), for hints in messages: the
 * namespace as a CLI flag (`--schema billing`, `--key-prefix jobs`), which an
 * operator can paste as is (after putting the password back, if any).
 */
export function migrateCommandFor(url: string): string {
  try {
    const { kind, redactedDriverUrl, options } = resolveBackendUrl(url);
    const flag =
      kind === 'postgres' || kind === 'pglite'
        ? options.schema === undefined
          ? ''
          : ` --schema ${options.schema}`
        : options.keyPrefix === undefined
          ? ''
          : ` --key-prefix ${options.keyPrefix}`;
    return `worklease migrate ${redactedDriverUrl}${flag}`;
  } catch {
    return `worklease migrate ${redactUrl(url)}`;
  }
}
