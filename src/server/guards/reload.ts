/**
 * A new sign-in configuration applied to a running server (`serve` on SIGHUP): sessions and
 * streams whose token is gone end at once, the others take their new roles, proxy people are
 * looked up again by name. The configuration is checked first, as at start: a refused one
 * throws, and the caller keeps the running one.
 */
import type { Caller } from '../../console/access.ts';
import { CLOSE_UNAUTHENTICATED } from '../../console/api.ts';
import { InvalidArgumentError } from '../../lease/errors.ts';
import { Authenticator, type AuthOptions } from '../auth.ts';
import type { EventStreams } from '../routes/events.ts';
import type { SecurityLog } from '../security-log.ts';
import type { SessionStore } from './sessions.ts';

export function reloadAuth(
  next: AuthOptions,
  deps: { sessions: SessionStore; streams: EventStreams; log: SecurityLog },
): Authenticator {
  const { sessions, streams, log } = deps;
  const fresh = new Authenticator(next);
  if (!fresh.hasCredentials) {
    throw new InvalidArgumentError('nobody could sign in: give a token, per-user tokens or a trusted proxy');
  }
  for (const s of sessions.all()) {
    const caller = fresh.byCredential(s.credential);
    if (caller === null) {
      sessions.end(s);
      log.record('session-revoked', {
        user: s.caller.user,
        via: s.caller.via,
        session: s.ref,
        reason: 'token removed',
      });
    } else {
      s.caller = caller;
    }
  }
  for (const [ws, c] of streams.clients()) {
    let caller: Caller | null;
    if (c.session !== null) caller = c.session.ended ? null : c.session.caller;
    else if (c.credential !== null) caller = fresh.byCredential(c.credential);
    else caller = fresh.proxyCaller(c.caller.user);
    if (caller === null) {
      if (c.session === null) {
        log.record('session-revoked', {
          user: c.caller.user,
          via: c.caller.via,
          reason: 'removed from the configuration',
        });
      }
      ws.close(CLOSE_UNAUTHENTICATED, 'signed out: the configuration changed');
      continue;
    }
    if (JSON.stringify(caller.roles) !== JSON.stringify(c.caller.roles) || caller.user !== c.caller.user) {
      c.caller = caller;
      streams.resendConnections(ws);
    }
  }
  log.record('config-reloaded', { count: (next.users ?? []).length });
  return fresh;
}
