/**
 * The console's web mode: the console API over HTTP (`POST /api/call`) and a
 * WebSocket event stream (`GET /api/events`), plus the renderer build as
 * static files. A thin transport over the console service (see
 * .tmp/wire.md for the protocol); everything it receives is validated.
 *
 * Security model (docs/security.md has the whole threat model): bound to
 * 127.0.0.1 by default; every request's Host header must name this server
 * (the bind address, its localhost form, or the public URL), which stops DNS
 * rebinding; every /api/* request is authenticated (src/server/auth.ts: a
 * token, a session cookie the page got for one, or a trusted proxy's
 * identity header) and the caller goes with the call to the service, which
 * checks the caller's role; a request carrying a foreign `Origin` is refused
 * (so another site open in the operator's browser cannot drive the console);
 * request bodies, WebSocket send buffers and the number of event clients are
 * capped; HTML carries a strict CSP. Static files need no credentials: they
 * hold no data. 401 means "who are you?" (sign in), 403 "not allowed".
 */
import { createReadStream, existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { extname, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocket, WebSocketServer } from 'ws';
import type { Caller } from '../console/access.ts';
import type { ConsoleEvent, ErrorDataWire, ResponseEnvelope } from '../console/api.ts';
import {
  CLOSE_RESYNC,
  CLOSE_UNAUTHENTICATED,
  isMethodName,
  LEASE_WRITE_ACTIONS,
  RequestEnvelopeSchema,
} from '../console/api.ts';
import { contentTypeFor, isSafeAssetPath } from '../console/assets.ts';
import { dispatch } from '../console/dispatch.ts';
import type { ConsoleService } from '../console/service.ts';
import { type ErrorCode, errorToData, ForbiddenError, InvalidArgumentError } from '../lease/errors.ts';
import { rendererDir } from '../version.ts';
import { Authenticator, type AuthOptions, bearerOf, generateToken, SESSION_COOKIE } from './auth.ts';
import { formatMetrics, METRICS_CONTENT_TYPE } from './metrics.ts';

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
   * Serve Prometheus text at `GET /metrics`, behind the same sign-in as the API (a bearer token, the
   * session cookie or the trusted proxy), with the connections the caller may see. Default false.
   */
  metrics?: boolean;
  /** Largest request body, bytes. Default 1 MiB. */
  maxBodyBytes?: number;
  /** Interval of WebSocket ping frames, ms. Default 20 000. */
  pingIntervalMs?: number;
  /**
   * A subscriber that falls this far behind (bytes queued) is disconnected
   * with close code {@link CLOSE_RESYNC} and must resync. Default 4 MiB.
   */
  maxBufferedBytes?: number;
  /** How long a dropped slow client may take to read its close frame before its socket is destroyed, ms. Default 2 000. */
  slowClientGraceMs?: number;
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
  close(): Promise<void>;
}

const STATUS_BY_CODE: Record<ErrorCode, number> = {
  INVALID_ARGUMENT: 400,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  LEASE_HELD: 409,
  FENCED: 409,
  LEASE_EXPIRED: 409,
  LEASE_LOST: 409,
  BACKEND_UNAVAILABLE: 503,
  SCHEMA_MISMATCH: 500,
  DATASET_LOST: 500,
  NOT_DURABLE: 503,
  INTERNAL: 500,
};

const FALLBACK_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>worklease console</title></head>
<body><h1>worklease console</h1>
<p>The console's API is running, but the renderer has not been built. Run <code>npm run build:renderer</code> and reload.</p>
</body></html>
`;

function defaultStaticDir(): string {
  // Found from the package root: this module runs from src/server, dist/ or dist/chunks/.
  return rendererDir() ?? fileURLToPath(new URL('../../dist/renderer', import.meta.url));
}

function hostForUrl(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

const LOOPBACK = /^(127(\.\d{1,3}){3}|::1|localhost)$/i;
const WILDCARD = new Set(['0.0.0.0', '::', '[::]', '']);

/** Starts listening; resolves once the port is bound. */
export async function startWebServer(options: WebServerOptions): Promise<WebServer> {
  const host = options.host ?? '127.0.0.1';
  const authOptions: AuthOptions = options.auth ?? {
    sharedToken: options.token ?? generateToken(),
    sharedRoles: { '*': 'admin' },
  };
  const auth = new Authenticator(authOptions);
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
  const maxBody = options.maxBodyBytes ?? 1024 * 1024;
  const maxBuffered = options.maxBufferedBytes ?? 4 * 1024 * 1024;
  const maxClients = options.maxClients ?? 200;
  const closeGraceMs = options.slowClientGraceMs ?? 2_000;
  const staticRoot = resolve(options.staticDir ?? defaultStaticDir());
  const { service } = options;
  const readOnly = options.readOnly ?? false;
  const secureCookie = scheme === 'https' || publicUrl?.protocol === 'https:';
  let origin = '';
  let csp = '';
  /** Host header values that name this server (lower case, port included). */
  const hosts = new Set<string>();
  const origins = new Set<string>();

  /** DNS rebinding: a page on evil.example resolved to 127.0.0.1 sends `Host: evil.example:PORT`. */
  const hostAccepted = (req: IncomingMessage): boolean =>
    typeof req.headers.host === 'string' && hosts.has(req.headers.host.toLowerCase());

  /** A request is foreign when it carries an Origin other than ours (browsers always send one cross-origin). */
  const foreignOrigin = (req: IncomingMessage): boolean => {
    const o = req.headers.origin;
    return o !== undefined && !origins.has(o.toLowerCase());
  };
  const hasOurOrigin = (req: IncomingMessage): boolean =>
    typeof req.headers.origin === 'string' && origins.has(req.headers.origin.toLowerCase());

  const baseHeaders = (res: ServerResponse): void => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('Cache-Control', 'no-store');
  };

  const sendJson = (res: ServerResponse, status: number, body: ResponseEnvelope): void => {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(text),
    });
    res.end(text);
  };

  const sendError = (res: ServerResponse, status: number, error: ErrorDataWire): void => {
    sendJson(res, status, { ok: false, error });
  };

  const errData = (err: unknown): ErrorDataWire => errorToData(err) as ErrorDataWire;

  /** 401: not signed in (the page shows its sign-in screen); the error name says so, the code stays FORBIDDEN. */
  const unauthorized = (res: ServerResponse, message: string): void => {
    res.setHeader('WWW-Authenticate', 'Bearer');
    sendError(res, 401, {
      name: 'UnauthenticatedError',
      code: 'FORBIDDEN',
      message,
      details: { reason: 'unauthenticated' },
    });
  };

  const cookieAttributes = (maxAge: number): string =>
    `Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${secureCookie ? '; Secure' : ''}`;

  /**
   * `POST /api/session` with a Bearer token: a session cookie for this
   * browser (the page then drops the token from its URL). `DELETE`: signs out.
   * Only from our own pages (an accepted Origin), since the cookie is theirs.
   */
  const handleSession = (req: IncomingMessage, res: ServerResponse): void => {
    if (!hasOurOrigin(req)) {
      sendError(res, 403, errData(new ForbiddenError('sessions are for the console page only (Origin)')));
      return;
    }
    req.resume();
    if (req.method === 'DELETE') {
      const result = auth.authenticate(req, true);
      if (result.ok && result.sessionId !== null) {
        auth.endSession(result.sessionId);
        for (const [ws, sid] of sessionOf) {
          if (sid === result.sessionId) ws.close(CLOSE_UNAUTHENTICATED, 'signed out');
        }
      }
      res.setHeader('Set-Cookie', `${SESSION_COOKIE}=; ${cookieAttributes(0)}`);
      sendJson(res, 200, { ok: true, result: {} });
      return;
    }
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST, DELETE');
      sendError(res, 405, errData(new InvalidArgumentError('use POST or DELETE for /api/session')));
      return;
    }
    const token = bearerOf(req);
    const caller = token === null ? null : auth.byToken(token);
    if (caller === null) {
      unauthorized(res, token === null ? 'give the console token to sign in' : 'the console token is wrong');
      return;
    }
    const sid = auth.createSession(caller);
    res.setHeader('Set-Cookie', `${SESSION_COOKIE}=${sid}; ${cookieAttributes(auth.sessionMaxAgeSeconds)}`);
    sendJson(res, 200, { ok: true, result: {} });
  };

  const readBody = (req: IncomingMessage): Promise<Buffer> =>
    new Promise((resolveBody, reject) => {
      const declared = Number(req.headers['content-length'] ?? 0);
      if (declared > maxBody) {
        req.resume();
        reject(new BodyTooLarge());
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBody) {
          // The rest is read and dropped (bounded by requestTimeout) so the
          // client gets the 413 instead of a reset connection.
          chunks.length = 0;
          reject(new BodyTooLarge());
          return;
        }
        chunks.push(chunk);
      });
      req.on('end', () => resolveBody(Buffer.concat(chunks)));
      req.on('error', reject);
    });

  const handleCall = async (req: IncomingMessage, res: ServerResponse, caller: Caller): Promise<void> => {
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST');
      sendError(res, 405, errData(new InvalidArgumentError('use POST for /api/call')));
      return;
    }
    const type = req.headers['content-type'] ?? '';
    if (!/^application\/json\s*(;|$)/i.test(type)) {
      sendError(res, 415, errData(new InvalidArgumentError('Content-Type must be application/json')));
      return;
    }
    let body: Buffer;
    try {
      body = await readBody(req);
    } catch (err) {
      if (err instanceof BodyTooLarge) {
        res.setHeader('Connection', 'close');
        sendError(res, 413, errData(new InvalidArgumentError(`request body exceeds ${maxBody} bytes`)));
      } else {
        res.destroy();
      }
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch {
      sendError(res, 400, errData(new InvalidArgumentError('request body is not valid JSON')));
      return;
    }
    const envelope = RequestEnvelopeSchema.safeParse(json);
    if (!envelope.success) {
      sendError(
        res,
        400,
        errData(
          new InvalidArgumentError('request body must be {"method": string, "params": object}', {
            details: { issues: envelope.error.issues.map((i) => i.message) },
          }),
        ),
      );
      return;
    }
    const { method, params } = envelope.data;
    const action = readOnly && isMethodName(method) ? LEASE_WRITE_ACTIONS[method] : undefined;
    if (action !== undefined) {
      sendError(res, 403, errData(new ForbiddenError(`the console is read-only: ${action} is refused`)));
      return;
    }
    const out = await dispatch(service, method, params, caller);
    sendJson(res, out.ok ? 200 : (STATUS_BY_CODE[out.error.code] ?? 500), out);
  };

  const serveStatic = (req: IncomingMessage, res: ServerResponse, pathname: string): void => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      res.writeHead(405, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('method not allowed\n');
      return;
    }
    // The page's own routes (app/routes.ts in the renderer): `/c/<connectionId>/…` carries ids that
    // are untrusted text (a work id may hold `.`, `%2F`, `%2E%2E`), so such a path is never looked up
    // as a file: it is answered with the page, whatever it holds.
    if (pathname === '/c' || pathname.startsWith('/c/')) {
      sendIndex(req, res);
      return;
    }
    let decoded: string;
    try {
      decoded = decodeURIComponent(pathname);
    } catch {
      res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('bad path\n');
      return;
    }
    if (!isSafeAssetPath(decoded)) {
      res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('bad path\n');
      return;
    }
    const haveBuild = existsSync(resolve(staticRoot, 'index.html'));
    if (!haveBuild) {
      if (decoded === '/' || decoded === '/index.html') sendHtml(res, req, Buffer.from(FALLBACK_PAGE));
      else notFound(res);
      return;
    }
    if (decoded === '/' || decoded === '/index.html') {
      sendIndex(req, res);
      return;
    }
    const file = resolveInside(staticRoot, decoded);
    if (file === null) {
      // Client-side routes (no extension: `/audit`, `/connections`) get the app; a missing asset is a 404.
      if (extname(decoded) === '') sendIndex(req, res);
      else notFound(res);
      return;
    }
    sendFile(req, res, file);
  };

  /**
   * The page, at whatever route it was asked for. The build's asset URLs are relative (`./assets/…`,
   * so Electron can load it from its app protocol); over http they are made absolute here, or the
   * page at `/c/x/lease/y` would ask for `/c/x/lease/assets/…`. (A `<base href>` would do the same,
   * but the CSP allows no base URI.)
   */
  const sendIndex = (req: IncomingMessage, res: ServerResponse): void => {
    const index = resolve(staticRoot, 'index.html');
    if (!existsSync(index)) {
      sendHtml(res, req, Buffer.from(FALLBACK_PAGE));
      return;
    }
    const html = readFileSync(index, 'utf8').replace(/(\s(?:src|href)=")\.\//g, '$1/');
    sendHtml(res, req, Buffer.from(html));
  };

  const sendHtml = (res: ServerResponse, req: IncomingMessage, body: Buffer): void => {
    res.writeHead(200, {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Length': body.length,
      'Content-Security-Policy': csp,
      'X-Frame-Options': 'DENY',
    });
    res.end(req.method === 'HEAD' ? undefined : body);
  };

  const sendFile = (req: IncomingMessage, res: ServerResponse, file: string): void => {
    const ext = extname(file).toLowerCase();
    const headers: Record<string, string | number> = {
      'Content-Type': contentTypeFor(file),
      'Content-Length': statSync(file).size,
    };
    if (ext === '.html') {
      headers['Content-Security-Policy'] = csp;
      headers['X-Frame-Options'] = 'DENY';
    }
    res.writeHead(200, headers);
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    createReadStream(file)
      .on('error', () => res.destroy())
      .pipe(res);
  };

  const misdirected = (res: ServerResponse): void => {
    // 421: the name in Host is not this server's (a rebinding page, or a name missing from --public-url).
    res.writeHead(421, { 'Content-Type': 'text/plain; charset=utf-8' });
    res.end('misdirected request: this Host is not served here (see --public-url)\n');
  };

  const notFound = (res: ServerResponse): void => {
    res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
    res.end('not found\n');
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    baseHeaders(res);
    if (!hostAccepted(req)) {
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
    if (pathname === '/metrics' && options.metrics === true && service.metrics !== undefined) {
      if (foreignOrigin(req)) {
        sendError(res, 403, errData(new ForbiddenError('cross-origin requests are refused')));
        return;
      }
      // A read, and the session cookie is SameSite=Strict: another site's page never sends it.
      const who = auth.authenticate(req, true);
      if (!who.ok) {
        if (who.status === 401) unauthorized(res, who.message);
        else sendError(res, 403, errData(new ForbiddenError(who.message)));
        return;
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.setHeader('Allow', 'GET, HEAD');
        sendError(res, 405, errData(new InvalidArgumentError('use GET for /metrics')));
        return;
      }
      const body = formatMetrics(service.metrics(who.caller));
      res.writeHead(200, { 'Content-Type': METRICS_CONTENT_TYPE, 'Content-Length': Buffer.byteLength(body) });
      res.end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    if (pathname === '/api' || pathname.startsWith('/api/')) {
      if (foreignOrigin(req)) {
        sendError(res, 403, errData(new ForbiddenError('cross-origin requests are refused')));
        return;
      }
      if (pathname === '/api/session') {
        handleSession(req, res);
        return;
      }
      const who = auth.authenticate(req, hasOurOrigin(req));
      if (!who.ok) {
        if (who.status === 401) unauthorized(res, who.message);
        else sendError(res, 403, errData(new ForbiddenError(who.message)));
        return;
      }
      if (pathname !== '/api/call') {
        sendError(res, 404, {
          name: 'NotFoundError',
          code: 'NOT_FOUND',
          message: `no API endpoint ${pathname}`,
        });
        return;
      }
      handleCall(req, res, who.caller).catch((err: unknown) => {
        if (!res.headersSent) sendError(res, 500, errData(err));
        else res.destroy();
      });
      return;
    }
    try {
      serveStatic(req, res, pathname);
    } catch (err) {
      if (!res.headersSent) sendError(res, 500, errData(err));
      else res.destroy();
    }
  };
  const server: Server =
    options.tls === undefined
      ? createServer(onRequest)
      : createTlsServer({ cert: options.tls.cert, key: options.tls.key }, onRequest);
  server.headersTimeout = 20_000;
  server.requestTimeout = 60_000;

  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  const clients = new Map<WebSocket, Caller>();
  /** The session a socket was opened with, so signing out or expiry closes it. */
  const sessionOf = new Map<WebSocket, string>();

  server.on('upgrade', (req, socket, head) => {
    const refuse = (status: number, text: string): void => {
      socket.end(
        `HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${text.length}\r\n\r\n${text}`,
      );
    };
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      refuse(400, 'Bad Request');
      return;
    }
    if (!hostAccepted(req)) {
      refuse(421, 'Misdirected Request');
      return;
    }
    if (url.pathname !== '/api/events') {
      refuse(404, 'Not Found');
      return;
    }
    if (foreignOrigin(req)) {
      refuse(403, 'Forbidden');
      return;
    }
    const who = auth.authenticate(req, hasOurOrigin(req));
    if (!who.ok) {
      refuse(who.status, who.status === 401 ? 'Unauthorized' : 'Forbidden');
      return;
    }
    if (clients.size >= maxClients) {
      refuse(503, `Too many console clients (at most ${maxClients}); close another console tab`);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => onSocket(ws, who.caller, who.sessionId));
  });

  /**
   * One subscription for every client: each event is serialized once into a
   * Buffer that every client's socket queues by reference (ws frames an
   * unmasked Buffer without copying it), so 100 stalled clients hold one copy
   * of the backlog, not 100.
   */
  const fanOut = (event: ConsoleEvent): void => {
    if (clients.size === 0) return;
    const connectionId =
      event.type === 'connection'
        ? event.connection.id
        : event.type === 'connections'
          ? null
          : event.connectionId;
    let shared: Buffer | null = null;
    for (const [ws, caller] of clients) {
      if (connectionId !== null && !service.canView(caller, connectionId)) continue;
      if (event.type === 'connections') {
        send(ws, Buffer.from(JSON.stringify(connectionsFor(caller, event.connections))));
        continue;
      }
      shared ??= Buffer.from(JSON.stringify(event));
      send(ws, shared);
    }
  };
  const unsubscribeAll = service.subscribe(fanOut);

  const connectionsFor = (
    caller: Caller,
    all: Extract<ConsoleEvent, { type: 'connections' }>['connections'],
  ): ConsoleEvent => ({ type: 'connections', connections: all.filter((c) => service.canView(caller, c.id)) });

  const send = (ws: WebSocket, data: Buffer): void => {
    if (ws.readyState !== WebSocket.OPEN) return;
    if (ws.bufferedAmount > maxBuffered) {
      // Dropping events would leave the client silently wrong; closing tells
      // it to reconnect and take fresh snapshots. A client that reads nothing
      // never sees the close frame: its socket is destroyed shortly after, so
      // its backlog is freed.
      ws.close(CLOSE_RESYNC, 'too far behind: reconnect and resync');
      setTimeout(() => ws.terminate(), closeGraceMs).unref();
      return;
    }
    ws.send(data, { binary: false });
  };

  const onSocket = (ws: WebSocket, caller: Caller, sessionId: string | null): void => {
    clients.set(ws, caller);
    if (sessionId !== null) sessionOf.set(ws, sessionId);
    let alive = true;
    send(ws, Buffer.from(JSON.stringify(connectionsFor(caller, service.connections()))));
    ws.on('pong', () => {
      alive = true;
    });
    // Client messages carry nothing the server acts on; reading them only
    // keeps the socket flowing.
    ws.on('message', () => {});
    const ping = setInterval(() => {
      if (!alive) {
        ws.terminate();
        return;
      }
      if (sessionId !== null && !auth.sessionValid(sessionId)) {
        ws.close(CLOSE_UNAUTHENTICATED, 'session expired: sign in again');
        return;
      }
      alive = false;
      ws.ping();
    }, options.pingIntervalMs ?? 20_000);
    ping.unref();
    ws.on('close', () => {
      clearInterval(ping);
      clients.delete(ws);
      sessionOf.delete(ws);
    });
    ws.on('error', () => ws.terminate());
  };

  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 7420, host, () => {
      server.off('error', reject);
      resolveListen();
    });
  });
  const port = (server.address() as AddressInfo).port;
  origin = `${scheme}://${hostForUrl(host)}:${port}`;
  if (!WILDCARD.has(host)) {
    hosts.add(`${hostForUrl(host)}:${port}`.toLowerCase());
    // The same machine by its other loopback names, so `http://localhost:PORT` works too.
    if (LOOPBACK.test(host)) for (const h of ['localhost', '127.0.0.1', '[::1]']) hosts.add(`${h}:${port}`);
  }
  for (const h of hosts) origins.add(`${scheme}://${h}`);
  if (publicUrl !== null) {
    hosts.add(publicUrl.host.toLowerCase());
    origins.add(publicUrl.origin.toLowerCase());
  }
  const wsOrigins = [...origins].map((o) => o.replace(/^http/, 'ws'));
  csp = [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self' ${wsOrigins.join(' ')}`,
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
    "form-action 'none'",
  ].join('; ');

  let closing: Promise<void> | null = null;
  const token = authOptions.sharedToken;
  const base = publicUrl === null ? origin : publicUrl.origin;
  return {
    url: token === null ? `${base}/` : `${base}/?token=${encodeURIComponent(token)}`,
    origin,
    origins: [...origins],
    port,
    token,
    close() {
      closing ??= (async () => {
        unsubscribeAll();
        for (const ws of clients.keys()) ws.terminate();
        wss.close();
        server.closeAllConnections();
        await new Promise<void>((r) => server.close(() => r()));
      })();
      return closing;
    },
  };
}

class BodyTooLarge extends Error {}

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

/**
 * The real path of `urlPath` under `root`, or null when it does not exist, is
 * not a regular file, or resolves (through `..` or a symlink) outside `root`.
 */
export function resolveInside(root: string, urlPath: string): string | null {
  const realRoot = realpathSync(root);
  const candidate = resolve(realRoot, `.${urlPath}`);
  if (candidate !== realRoot && !candidate.startsWith(realRoot + sep)) return null;
  let real: string;
  try {
    real = realpathSync(candidate);
  } catch {
    return null;
  }
  if (real !== realRoot && !real.startsWith(realRoot + sep)) return null;
  try {
    if (!statSync(real).isFile()) return null;
  } catch {
    return null;
  }
  return real;
}
