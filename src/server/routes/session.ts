/**
 * `/api/session`: browser sessions, for the console's own page only (our
 * Origin, since the cookie and the secret are its).
 *
 * - `POST` with `Authorization: Bearer <token>` signs in: a new session, its
 *   cookie in `Set-Cookie` and its secret in the body (`{ secret, user, via }`)
 *   for the page to keep in its origin's storage. Always a new session: a
 *   cookie the browser already had is never reused (no fixation), and if it
 *   named a session of this page (with its secret) that one ends.
 * - `DELETE` signs out this session; `?everywhere=1` every session of the
 *   caller; `?user=NAME` (an admin of every connection) every session and
 *   stream of that person — tokens and proxy identities stay valid: revoking a
 *   token is a config change (`SIGHUP`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { adminOfEvery } from '../../console/access.ts';
import { CLOSE_UNAUTHENTICATED } from '../../console/api.ts';
import { InvalidArgumentError } from '../../lease/errors.ts';
import { bearerOf } from '../auth.ts';
import { cookiesOf, type Identifier, sessionSecretOf } from '../guards/identify.ts';
import type { Limits } from '../guards/limits.ts';
import type { Session, SessionStore } from '../guards/sessions.ts';
import { errData, forbidden, sendError, sendJson, tooMany, unauthorized } from '../respond.ts';
import type { SecurityLog } from '../security-log.ts';
import type { EventStreams } from './events.ts';

/** The cookie's name and attributes: `__Host-` and Secure over TLS, so no other origin can set it there. */
export interface CookieJar {
  readonly name: string;
  set(value: string, maxAgeS: number): string;
  clear(): string;
}

export function cookieJar(secure: boolean): CookieJar {
  const name = secure ? '__Host-wl_session' : 'wl_session';
  const attributes = (maxAge: number): string =>
    `Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${secure ? '; Secure' : ''}`;
  return {
    name,
    set: (value, maxAgeS) => `${name}=${value}; ${attributes(maxAgeS)}`,
    clear: () => `${name}=; ${attributes(0)}`,
  };
}

export function createSessionRoute(options: {
  identifier: Identifier;
  sessions: SessionStore;
  limits: Limits;
  streams: EventStreams;
  log: SecurityLog;
  cookie: CookieJar;
}): (req: IncomingMessage, res: ServerResponse) => void {
  const { identifier, sessions, limits, streams, log, cookie } = options;

  const endSessions = (
    ended: Session[],
    event: 'sign-out' | 'sign-out-everywhere' | 'session-revoked',
    by?: string,
  ) => {
    for (const s of ended) {
      log.record(event, {
        user: s.caller.user,
        via: s.caller.via,
        session: s.ref,
        ...(by === undefined ? {} : { reason: `by ${by}` }),
      });
    }
    const set = new Set(ended);
    streams.closeWhere((c) => c.session !== null && set.has(c.session), CLOSE_UNAUTHENTICATED, 'signed out');
  };

  const signIn = (req: IncomingMessage, res: ServerResponse): void => {
    const token = bearerOf(req);
    const address = identifier.addressOf(req);
    if (token === null) {
      unauthorized(res, 'give the console token to sign in');
      return;
    }
    const found = identifier.token(token, address);
    if (!found.ok) {
      if (found.status === 429) tooMany(res, found.message, found.retryAfterMs ?? 1000);
      else unauthorized(res, found.message);
      return;
    }
    const identity = `${found.caller.via}:${found.caller.user}`;
    const wait = limits.signIn(identity);
    if (wait > 0) {
      log.record('sign-in-throttled', { user: found.caller.user, address, reason: 'sign-ins' });
      tooMany(
        res,
        `too many sign-ins as ${found.caller.user}: try again in ${Math.ceil(wait / 1000)} s`,
        wait,
      );
      return;
    }
    // The page this browser had: its session ends (it is being replaced), never reused.
    const before = sessions.check(cookiesOf(req, cookie.name), sessionSecretOf(req));
    if (before.ok) {
      sessions.end(before.session);
      endSessions([before.session], 'sign-out');
    }
    const created = sessions.create(found.caller, address, found.credential);
    if (!created.ok) {
      log.record('cap-refused', { user: found.caller.user, address, reason: `sessions-${created.reason}` });
      if (created.status === 429) tooMany(res, created.message, 60_000);
      else
        sendError(res, 503, {
          name: 'BackendUnavailableError',
          code: 'BACKEND_UNAVAILABLE',
          message: created.message,
        });
      return;
    }
    if (created.replaced !== null) {
      endSessions([created.replaced], 'session-revoked', 'the session cap of this user');
    }
    log.record('sign-in', {
      user: found.caller.user,
      via: found.caller.via,
      address,
      session: created.session.ref,
    });
    res.setHeader('Set-Cookie', cookie.set(created.cookie, Math.floor(sessions.lifetimeMs / 1000)));
    sendJson(res, 200, {
      ok: true,
      result: { secret: created.secret, user: found.caller.user, via: found.caller.via },
    });
  };

  const signOut = (req: IncomingMessage, res: ServerResponse, url: URL): void => {
    const everywhere = url.searchParams.get('everywhere');
    const user = url.searchParams.get('user');
    const who = identifier.identify(req, { allowCookie: true });
    if (everywhere === null && user === null) {
      if (who.ok && who.session !== null) {
        sessions.end(who.session);
        endSessions([who.session], 'sign-out');
      }
      res.setHeader('Set-Cookie', cookie.clear());
      sendJson(res, 200, { ok: true, result: {} });
      return;
    }
    if (!who.ok) {
      if (who.status === 429) tooMany(res, who.message, who.retryAfterMs ?? 1000);
      else if (who.status === 401) unauthorized(res, who.message);
      else forbidden(res, who.message);
      return;
    }
    if (user !== null) {
      if (!adminOfEvery(who.caller)) {
        log.record('forbidden', {
          user: who.caller.user,
          via: who.caller.via,
          address: who.address,
          method: 'session.revoke',
        });
        forbidden(
          res,
          'ending another person\'s sessions needs the admin role on every connection ("*": "admin")',
        );
        return;
      }
      const ended = sessions.endWhere((s) => s.caller.user === user);
      endSessions(ended, 'session-revoked', who.caller.user);
      const closed = streams.closeWhere(
        (c) => c.caller.user === user,
        CLOSE_UNAUTHENTICATED,
        'signed out by an admin',
      );
      // Each session ended is a line of its own; streams opened with a token or through the proxy are one more.
      if (ended.length === 0 && closed > 0)
        log.record('session-revoked', { user, reason: `by ${who.caller.user}`, count: closed });
      sendJson(res, 200, { ok: true, result: { sessions: ended.length, streams: closed } });
      return;
    }
    const identity = `${who.caller.via}:${who.caller.user}`;
    const ended = sessions.endWhere((s) => s.identity === identity);
    endSessions(ended, 'sign-out-everywhere');
    res.setHeader('Set-Cookie', cookie.clear());
    sendJson(res, 200, { ok: true, result: { sessions: ended.length } });
  };

  return (req, res) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      sendError(res, 400, errData(new InvalidArgumentError('bad request URL')));
      return;
    }
    if (req.method === 'DELETE') {
      req.resume();
      signOut(req, res, url);
      return;
    }
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST, DELETE');
      sendError(res, 405, errData(new InvalidArgumentError('use POST or DELETE for /api/session')));
      return;
    }
    req.resume();
    signIn(req, res);
  };
}
