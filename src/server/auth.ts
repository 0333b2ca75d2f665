/**
 * Who is calling the web console: tokens, a trusted proxy's identity header,
 * and the cookie sessions a page gets in exchange for a token.
 *
 * - A **token** (the console's one shared token, or a per-user token from the
 *   config file) is presented once as `Authorization: Bearer …`. Per-user
 *   tokens are stored as SHA-256 hex: tokens carry at least 128 bits of
 *   entropy (checked at start), so a fast hash is enough — there is no
 *   dictionary to try — and the file holds nothing that logs anyone in.
 * - A **proxy header** (`X-Forwarded-Email`, `X-Forwarded-User`, as
 *   oauth2-proxy sets them) names the user, and is believed only on
 *   connections from the configured proxy addresses.
 * - A **session** is what a browser page holds: `POST /api/session` with a
 *   token sets an HttpOnly, SameSite=Strict cookie carrying a random session
 *   id, so the token leaves the URL after one use and a link opened in a new
 *   tab of the same browser is signed in. The server keeps only the SHA-256 of
 *   each session id.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Caller, Role } from '../console/access.ts';
import { InvalidArgumentError } from '../lease/errors.ts';

export const SESSION_COOKIE = 'wl_session';

/** A person who may use the console. */
export interface UserEntry {
  /** The identity shown on the page and written to the audit log (for proxy users: the header's value). */
  name: string;
  /** SHA-256 (hex) of the user's token; absent for users who come only through the proxy. */
  tokenSha256?: string | undefined;
  /** Role per connection name, `*` for the others. */
  roles: Record<string, Role>;
}

export interface ProxyOptions {
  /** Addresses of the reverse proxies whose identity headers are believed (exact IPs). */
  trusted: string[];
  /** Identity headers, first present wins. Default `x-forwarded-email`, `x-forwarded-user`. */
  headers?: string[] | undefined;
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
  /** How long a session lasts after the token exchange, ms. Default 12 h. */
  sessionTtlMs?: number | undefined;
  /** Most sessions kept; the oldest is dropped beyond it. Default 10 000. */
  maxSessions?: number | undefined;
}

/** The outcome of authenticating one request. */
export type AuthResult =
  | { ok: true; caller: Caller; sessionId: string | null }
  /** 401: not authenticated (no or wrong credentials, expired session). 403: authenticated, no access. */
  | { ok: false; status: 401 | 403; message: string };

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** A new token: 32 random bytes (256 bits), base64url. */
export function generateToken(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * Fewer distinct characters than this: a pattern, not a random token. Measured
 * odds that a random token is refused by it: 2.3e-9 for 22 base64 characters
 * (16 bytes), 1e-4 for 32 hex characters, which is why hex gets its own floor.
 */
const MIN_DISTINCT = 10;
/** The same floor for a hex token: 32 random hex characters fall under 8 distinct with odds 3.5e-8. */
const MIN_DISTINCT_HEX = 8;

/**
 * What a token can carry, judged by the alphabet it was most likely drawn from: the smallest
 * standard one that holds it (hex, then base64 or base64url with its `=` padding), else the
 * character classes it uses; and the distinct characters that alphabet's random tokens show. The
 * standard alphabets come first because a random token need not show every class of its own
 * alphabet: one 22-character base64url token in 96 has no digit and no `-` or `_`, and counting
 * classes alone refused it (52 letters: 125 bits).
 */
function capacityOf(token: string): { bits: number; minDistinct: number } {
  if (/^[0-9a-fA-F]+$/.test(token)) return { bits: 4 * token.length, minDistinct: MIN_DISTINCT_HEX };
  const unpadded = token.replace(/={1,2}$/, '');
  if (/^[A-Za-z0-9+/]+$/.test(unpadded) || /^[A-Za-z0-9_-]+$/.test(unpadded)) {
    return { bits: 6 * unpadded.length, minDistinct: MIN_DISTINCT };
  }
  let pool = 0;
  if (/[a-z]/.test(token)) pool += 26;
  if (/[A-Z]/.test(token)) pool += 26;
  if (/[0-9]/.test(token)) pool += 10;
  if (/[^a-zA-Z0-9]/.test(token)) pool += 32;
  return { bits: token.length * Math.log2(pool), minDistinct: MIN_DISTINCT };
}

/**
 * Refuses a token that is malformed (empty, spaces, control or non-ASCII
 * characters: it could not travel in a URL or a Bearer header unchanged) or
 * that cannot carry 128 bits: its length × the bits per character of its
 * alphabet (`capacityOf`) under 128, or too few distinct characters. A
 * string's entropy cannot be measured, only bounded: this refuses what is
 * certainly weak (`0000000000000000`, short tokens, `abababab…`) and never a
 * token from `openssl rand -hex 16` or `-base64 16` or longer, and the docs
 * say how to generate a good one.
 */
export function checkTokenStrength(token: string, what = 'the console token'): string {
  if (token.length === 0) throw new InvalidArgumentError(`${what} is empty`);
  if (!/^[\x21-\x7e]+$/.test(token)) {
    throw new InvalidArgumentError(
      `${what} is malformed: use printable ASCII without spaces (e.g. \`openssl rand -hex 32\`)`,
    );
  }
  const { bits, minDistinct } = capacityOf(token);
  if (bits < 128 || new Set(token).size < minDistinct) {
    throw new InvalidArgumentError(
      `${what} is too weak: it must carry at least 128 bits (e.g. 32 hex or 22 base64 characters of random data, ` +
        `with at least ${minDistinct} different characters); generate one with \`openssl rand -hex 32\``,
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

interface Session {
  caller: Caller;
  expiresAt: number;
}

export class Authenticator {
  private readonly byTokenHash = new Map<string, Caller>();
  private readonly sessions = new Map<string, Session>();
  private readonly proxyTrusted: Set<string>;
  private readonly proxyHeaders: string[];
  private readonly usersByName = new Map<string, UserEntry>();
  private readonly sessionTtlMs: number;
  private readonly maxSessions: number;

  constructor(private readonly options: AuthOptions) {
    if (options.sharedToken !== null) {
      checkTokenStrength(options.sharedToken);
      this.byTokenHash.set(sha256Hex(options.sharedToken), {
        user: options.sharedUser ?? 'shared-token',
        via: 'shared-token',
        roles: options.sharedRoles,
      });
    }
    for (const u of options.users ?? []) {
      checkIdentity(u.name, `user name '${u.name.slice(0, 40)}'`);
      if (this.usersByName.has(u.name)) throw new InvalidArgumentError(`user '${u.name}' is listed twice`);
      this.usersByName.set(u.name, u);
      if (u.tokenSha256 === undefined) continue;
      const hash = u.tokenSha256.toLowerCase();
      if (!/^[0-9a-f]{64}$/.test(hash)) {
        throw new InvalidArgumentError(`user '${u.name}': tokenSha256 must be 64 hex digits (SHA-256)`);
      }
      if (this.byTokenHash.has(hash)) throw new InvalidArgumentError(`user '${u.name}': token used twice`);
      this.byTokenHash.set(hash, { user: u.name, via: 'token', roles: u.roles });
    }
    this.proxyTrusted = new Set((options.proxy?.trusted ?? []).map(normalizeAddress));
    this.proxyHeaders = (options.proxy?.headers ?? ['x-forwarded-email', 'x-forwarded-user']).map((h) =>
      h.toLowerCase(),
    );
    this.sessionTtlMs = options.sessionTtlMs ?? 12 * 60 * 60 * 1000;
    this.maxSessions = options.maxSessions ?? 10_000;
  }

  /** Whether any way of signing in exists (a console nobody can use is a configuration error). */
  get hasCredentials(): boolean {
    return this.byTokenHash.size > 0 || this.proxyTrusted.size > 0;
  }

  /**
   * Authenticates a request. `allowCookie` is false for requests without an
   * accepted Origin: a session cookie is a browser credential, and browsers
   * always send Origin on the POSTs and WebSocket upgrades the API uses.
   */
  authenticate(req: IncomingMessage, allowCookie: boolean): AuthResult {
    const proxied = this.fromProxy(req);
    if (proxied !== null) return proxied;
    const bearer = bearerOf(req);
    if (bearer !== null) {
      const caller = this.byToken(bearer);
      if (caller === null) return { ok: false, status: 401, message: 'the console token is wrong' };
      return { ok: true, caller, sessionId: null };
    }
    const sid = cookieOf(req, SESSION_COOKIE);
    if (sid !== null && allowCookie) {
      const session = this.session(sid);
      if (session !== null) return { ok: true, caller: session.caller, sessionId: sid };
      return { ok: false, status: 401, message: 'the session has expired or ended: sign in again' };
    }
    return { ok: false, status: 401, message: 'sign in: missing console token or session' };
  }

  byToken(token: string): Caller | null {
    // A Map lookup by hash: its timing reveals at most a hash prefix, which is
    // of no use without a preimage.
    return this.byTokenHash.get(sha256Hex(token)) ?? null;
  }

  /** Starts a session for `caller`; returns its id (the cookie value). */
  createSession(caller: Caller, now = Date.now()): string {
    this.prune(now);
    while (this.sessions.size >= this.maxSessions) {
      const oldest = this.sessions.keys().next().value;
      if (oldest === undefined) break;
      this.sessions.delete(oldest);
    }
    const id = randomBytes(32).toString('base64url');
    this.sessions.set(sha256Hex(id), { caller, expiresAt: now + this.sessionTtlMs });
    return id;
  }

  endSession(id: string): void {
    this.sessions.delete(sha256Hex(id));
  }

  /** Whether the session still exists and has not expired. */
  sessionValid(id: string, now = Date.now()): boolean {
    return this.session(id, now) !== null;
  }

  get sessionMaxAgeSeconds(): number {
    return Math.floor(this.sessionTtlMs / 1000);
  }

  private session(id: string, now = Date.now()): Session | null {
    const key = sha256Hex(id);
    const s = this.sessions.get(key);
    if (s === undefined) return null;
    if (s.expiresAt <= now) {
      this.sessions.delete(key);
      return null;
    }
    return s;
  }

  private prune(now: number): void {
    for (const [key, s] of this.sessions) if (s.expiresAt <= now) this.sessions.delete(key);
  }

  private fromProxy(req: IncomingMessage): AuthResult | null {
    // Without a configured proxy nobody's headers name anyone: ignored.
    if (this.proxyTrusted.size === 0) return null;
    let header: string | null = null;
    let value: string | null = null;
    for (const h of this.proxyHeaders) {
      const v = req.headers[h];
      if (typeof v === 'string' && v !== '') {
        header = h;
        value = v;
        break;
      }
    }
    if (header === null || value === null) return null;
    if (!this.proxyTrusted.has(normalizeAddress(req.socket.remoteAddress))) {
      // Said plainly rather than ignored: a header from elsewhere is either a
      // misconfigured proxy or someone trying to be somebody else.
      return {
        ok: false,
        status: 401,
        message: `the ${header} header is accepted only from a trusted proxy address`,
      };
    }
    let user: string;
    try {
      // Node reads header bytes as latin1; proxies send UTF-8 (a name like "José").
      const utf8 = Buffer.from(value, 'latin1').toString('utf8');
      user = checkIdentity(utf8.trim(), `the ${header} header`);
    } catch (err) {
      return { ok: false, status: 401, message: (err as Error).message };
    }
    const roles = this.usersByName.get(user)?.roles ?? this.options.proxy?.defaultRoles;
    if (roles === undefined) {
      return { ok: false, status: 403, message: `user '${user}' has no role on this console` };
    }
    return { ok: true, caller: { user, via: 'proxy', roles }, sessionId: null };
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
