/**
 * Who may use a served console, and how a request names them: tokens and a
 * trusted proxy's identity header. Browser sessions (a cookie bound to a second
 * secret) are in guards/sessions.ts; the order in which a request's credentials
 * are tried is guards/identify.ts.
 *
 * - A **token** (the console's one shared token, or a per-user token from the
 *   config file) is presented as `Authorization: Bearer …`. Per-user tokens
 *   are stored as SHA-256 hex: tokens carry at least 128 bits by their
 *   alphabet and 80 by the pattern estimate (checked at start, src/server/entropy.ts),
 *   so a fast hash is enough — there is no dictionary to try — and the file
 *   holds nothing that signs anyone in.
 * - A **proxy** names the user in one configured header (`X-Forwarded-Email`
 *   by default), believed only on connections from the configured proxy
 *   addresses that also carry the proxy's shared secret header: an address
 *   alone proves nothing on a machine where every local process can connect
 *   from 127.0.0.1.
 * - Token users and proxy users are separate namespaces: a `users` entry with a
 *   `tokenSha256` is a token user and is never matched by a proxy header; one
 *   without is a proxy user; a proxy header naming a token user (or the shared
 *   token's name) is refused, so the audit log's names stay unambiguous.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Caller, Role } from '../console/access.ts';
import { InvalidArgumentError } from '../lease/errors.ts';
import { capacityOf, estimateEntropyBits } from './entropy.ts';

/** A person who may use the console. */
export interface UserEntry {
  /** The identity shown on the page and written to the audit log (for proxy users: the header's value). */
  name: string;
  /** SHA-256 (hex) of the user's token: a token user. Absent: a proxy user, named only by the proxy's header. */
  tokenSha256?: string | undefined;
  /** Role per connection name, `*` for the others. */
  roles: Record<string, Role>;
}

export interface ProxyOptions {
  /** Addresses of the reverse proxies whose identity header is believed (exact IPs). */
  trusted: string[];
  /** The one identity header. Default `x-forwarded-email`. No other header is consulted. */
  header?: string | undefined;
  /**
   * The secret the proxy sends on every request (at least 128 bits, as a token), in
   * {@link secretHeader}. Required: without it any local process could name itself.
   */
  secret: string;
  /** The header carrying {@link secret}. Default `x-worklease-proxy-secret`. */
  secretHeader?: string | undefined;
  /** Roles of a proxy user not listed in `users`. Default none: such a user is refused (403). */
  defaultRoles?: Record<string, Role> | undefined;
}

export interface AuthOptions {
  /** The console's one shared token; null when only per-user tokens or the proxy authenticate. */
  sharedToken: string | null;
  /** Roles of whoever holds the shared token. */
  sharedRoles: Record<string, Role>;
  /** The name the shared token's holder gets in the audit log. Default `shared-token`. */
  sharedUser?: string | undefined;
  users?: UserEntry[] | undefined;
  proxy?: ProxyOptions | null | undefined;
}

export const DEFAULT_PROXY_HEADER = 'x-forwarded-email';
export const DEFAULT_PROXY_SECRET_HEADER = 'x-worklease-proxy-secret';

/** A caller established from a token, with the hash that names the token (sessions remember it). */
export interface TokenIdentity {
  caller: Caller;
  credential: string;
}

/** What the proxy's headers say about a request: nothing, a person, or a refusal. */
export type ProxyVerdict =
  | { kind: 'none' }
  | { kind: 'user'; caller: Caller }
  | { kind: 'refused'; status: 401 | 403; message: string; reason: string };

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** A new token: 32 random bytes (256 bits), base64url. */
export function generateToken(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * The floor of the pattern estimate (src/server/entropy.ts). Far below 128 because the
 * estimate of a random token at exactly 128 bits loses bits to chance patterns: over
 * 2 000 000 tokens each of `openssl rand -hex 16`, `-base64 16` and 16 random bytes in
 * base64url, most lost none, 2.5 % of the hex ones about 8 bits, and the largest losses were
 * 26, 31 and 37 bits (`npx tsx bench/token-entropy.ts --tokens 2000000`). A floor of 128 would refuse one hex token in 40; 80 leaves 11 bits
 * of margin over the worst seen. A made-up token lands far below it (`0123456789abcdef`
 * twice: 28 bits; `passwordpassword1234567890`: 21), and 80 bits is still beyond any online
 * guessing.
 */
export const MIN_ESTIMATED_BITS = 80;

/**
 * Refuses a token that is malformed (empty, spaces, control or non-ASCII characters: it could
 * not travel in a URL or a Bearer header unchanged), that cannot carry 128 bits (its length ×
 * the bits per character of its alphabet), or whose estimated entropy is under
 * {@link MIN_ESTIMATED_BITS}: runs (`0123…`, `aaaa`), repeats, common words and keyboard
 * rows cost almost nothing to guess. A string's entropy cannot be measured, only bounded:
 * this refuses what is certainly weak and never a token from `openssl rand -hex 16` or
 * `-base64 16` or longer, and the docs say how to generate a good one.
 */
export function checkTokenStrength(token: string, what = 'the console token'): string {
  if (token.length === 0) throw new InvalidArgumentError(`${what} is empty`);
  if (!/^[\x21-\x7e]+$/.test(token)) {
    throw new InvalidArgumentError(
      `${what} is malformed: use printable ASCII without spaces (e.g. \`openssl rand -hex 32\`)`,
    );
  }
  const { bits } = capacityOf(token);
  const estimated = estimateEntropyBits(token);
  if (bits < 128 || estimated < MIN_ESTIMATED_BITS) {
    throw new InvalidArgumentError(
      `${what} is too weak: it must carry at least 128 bits of random data (e.g. 32 hex or 22 base64 characters), ` +
        `and patterns (runs, repeats, words) do not count (estimated: ${Math.floor(estimated)} bits); ` +
        'generate one with `openssl rand -hex 32`',
    );
  }
  return token;
}

/** `::ffff:127.0.0.1` → `127.0.0.1`, so trusted addresses can be written plainly. */
export function normalizeAddress(address: string | undefined): string {
  if (address === undefined) return '';
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/** An identity from a header or the config: printable, one line, no invisible characters. */
export function checkIdentity(name: string, what: string): string {
  if (name.length === 0 || name.length > 200) {
    throw new InvalidArgumentError(`${what} must be 1 to 200 characters long`);
  }
  if (/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u.test(name) || !name.isWellFormed()) {
    throw new InvalidArgumentError(`${what} must not contain control or invisible characters`);
  }
  return name;
}

/** Equal strings in time independent of where they differ (both are hashed first, so lengths do not leak). */
function secretEquals(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}

export class Authenticator {
  private readonly byTokenHash = new Map<string, Caller>();
  /** Names that belong to token holders (the shared token's included): never a proxy identity. */
  private readonly tokenNames = new Set<string>();
  private readonly proxyUsers = new Map<string, UserEntry>();
  private readonly proxyTrusted: Set<string>;
  private readonly proxyHeader: string;
  private readonly proxySecretHeader: string;

  constructor(private readonly options: AuthOptions) {
    if (options.sharedToken !== null) {
      checkTokenStrength(options.sharedToken);
      const user = options.sharedUser ?? 'shared-token';
      this.byTokenHash.set(sha256Hex(options.sharedToken), {
        user,
        via: 'shared-token',
        roles: options.sharedRoles,
      });
      this.tokenNames.add(user);
    }
    const names = new Set<string>();
    for (const u of options.users ?? []) {
      checkIdentity(u.name, `user name '${u.name.slice(0, 40)}'`);
      if (names.has(u.name)) throw new InvalidArgumentError(`user '${u.name}' is listed twice`);
      names.add(u.name);
      if (u.tokenSha256 === undefined) {
        this.proxyUsers.set(u.name, u);
        continue;
      }
      const hash = u.tokenSha256.toLowerCase();
      if (!/^[0-9a-f]{64}$/.test(hash)) {
        throw new InvalidArgumentError(`user '${u.name}': tokenSha256 must be 64 hex digits (SHA-256)`);
      }
      if (this.byTokenHash.has(hash)) throw new InvalidArgumentError(`user '${u.name}': token used twice`);
      if (this.tokenNames.has(u.name)) {
        throw new InvalidArgumentError(`user '${u.name}' has the shared token's name: give it another`);
      }
      this.byTokenHash.set(hash, { user: u.name, via: 'token', roles: u.roles });
      this.tokenNames.add(u.name);
    }
    const proxy = options.proxy ?? null;
    if (proxy !== null) {
      if (proxy.trusted.length === 0)
        throw new InvalidArgumentError('proxy.trusted must name at least one address');
      if (typeof proxy.secret !== 'string' || proxy.secret === '') {
        throw new InvalidArgumentError(
          'a trusted proxy needs a shared secret (WORKLEASE_PROXY_SECRET or --proxy-secret-file) that it sends on every request: ' +
            'without one, any process that can connect from a trusted address could name itself anyone',
        );
      }
      checkTokenStrength(proxy.secret, 'the proxy secret');
    }
    this.proxyTrusted = new Set((proxy?.trusted ?? []).map(normalizeAddress));
    this.proxyHeader = (proxy?.header ?? DEFAULT_PROXY_HEADER).toLowerCase();
    this.proxySecretHeader = (proxy?.secretHeader ?? DEFAULT_PROXY_SECRET_HEADER).toLowerCase();
    if (proxy !== null && this.proxyHeader === this.proxySecretHeader) {
      throw new InvalidArgumentError('proxy.header and proxy.secretHeader must be different headers');
    }
  }

  /** Whether any way of signing in exists (a console nobody can use is a configuration error). */
  get hasCredentials(): boolean {
    return this.byTokenHash.size > 0 || this.proxyTrusted.size > 0;
  }

  /** The holder of `token`, or null. A Map lookup by hash: its timing reveals at most a hash prefix, of no use without a preimage. */
  byToken(token: string): TokenIdentity | null {
    const credential = sha256Hex(token);
    const caller = this.byTokenHash.get(credential);
    return caller === undefined ? null : { caller, credential };
  }

  /** The caller a token hash (a session's credential) names under this configuration, or null when it was revoked. */
  byCredential(credential: string): Caller | null {
    return this.byTokenHash.get(credential) ?? null;
  }

  /** The caller a proxy identity names under this configuration, or null (no role, or a token user's name). */
  proxyCaller(user: string): Caller | null {
    if (this.proxyTrusted.size === 0 || this.tokenNames.has(user)) return null;
    const roles = this.proxyUsers.get(user)?.roles ?? this.options.proxy?.defaultRoles;
    return roles === undefined ? null : { user, via: 'proxy', roles };
  }

  /** Whether the request came through the trusted proxy: from its address, with its secret. */
  vouchedByProxy(req: IncomingMessage, address: string): boolean {
    if (!this.proxyTrusted.has(address)) return false;
    const secret = req.headers[this.proxySecretHeader];
    return typeof secret === 'string' && secretEquals(secret, this.options.proxy?.secret ?? '');
  }

  /**
   * The proxy's word on a request. Without a configured proxy, or without the identity header,
   * `none` (the request is authenticated otherwise). With it: refused unless the connection comes
   * from a trusted address and carries the secret; the value must be a well-formed name (an
   * empty value is refused, never taken as "no proxy user"); then the user's roles.
   */
  fromProxy(req: IncomingMessage, address: string): ProxyVerdict {
    if (this.proxyTrusted.size === 0) return { kind: 'none' };
    const value = req.headers[this.proxyHeader];
    if (value === undefined) return { kind: 'none' };
    const header = this.proxyHeader;
    if (!this.proxyTrusted.has(address)) {
      // Said plainly rather than ignored: a header from elsewhere is either a
      // misconfigured proxy or someone trying to be somebody else.
      return {
        kind: 'refused',
        status: 401,
        message: `the ${header} header is accepted only from a trusted proxy`,
        reason: 'untrusted-address',
      };
    }
    const secret = req.headers[this.proxySecretHeader];
    if (typeof secret !== 'string' || !secretEquals(secret, this.options.proxy?.secret ?? '')) {
      return {
        kind: 'refused',
        status: 401,
        message: `the ${header} header is accepted only with the proxy's secret (${this.proxySecretHeader})`,
        reason: typeof secret === 'string' ? 'wrong-secret' : 'no-secret',
      };
    }
    let user: string;
    try {
      if (typeof value !== 'string') throw new InvalidArgumentError(`the ${header} header is given twice`);
      // Node reads header bytes as latin1; proxies send UTF-8 (a name like "José").
      user = checkIdentity(Buffer.from(value, 'latin1').toString('utf8').trim(), `the ${header} header`);
    } catch (err) {
      return { kind: 'refused', status: 401, message: (err as Error).message, reason: 'malformed-identity' };
    }
    if (this.tokenNames.has(user)) {
      return {
        kind: 'refused',
        status: 403,
        message: `'${user}' is the name of a token user; the proxy cannot sign in as one`,
        reason: 'token-user-name',
      };
    }
    const caller = this.proxyCaller(user);
    if (caller === null) {
      return {
        kind: 'refused',
        status: 403,
        message: `user '${user}' has no role on this console`,
        reason: 'no-role',
      };
    }
    return { kind: 'user', caller };
  }
}

export function bearerOf(req: IncomingMessage): string | null {
  const h = req.headers.authorization;
  if (typeof h !== 'string') return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m?.[1] ?? null;
}

export function cookieOf(req: IncomingMessage, name: string): string | null {
  const h = req.headers.cookie;
  if (typeof h !== 'string') return null;
  for (const part of h.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim() || null;
  }
  return null;
}
