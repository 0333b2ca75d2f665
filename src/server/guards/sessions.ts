/**
 * Browser sessions of a served console. A session is two secrets, and neither
 * alone is one:
 *
 * - a **cookie** (HttpOnly, SameSite=Strict; `__Host-` prefixed and Secure over
 *   TLS), which the browser sends by itself but which every web server on the
 *   same host receives as well — cookies are not isolated by port, and
 *   SameSite counts every port of 127.0.0.1 as one site — and which any of them
 *   can set (cookie tossing);
 * - a **session secret** the page keeps in its own origin's storage and sends
 *   as the `X-Worklease-Session` header (and in the WebSocket subprotocol list,
 *   the one place a browser lets a page put it on an upgrade). Storage is
 *   isolated by origin, port included: another port can neither read it nor
 *   set it.
 *
 * So a cookie received by another local server replays into nothing, and a
 * cookie it plants (fixation) names a session the page holds no secret for.
 *
 * The server keeps only SHA-256 hashes of both. Sessions end when idle (no
 * request and no open event stream for `idleMs`), at `lifetimeMs` after sign-in
 * whatever happens, on sign-out (this one, or every one of the user), on
 * revocation (a config reload that drops the token, an admin's call), and
 * when the user's own count passes `maxPerIdentity` (their least recently used
 * one). Both secrets are replaced every `rotateMs` while the session is used
 * (as Grafana rotates its session token), the previous pair staying valid for
 * `rotateGraceMs` so requests in flight and other tabs do not fail.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Caller } from '../../console/access.ts';

export interface SessionOptions {
  /** A session without requests or open event streams for this long ends, ms. Default 3 600 000 (1 h). */
  idleMs?: number;
  /** A session ends this long after sign-in whatever happens, ms. Default 43 200 000 (12 h). */
  lifetimeMs?: number;
  /** The cookie and the secret are replaced this often while used, ms. Default 600 000 (10 min). */
  rotateMs?: number;
  /** How long the replaced pair still works, ms. Default 60 000. */
  rotateGraceMs?: number;
  /** Sessions per user; a new one ends that user's least recently used. Default 20. */
  maxPerIdentity?: number;
  /** Sessions per source address; past it a sign-in from there is refused (429). Default 200. */
  maxPerAddress?: number;
  /** Sessions in all; past it a sign-in is refused (503). Default 10 000. */
  maxTotal?: number;
  now?: () => number;
}

export interface Session {
  /** For the security log: the first 12 hex digits of a hash of the session's key. Signs nobody in. */
  readonly ref: string;
  caller: Caller;
  /** `via:user`: the unit of the per-user caps and of "sign out everywhere". */
  readonly identity: string;
  readonly address: string;
  /** SHA-256 of the token the session was created with, so revoking the token ends it. */
  readonly credential: string;
  readonly createdAt: number;
  lastSeenAt: number;
  /** Open event streams: a session with one open is not idle. */
  streams: number;
  ended: boolean;
}

interface Keys {
  cookie: string;
  secret: string;
}

interface Entry {
  session: Session;
  current: Keys;
  previous: Keys | null;
  rotatedAt: number;
}

export type SessionCheck =
  | { ok: true; session: Session; current: boolean }
  | { ok: false; reason: 'unknown' | 'expired' | 'secret' };

export type SessionCreate =
  | { ok: true; session: Session; cookie: string; secret: string; replaced: Session | null }
  | { ok: false; status: 429 | 503; message: string; reason: string };

const hash = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');
const newSecret = (): string => randomBytes(32).toString('base64url');

function sameHash(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a, 'hex'), Buffer.from(b, 'hex'));
}

export class SessionStore {
  readonly idleMs: number;
  readonly lifetimeMs: number;
  private readonly rotateMs: number;
  private readonly graceMs: number;
  private readonly maxPerIdentity: number;
  private readonly maxPerAddress: number;
  private readonly maxTotal: number;
  private readonly now: () => number;
  /** By the hash of the current cookie, and of the previous one during its grace. */
  private readonly byCookie = new Map<string, Entry>();
  /** Every live entry, least recently used first. */
  private readonly entries = new Map<Session, Entry>();

  constructor(options: SessionOptions = {}) {
    this.idleMs = options.idleMs ?? 3_600_000;
    this.lifetimeMs = options.lifetimeMs ?? 43_200_000;
    this.rotateMs = options.rotateMs ?? 600_000;
    this.graceMs = options.rotateGraceMs ?? 60_000;
    this.maxPerIdentity = options.maxPerIdentity ?? 20;
    this.maxPerAddress = options.maxPerAddress ?? 200;
    this.maxTotal = options.maxTotal ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * A new session. Refused when the address or the console is full (never by ending someone
   * else's); at the user's own cap, the user's least recently used session ends (`replaced`).
   */
  create(caller: Caller, address: string, credential: string): SessionCreate {
    const now = this.now();
    this.prune(now);
    const identity = `${caller.via}:${caller.user}`;
    if (this.entries.size >= this.maxTotal) {
      return {
        ok: false,
        status: 503,
        message: 'the console holds as many sessions as it can',
        reason: 'total',
      };
    }
    let mine = 0;
    let atAddress = 0;
    let oldestMine: Session | null = null;
    for (const s of this.entries.keys()) {
      if (s.identity === identity) {
        mine++;
        oldestMine ??= s;
      }
      if (s.address === address) atAddress++;
    }
    if (atAddress >= this.maxPerAddress && mine < this.maxPerIdentity) {
      return {
        ok: false,
        status: 429,
        message: `too many sessions from ${address} (at most ${this.maxPerAddress}): sign out elsewhere or wait`,
        reason: 'address',
      };
    }
    let replaced: Session | null = null;
    if (mine >= this.maxPerIdentity && oldestMine !== null) {
      replaced = oldestMine;
      this.end(oldestMine);
    }
    const cookie = newSecret();
    const secret = newSecret();
    const session: Session = {
      ref: hash(hash(cookie)).slice(0, 12),
      caller,
      identity,
      address,
      credential,
      createdAt: now,
      lastSeenAt: now,
      streams: 0,
      ended: false,
    };
    const entry: Entry = {
      session,
      current: { cookie: hash(cookie), secret: hash(secret) },
      previous: null,
      rotatedAt: now,
    };
    this.entries.set(session, entry);
    this.byCookie.set(entry.current.cookie, entry);
    return { ok: true, session, cookie, secret, replaced };
  }

  /** The session these cookies and this secret name together (several cookies of the name may come: a tossed one first). */
  check(cookies: readonly string[], secret: string | null): SessionCheck {
    const now = this.now();
    let seen: SessionCheck = { ok: false, reason: 'unknown' };
    for (const cookie of cookies) {
      const key = hash(cookie);
      const entry = this.byCookie.get(key);
      if (entry === undefined) continue;
      if (!this.alive(entry.session, now)) {
        this.end(entry.session);
        seen = { ok: false, reason: 'expired' };
        continue;
      }
      const inGrace = entry.previous !== null && now - entry.rotatedAt < this.graceMs;
      const cookieCurrent = key === entry.current.cookie;
      if (!cookieCurrent && !inGrace) continue;
      if (secret === null) {
        seen = { ok: false, reason: 'secret' };
        continue;
      }
      const s = hash(secret);
      const secretCurrent = sameHash(s, entry.current.secret);
      if (!secretCurrent && !(inGrace && entry.previous !== null && sameHash(s, entry.previous.secret))) {
        seen = { ok: false, reason: 'secret' };
        continue;
      }
      return { ok: true, session: entry.session, current: cookieCurrent && secretCurrent };
    }
    return seen;
  }

  /** Marks a request of the session (it is not idle, and is now its user's most recently used). */
  touch(session: Session): void {
    const entry = this.entries.get(session);
    if (entry === undefined) return;
    session.lastSeenAt = this.now();
    this.entries.delete(session);
    this.entries.set(session, entry);
  }

  /** An event stream of the session opened: it is not idle while one is open. */
  streamOpened(session: Session): void {
    session.streams++;
  }

  /** An event stream of the session closed: idle time counts from now. */
  streamClosed(session: Session): void {
    session.streams--;
    session.lastSeenAt = this.now();
  }

  /**
   * New cookie and secret when the pair is older than `rotateMs` and the request came with
   * the current pair (a lagging tab's old pair never triggers another turn); null otherwise.
   */
  rotate(session: Session, usedCurrent: boolean): { cookie: string; secret: string } | null {
    const entry = this.entries.get(session);
    const now = this.now();
    if (entry === undefined || !usedCurrent || now - entry.rotatedAt < this.rotateMs) return null;
    if (entry.previous !== null) this.byCookie.delete(entry.previous.cookie);
    const cookie = newSecret();
    const secret = newSecret();
    entry.previous = entry.current;
    entry.current = { cookie: hash(cookie), secret: hash(secret) };
    entry.rotatedAt = now;
    this.byCookie.set(entry.current.cookie, entry);
    return { cookie, secret };
  }

  /** Whether the session still stands: not ended, not idle past `idleMs`, not past `lifetimeMs`. */
  alive(session: Session, now = this.now()): boolean {
    if (session.ended) return false;
    if (now - session.createdAt >= this.lifetimeMs) return false;
    return session.streams > 0 || now - session.lastSeenAt < this.idleMs;
  }

  end(session: Session): void {
    const entry = this.entries.get(session);
    session.ended = true;
    if (entry === undefined) return;
    this.entries.delete(session);
    this.byCookie.delete(entry.current.cookie);
    if (entry.previous !== null) this.byCookie.delete(entry.previous.cookie);
  }

  /** Ends every session `pick` chooses; returns them. */
  endWhere(pick: (s: Session) => boolean): Session[] {
    const out = [...this.entries.keys()].filter(pick);
    for (const s of out) this.end(s);
    return out;
  }

  /** Sessions that ran out (idle or lifetime), ended and returned, so their streams can be closed and logged. */
  prune(now = this.now()): Session[] {
    return this.endWhere((s) => !this.alive(s, now));
  }

  /** Every live session (for a config reload to re-check). */
  all(): Session[] {
    return [...this.entries.keys()];
  }
}
