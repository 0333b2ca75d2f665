/**
 * The console's web mode: the console API over HTTP (`POST /api/call`) and a
 * WebSocket event stream (`GET /api/events`), plus the renderer build as
 * static files. A thin transport over the console service (see
 * .tmp/wire.md for the protocol); everything it receives is validated.
 *
 * Security model: bound to 127.0.0.1 by default; every /api/* request needs
 * the bearer token (compared in constant time); a request carrying a foreign
 * `Origin` is refused (so another site open in the operator's browser cannot
 * drive the console, even if it guessed the port); request bodies are capped;
 * HTML carries a strict CSP. Static files need no token: they hold no data.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createReadStream, existsSync, realpathSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocket, WebSocketServer } from 'ws';
import type { ConsoleEvent, ErrorDataWire, ResponseEnvelope } from '../console/api.ts';
import { RequestEnvelopeSchema } from '../console/api.ts';
import { contentTypeFor, isSafeAssetPath } from '../console/assets.ts';
import { dispatch } from '../console/dispatch.ts';
import type { ConsoleService } from '../console/service.ts';
import { type ErrorCode, errorToData, ForbiddenError, InvalidArgumentError } from '../lease/errors.ts';
import { rendererDir } from '../version.ts';

export interface WebServerOptions {
  service: Pick<ConsoleService, 'handle' | 'subscribe' | 'connections'>;
  /** Interface to bind. Default `127.0.0.1`. */
  host?: string;
  /** Port; 0 picks a free one. Default 7420. */
  port?: number;
  /** The bearer token clients must present. Default: 32 random bytes, base64url. */
  token?: string;
  /** Directory of the renderer build. Default `dist/renderer` in the package. A minimal page is served when it does not exist. */
  staticDir?: string;
  /** Refuse `lease.forceRelease` at the transport too (the service refuses it as well when it is read-only). Default false. */
  readOnly?: boolean;
  /** Largest request body, bytes. Default 1 MiB. */
  maxBodyBytes?: number;
  /** Interval of WebSocket ping frames, ms. Default 20 000. */
  pingIntervalMs?: number;
  /** A subscriber that falls this far behind (bytes queued) is disconnected and must resync. Default 64 MiB. */
  maxBufferedBytes?: number;
}

export interface WebServer {
  /** The URL to open, token included: `http://127.0.0.1:PORT/?token=…`. */
  url: string;
  /** `http://host:port`, the only Origin accepted. */
  origin: string;
  port: number;
  token: string;
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

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** Starts listening; resolves once the port is bound. */
export async function startWebServer(options: WebServerOptions): Promise<WebServer> {
  const host = options.host ?? '127.0.0.1';
  const token = options.token ?? randomBytes(32).toString('base64url');
  if (token.length < 16)
    throw new InvalidArgumentError('the web console token must be at least 16 characters');
  const tokenHash = sha256(token);
  const maxBody = options.maxBodyBytes ?? 1024 * 1024;
  const maxBuffered = options.maxBufferedBytes ?? 64 * 1024 * 1024;
  const staticRoot = resolve(options.staticDir ?? defaultStaticDir());
  const { service } = options;
  const readOnly = options.readOnly ?? false;
  let origin = '';
  let csp = '';

  const tokenMatches = (given: string | null | undefined): boolean =>
    typeof given === 'string' && given.length > 0 && timingSafeEqual(sha256(given), tokenHash);

  const bearer = (req: IncomingMessage): string | null => {
    const h = req.headers.authorization;
    if (typeof h !== 'string') return null;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
    return m?.[1] ?? null;
  };

  /** A request is foreign when it carries an Origin other than ours (browsers always send one cross-origin). */
  const foreignOrigin = (req: IncomingMessage): boolean => {
    const o = req.headers.origin;
    return o !== undefined && o !== origin;
  };

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

  const unauthorized = (res: ServerResponse): void => {
    res.setHeader('WWW-Authenticate', 'Bearer');
    sendError(res, 401, {
      name: 'UnauthorizedError',
      code: 'FORBIDDEN',
      message: 'missing or wrong console token',
    });
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

  const handleCall = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
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
    if (readOnly && method === 'lease.forceRelease') {
      sendError(res, 403, errData(new ForbiddenError('the console is read-only: force-release is refused')));
      return;
    }
    const out = await dispatch(service, method, params);
    sendJson(res, out.ok ? 200 : (STATUS_BY_CODE[out.error.code] ?? 500), out);
  };

  const serveStatic = (req: IncomingMessage, res: ServerResponse, pathname: string): void => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      res.writeHead(405, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('method not allowed\n');
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
    const file = resolveInside(staticRoot, decoded === '/' ? '/index.html' : decoded);
    if (file === null) {
      // Client-side routes (no extension) get the app; a missing asset is a 404.
      if (extname(decoded) === '') sendFile(req, res, resolve(staticRoot, 'index.html'));
      else notFound(res);
      return;
    }
    sendFile(req, res, file);
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

  const notFound = (res: ServerResponse): void => {
    res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
    res.end('not found\n');
  };

  const server: Server = createServer((req, res) => {
    baseHeaders(res);
    let pathname: string;
    try {
      pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
    } catch {
      res.writeHead(400);
      res.end();
      return;
    }
    if (pathname === '/api' || pathname.startsWith('/api/')) {
      if (foreignOrigin(req)) {
        sendError(res, 403, errData(new ForbiddenError('cross-origin requests are refused')));
        return;
      }
      if (!tokenMatches(bearer(req))) {
        unauthorized(res);
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
      handleCall(req, res).catch((err: unknown) => {
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
  });
  server.headersTimeout = 20_000;
  server.requestTimeout = 60_000;

  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  const clients = new Set<WebSocket>();

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
    if (url.pathname !== '/api/events') {
      refuse(404, 'Not Found');
      return;
    }
    if (foreignOrigin(req)) {
      refuse(403, 'Forbidden');
      return;
    }
    if (!tokenMatches(url.searchParams.get('token') ?? bearer(req))) {
      refuse(401, 'Unauthorized');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => onSocket(ws));
  });

  const onSocket = (ws: WebSocket): void => {
    clients.add(ws);
    let alive = true;
    const send = (event: ConsoleEvent): void => {
      if (ws.readyState !== WebSocket.OPEN) return;
      if (ws.bufferedAmount > maxBuffered) {
        // Dropping events would leave the client silently wrong; closing makes
        // it reconnect and take a fresh snapshot.
        ws.close(1013, 'subscriber too slow; reconnect and resync');
        return;
      }
      ws.send(JSON.stringify(event));
    };
    send({ type: 'connections', connections: service.connections() });
    const unsubscribe = service.subscribe(send);
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
      alive = false;
      ws.ping();
    }, options.pingIntervalMs ?? 20_000);
    ping.unref();
    ws.on('close', () => {
      clearInterval(ping);
      unsubscribe();
      clients.delete(ws);
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
  origin = `http://${hostForUrl(host)}:${port}`;
  csp = [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self' ws://${hostForUrl(host)}:${port}`,
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
    "form-action 'none'",
  ].join('; ');

  let closing: Promise<void> | null = null;
  return {
    url: `${origin}/?token=${encodeURIComponent(token)}`,
    origin,
    port,
    token,
    close() {
      closing ??= (async () => {
        for (const ws of clients) ws.terminate();
        wss.close();
        server.closeAllConnections();
        await new Promise<void>((r) => server.close(() => r()));
      })();
      return closing;
    },
  };
}

class BodyTooLarge extends Error {}

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
