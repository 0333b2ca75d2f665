/**
 * The console's web mode: the console API over HTTP (`POST /api/call`), a
 * WebSocket event stream (`GET /api/events`), browser sessions
 * (`/api/session`), `/metrics` when asked for, and the renderer build as
 * static files. A thin transport over the console service; everything it
 * receives is validated.
 *
 * This file only composes (docs/security.md has the threat model):
 * - guards, run in this order on every request and upgrade: Host (DNS
 *   rebinding) and Origin (guards/host.ts); who is asking — proxy, token, or
 *   session cookie *with* its secret (guards/identify.ts, guards/sessions.ts);
 *   fair shares per person and per address (guards/limits.ts);
 * - routes: static files (no credentials: they hold no data), the API call,
 *   sessions, events, metrics (routes/);
 * - the security log (security-log.ts), on stderr by default, and its counters
 *   in `/metrics`.
 * 401 means "who are you?" (sign in), 403 "not allowed", 429 "not now: your
 * share (or your address's) is used up".
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { CLOSE_UNAUTHENTICATED } from '../console/api.ts';
import type { ConsoleService } from '../console/service.ts';
import { ForbiddenError, InvalidArgumentError } from '../lease/errors.ts';
import { rendererDir } from '../version.ts';
import { Authenticator, type AuthOptions, generateToken } from './auth.ts';
import { HostGuard, WILDCARD } from './guards/host.ts';
import { type Identified, Identifier, SESSION_SECRET_HEADER } from './guards/identify.ts';
import { type LimitOptions, Limits } from './guards/limits.ts';
import { reloadAuth } from './guards/reload.ts';
import { type SessionOptions, SessionStore } from './guards/sessions.ts';
import {
  errData,
  forbidden,
  misdirected,
  refuseUpgrade,
  securityHeaders,
  sendError,
  tooMany,
  unauthorized,
} from './respond.ts';
import { createApiRoute } from './routes/api.ts';
import { createEventStreams, type EventStreams } from './routes/events.ts';
import { createMetricsRoute } from './routes/metrics.ts';
import { type CookieJar, cookieJar, createSessionRoute } from './routes/session.ts';
import { createStaticRoute } from './routes/static.ts';
import { type SecurityEvent, SecurityLog } from './security-log.ts';

export { resolveInside } from './routes/static.ts';

export interface WebServerOptions {
  service: Pick<ConsoleService, 'handle' | 'subscribe' | 'connections' | 'canView'> &
    Partial<Pick<ConsoleService, 'metrics'>>;
  /** Interface to bind. Default `127.0.0.1`. A wildcard (`0.0.0.0`, `::`) needs `publicUrl`. */
  host?: string;
  /** Port; 0 picks a free one. Default 7420. */
  port?: number;
  /**
   * The console's one shared token (at least 128 bits; a weak or malformed one is refused).
   * Default: 32 random bytes, base64url — unless `auth` is given, which then decides.
   */
  token?: string;
  /** Who may sign in and with which roles. Default: the shared `token` with the admin role everywhere. */
  auth?: AuthOptions;
  /**
   * The URL people open when it is not the bind address (a DNS name, a TLS
   * proxy in front): its host is accepted in the Host header and its origin
   * as an Origin. E.g. `https://console.example.com`.
   */
  publicUrl?: string;
  /** Serve HTTPS with this certificate and key (PEM). Default: plain HTTP. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** Most WebSocket event clients at once; one more is refused with 503. Default 200. */
  maxClients?: number;
  /** Directory of the renderer build. Default `dist/renderer` in the package. A minimal page is served when it does not exist. */
  staticDir?: string;
  /** Refuse every lease write (`LEASE_WRITE_ACTIONS`) at the transport too (the service refuses them as well when it is read-only). Default false. */
  readOnly?: boolean;
  /**
   * Serve Prometheus text at `GET /metrics`, behind the same sign-in as the API (a bearer token, a
   * session or the trusted proxy), with the connections the caller may see. Default false.
   */
  metrics?: boolean;
  /** Largest request body, bytes. Default 1 MiB. */
  maxBodyBytes?: number;
  /** Interval of WebSocket ping frames, ms. Default 20 000. */
  pingIntervalMs?: number;
  /**
   * A subscriber that falls this far behind (bytes queued) is disconnected
   * with close code 4000 (resync) and must resync. Default 4 MiB.
   */
  maxBufferedBytes?: number;
  /** How long a dropped slow client may take to read its close frame before its socket is destroyed, ms. Default 2 000. */
  slowClientGraceMs?: number;
  /** Session lifetimes, rotation and caps (guards/sessions.ts has the defaults). */
  sessions?: SessionOptions;
  /** Sign-in throttling and stream caps per person and address (guards/limits.ts has the defaults). */
  limits?: LimitOptions;
  /** Where security log lines go (one JSON object and a newline each). Default stderr. */
  securityLog?: (line: string) => void;
}

export interface WebServer {
  /** The URL to open, with the shared token when there is one: `http://127.0.0.1:PORT/?token=…`. */
  url: string;
  /** `http://host:port` of the bind address (the public URL's origin is accepted too). */
  origin: string;
  /** Every Origin accepted. */
  origins: string[];
  port: number;
  /** The shared token, or null when only per-user tokens or the proxy sign people in. */
  token: string | null;
  /**
   * Applies a new sign-in configuration without a restart (`serve` calls it on SIGHUP):
   * sessions and streams of a token that is gone end, the others take their new roles.
   * A configuration that would be refused at start is refused here, and the old one stays.
   */
  reload(auth: AuthOptions): void;
  /** The security log's counters. */
  securityCounts(): Record<SecurityEvent, number>;
  close(): Promise<void>;
}

function defaultStaticDir(): string {
  // Found from the package root: this module runs from src/server, dist/ or dist/chunks/.
  return rendererDir() ?? fileURLToPath(new URL('../../dist/renderer', import.meta.url));
}

/** What the request and upgrade handlers below work with: the guards and the routes. */
interface Context {
  /** Set once the port is known (no request arrives before). */
  guard: HostGuard | null;
  secure: boolean;
  identifier: Identifier;
  sessions: SessionStore;
  cookie: CookieJar;
  streams: EventStreams;
  routes: {
    static: ReturnType<typeof createStaticRoute>;
    api: ReturnType<typeof createApiRoute>;
    session: ReturnType<typeof createSessionRoute>;
    metrics: ReturnType<typeof createMetricsRoute> | null;
  };
}

function refuse(res: ServerResponse, who: Extract<Identified, { ok: false }>): void {
  if (who.status === 401) unauthorized(res, who.message);
  else if (who.status === 429) tooMany(res, who.message, who.retryAfterMs ?? 1000);
  else forbidden(res, who.message);
}

/** A request of a session: it is not idle, and its secrets turn when due (sent back to the page). */
function sessionSeen(ctx: Context, res: ServerResponse, who: Extract<Identified, { ok: true }>): void {
  if (who.session === null) return;
  ctx.sessions.touch(who.session);
  const turned = ctx.sessions.rotate(who.session, who.sessionCurrent);
  if (turned === null) return;
  res.setHeader('Set-Cookie', ctx.cookie.set(turned.cookie, Math.floor(ctx.sessions.lifetimeMs / 1000)));
  res.setHeader(SESSION_SECRET_HEADER, turned.secret);
}

/** Every HTTP request: headers, Host, then the API (Origin, who is asking) or the static page. */
function onRequest(ctx: Context, req: IncomingMessage, res: ServerResponse): void {
  securityHeaders(res, ctx.secure);
  const { guard, routes } = ctx;
  if (guard === null || !guard.hostAccepted(req)) {
    misdirected(res);
    return;
  }
  let pathname: string;
  try {
    pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
  } catch {
    res.writeHead(400);
    res.end();
    return;
  }
  const isApi = pathname === '/api' || pathname.startsWith('/api/');
  if (!isApi && !(pathname === '/metrics' && routes.metrics !== null)) {
    try {
      routes.static(req, res, pathname);
    } catch (err) {
      if (!res.headersSent) sendError(res, 500, errData(err));
      else res.destroy();
    }
    return;
  }
  if (guard.foreignOrigin(req)) {
    sendError(res, 403, errData(new ForbiddenError('cross-origin requests are refused')));
    return;
  }
  if (pathname === '/api/session') {
    if (!guard.hasOurOrigin(req)) {
      sendError(res, 403, errData(new ForbiddenError('sessions are for the console page only (Origin)')));
      return;
    }
    routes.session(req, res);
    return;
  }
  const who = ctx.identifier.identify(req, { allowCookie: guard.hasOurOrigin(req) });
  if (!who.ok) {
    refuse(res, who);
    return;
  }
  if (pathname === '/metrics' && routes.metrics !== null) {
    routes.metrics(req, res, who.caller);
    return;
  }
  if (pathname !== '/api/call') {
    sendError(res, 404, { name: 'NotFoundError', code: 'NOT_FOUND', message: `no API endpoint ${pathname}` });
    return;
  }
  sessionSeen(ctx, res, who);
  routes.api(req, res, who.caller, who.address).catch((err: unknown) => {
    if (!res.headersSent) sendError(res, 500, errData(err));
    else res.destroy();
  });
}

/** Every WebSocket upgrade: the same guards as the API, then the event stream's own caps. */
function onUpgrade(ctx: Context, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  let url: URL;
  try {
    url = new URL(req.url ?? '/', 'http://localhost');
  } catch {
    refuseUpgrade(socket, 400, 'Bad Request');
    return;
  }
  const { guard } = ctx;
  if (guard === null || !guard.hostAccepted(req)) {
    refuseUpgrade(socket, 421, 'Misdirected Request');
    return;
  }
  if (url.pathname !== '/api/events') {
    refuseUpgrade(socket, 404, 'Not Found');
    return;
  }
  if (guard.foreignOrigin(req)) {
    refuseUpgrade(socket, 403, 'Forbidden');
    return;
  }
  const who = ctx.identifier.identify(req, { allowCookie: guard.hasOurOrigin(req) });
  if (!who.ok) {
    const text = who.status === 401 ? 'Unauthorized' : who.status === 429 ? 'Too Many Requests' : 'Forbidden';
    const retry =
      who.retryAfterMs === undefined ? {} : { 'Retry-After': String(Math.ceil(who.retryAfterMs / 1000)) };
    refuseUpgrade(socket, who.status, text, retry);
    return;
  }
  if (who.session !== null) ctx.sessions.touch(who.session);
  ctx.streams.upgrade(req, socket, head, who);
}

/** Starts listening; resolves once the port is bound. */
export async function startWebServer(options: WebServerOptions): Promise<WebServer> {
  const host = options.host ?? '127.0.0.1';
  const authOptions: AuthOptions = options.auth ?? {
    sharedToken: options.token ?? generateToken(),
    sharedRoles: { '*': 'admin' },
  };
  let auth = new Authenticator(authOptions);
  if (!auth.hasCredentials) {
    throw new InvalidArgumentError('nobody could sign in: give a token, per-user tokens or a trusted proxy');
  }
  const publicUrl = options.publicUrl === undefined ? null : parsePublicUrl(options.publicUrl);
  if (WILDCARD.has(host) && publicUrl === null) {
    throw new InvalidArgumentError(
      `binding to every interface (${host}) needs --public-url (the URL people open), so the Host header can be checked`,
    );
  }
  const scheme = options.tls === undefined ? 'http' : 'https';
  // Over TLS (here or at a proxy in front): Secure `__Host-` cookie, and HSTS.
  const secure = scheme === 'https' || publicUrl?.protocol === 'https:';
  const { service } = options;
  const log = new SecurityLog(options.securityLog, Date.now, options.limits?.maxKeys);
  const sessions = new SessionStore(options.sessions);
  const limits = new Limits(options.limits ?? {}, options.maxClients ?? 200);
  const cookie = cookieJar(secure);
  const identifier = new Identifier({ auth: () => auth, sessions, limits, log, cookieName: cookie.name });
  const streams = createEventStreams({
    service,
    sessions,
    limits,
    log,
    maxBufferedBytes: options.maxBufferedBytes ?? 4 * 1024 * 1024,
    slowClientGraceMs: options.slowClientGraceMs ?? 2_000,
    pingIntervalMs: options.pingIntervalMs ?? 20_000,
  });
  const ctx: Context = {
    guard: null,
    secure,
    identifier,
    sessions,
    cookie,
    streams,
    routes: {
      static: createStaticRoute({
        staticRoot: resolve(options.staticDir ?? defaultStaticDir()),
        csp: () => ctx.guard?.contentSecurityPolicy() ?? '',
      }),
      api: createApiRoute({
        service,
        readOnly: options.readOnly ?? false,
        maxBody: options.maxBodyBytes ?? 1024 * 1024,
        log,
      }),
      session: createSessionRoute({ identifier, sessions, limits, streams, log, cookie }),
      metrics:
        options.metrics === true && service.metrics !== undefined
          ? createMetricsRoute({ service: { metrics: service.metrics.bind(service) }, log })
          : null,
    },
  };

  const handler = (req: IncomingMessage, res: ServerResponse): void => onRequest(ctx, req, res);
  const server: Server =
    options.tls === undefined
      ? createServer(handler)
      : createTlsServer({ cert: options.tls.cert, key: options.tls.key }, handler);
  server.headersTimeout = 20_000;
  server.requestTimeout = 60_000;
  server.on('upgrade', (req, socket, head) => onUpgrade(ctx, req, socket, head));

  // Sessions that ran out while nobody asked: logged, and their streams closed.
  const sweep = setInterval(() => {
    const ended = sessions.prune();
    if (ended.length === 0) return;
    for (const s of ended)
      log.record('session-expired', { user: s.caller.user, via: s.caller.via, session: s.ref });
    const set = new Set(ended);
    streams.closeWhere(
      (c) => c.session !== null && set.has(c.session),
      CLOSE_UNAUTHENTICATED,
      'session expired',
    );
  }, 60_000);
  sweep.unref();

  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 7420, host, () => {
      server.off('error', reject);
      resolveListen();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const guard = new HostGuard({ scheme, host, port, publicUrl });
  ctx.guard = guard;

  let closing: Promise<void> | null = null;
  const token = authOptions.sharedToken;
  const base = publicUrl === null ? guard.origin : publicUrl.origin;
  return {
    url: token === null ? `${base}/` : `${base}/?token=${encodeURIComponent(token)}`,
    origin: guard.origin,
    origins: [...guard.origins],
    port,
    token,
    reload(next) {
      auth = reloadAuth(next, { sessions, streams, log });
    },
    securityCounts: () => log.snapshot(),
    close() {
      closing ??= (async () => {
        clearInterval(sweep);
        streams.close();
        server.closeAllConnections();
        await new Promise<void>((r) => server.close(() => r()));
      })();
      return closing;
    },
  };
}

function parsePublicUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new InvalidArgumentError(`--public-url '${text}' is not a URL (e.g. https://console.example.com)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new InvalidArgumentError(`--public-url must be http:// or https://, got '${url.protocol}'`);
  }
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    throw new InvalidArgumentError('--public-url must have no credentials, query or fragment');
  }
  if (url.pathname !== '/') {
    throw new InvalidArgumentError('--public-url must name the root of a host (the console is served at /)');
  }
  return url;
}
