/**
 * Who is asking: the one place a request's credentials are tried, in order, and
 * every failure logged and counted.
 *
 * 1. The trusted proxy's identity header (with the proxy's secret), when a
 *    proxy is configured and the header is present: that person, or a refusal.
 * 2. `Authorization: Bearer <token>`: the token's holder; a wrong token counts
 *    as a failure of the source address, and an address past its failures is
 *    answered 429 without its token being looked at.
 * 3. The session cookie **with** the session secret (guards/sessions.ts), and
 *    only on requests that carry our Origin (a cookie is a browser credential,
 *    and browsers send Origin on the POSTs and upgrades the API uses).
 *
 * The source address is the socket's, or — on a request the trusted proxy
 * vouched for with its secret — the last `X-Forwarded-For` entry, which the
 * proxy appended: otherwise every person behind the proxy would share one
 * address and one person's failures would lock out all.
 */
import type { IncomingMessage } from 'node:http';
import type { Caller } from '../../console/access.ts';
import { type Authenticator, bearerOf, normalizeAddress } from '../auth.ts';
import type { SecurityLog } from '../security-log.ts';
import type { Limits } from './limits.ts';
import type { Session, SessionStore } from './sessions.ts';

/** The request header carrying the session secret. */
export const SESSION_SECRET_HEADER = 'x-worklease-session';
/** The WebSocket subprotocol the server answers with. */
export const WS_PROTOCOL = 'worklease';
/** The subprotocol that carries the session secret on an upgrade: `worklease.session.<secret>`. */
export const WS_SECRET_PREFIX = 'worklease.session.';

export type Identified =
  | {
      ok: true;
      caller: Caller;
      via: 'proxy' | 'token' | 'session';
      session: Session | null;
      /** Whether the session's current cookie and secret were used (only then may it rotate). */
      sessionCurrent: boolean;
      /** SHA-256 of the token presented (a Bearer), else null. */
      credential: string | null;
      address: string;
    }
  | { ok: false; status: 401 | 403 | 429; message: string; retryAfterMs?: number };

/** Every value of cookie `name` in the request, in the order sent (a tossed cookie with a longer path comes first). */
export function cookiesOf(req: IncomingMessage, name: string): string[] {
  const h = req.headers.cookie;
  if (typeof h !== 'string') return [];
  const out: string[] = [];
  for (const part of h.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const value = part.slice(eq + 1).trim();
    if (part.slice(0, eq).trim() === name && value !== '') out.push(value);
  }
  return out;
}

/** The session secret of a request: its header, or on an upgrade the `worklease.session.…` subprotocol. */
export function sessionSecretOf(req: IncomingMessage): string | null {
  const header = req.headers[SESSION_SECRET_HEADER];
  if (typeof header === 'string' && header !== '') return header;
  const protocols = req.headers['sec-websocket-protocol'];
  if (typeof protocols !== 'string') return null;
  for (const p of protocols.split(',')) {
    const t = p.trim();
    if (t.startsWith(WS_SECRET_PREFIX) && t.length > WS_SECRET_PREFIX.length)
      return t.slice(WS_SECRET_PREFIX.length);
  }
  return null;
}

export class Identifier {
  constructor(
    private readonly deps: {
      auth: () => Authenticator;
      sessions: SessionStore;
      limits: Limits;
      log: SecurityLog;
      cookieName: string;
    },
  ) {}

  /** The address limits and logs are kept by (see the file comment). */
  addressOf(req: IncomingMessage): string {
    const socketAddress = normalizeAddress(req.socket.remoteAddress);
    if (!this.deps.auth().vouchedByProxy(req, socketAddress)) return socketAddress;
    const forwarded = req.headers['x-forwarded-for'];
    const last = typeof forwarded === 'string' ? forwarded.split(',').at(-1)?.trim() : undefined;
    return last === undefined || last === '' ? socketAddress : normalizeAddress(last);
  }

  identify(req: IncomingMessage, options: { allowCookie: boolean }): Identified {
    const { log, limits, sessions } = this.deps;
    const auth = this.deps.auth();
    const socketAddress = normalizeAddress(req.socket.remoteAddress);
    const proxy = auth.fromProxy(req, socketAddress);
    if (proxy.kind === 'refused') {
      log.record('proxy-refused', { address: socketAddress, reason: proxy.reason });
      if (proxy.reason === 'wrong-secret') limits.failed(socketAddress);
      return { ok: false, status: proxy.status, message: proxy.message };
    }
    const address = this.addressOf(req);
    if (proxy.kind === 'user') {
      return {
        ok: true,
        caller: proxy.caller,
        via: 'proxy',
        session: null,
        sessionCurrent: false,
        credential: null,
        address,
      };
    }
    const bearer = bearerOf(req);
    if (bearer !== null) {
      const token = this.token(bearer, address);
      if (!token.ok) return token;
      return {
        ok: true,
        caller: token.caller,
        via: 'token',
        session: null,
        sessionCurrent: false,
        credential: token.credential,
        address,
      };
    }
    const cookies = options.allowCookie ? cookiesOf(req, this.deps.cookieName) : [];
    if (cookies.length > 0) {
      const checked = sessions.check(cookies, sessionSecretOf(req));
      if (checked.ok) {
        return {
          ok: true,
          caller: checked.session.caller,
          via: 'session',
          session: checked.session,
          sessionCurrent: checked.current,
          credential: null,
          address,
        };
      }
      if (checked.reason === 'secret') {
        // A cookie without its secret: replayed from elsewhere, or planted. Logged like a wrong token.
        limits.failed(address);
        log.record('sign-in-failed', { address, reason: 'cookie-without-secret' });
        return {
          ok: false,
          status: 401,
          message: 'this page holds no secret for the session cookie it sent: sign in again',
        };
      }
      return { ok: false, status: 401, message: 'the session has expired or ended: sign in again' };
    }
    return { ok: false, status: 401, message: 'sign in: missing console token or session' };
  }

  /** A token presented by `address`: its holder, or the refusal (locked address, wrong token), logged and counted. */
  token(
    bearer: string,
    address: string,
  ):
    | { ok: true; caller: Caller; credential: string }
    | { ok: false; status: 401 | 429; message: string; retryAfterMs?: number } {
    const { log, limits } = this.deps;
    const locked = limits.lockedFor(address);
    if (locked > 0) {
      log.record('sign-in-throttled', { address, reason: 'failures' });
      return {
        ok: false,
        status: 429,
        message: `too many failed sign-ins from ${address}: try again in ${Math.ceil(locked / 1000)} s`,
        retryAfterMs: locked,
      };
    }
    const found = this.deps.auth().byToken(bearer);
    if (found === null) {
      limits.failed(address);
      log.record('sign-in-failed', { address, reason: 'wrong-token' });
      return { ok: false, status: 401, message: 'the console token is wrong' };
    }
    return { ok: true, caller: found.caller, credential: found.credential };
  }
}
