/**
 * How the web server answers: the headers every response carries, JSON
 * envelopes, and the refusals (401, 403, 421, 429) in one shape each, so the
 * guards and the routes refuse alike.
 */
import type { ServerResponse } from 'node:http';
import type { ErrorDataWire, ResponseEnvelope } from '../console/api.ts';
import { type ErrorCode, errorToData } from '../lease/errors.ts';

/** The HTTP status of each error code of the console API. */
export const STATUS_BY_CODE: Record<ErrorCode, number> = {
  INVALID_ARGUMENT: 400,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  LEASE_HELD: 409,
  FENCED: 409,
  LEASE_EXPIRED: 409,
  LEASE_LOST: 409,
  ON_HOLD: 409,
  BACKEND_UNAVAILABLE: 503,
  SCHEMA_MISMATCH: 500,
  DATASET_LOST: 500,
  NOT_DURABLE: 503,
  INTERNAL: 500,
};

/**
 * Browser features the page never uses, refused for it and anything it could embed
 * (Permissions-Policy): a hijacked page gets no camera, no location, no payment sheet.
 */
const PERMISSIONS_POLICY = [
  'accelerometer=()',
  'camera=()',
  'display-capture=()',
  'geolocation=()',
  'gyroscope=()',
  'hid=()',
  'magnetometer=()',
  'microphone=()',
  'midi=()',
  'payment=()',
  'publickey-credentials-get=()',
  'serial=()',
  'usb=()',
  'xr-spatial-tracking=()',
].join(', ');

/** One year, the value browsers' preload lists ask for. */
const HSTS_MAX_AGE_S = 31_536_000;

/**
 * Headers of every response of the console's listener. COOP keeps another site's window from
 * holding a reference to ours (no `window.opener` games), CORP keeps another site from loading
 * our responses as images or scripts (no Spectre-style reads of the JSON); HSTS only when the
 * page is reached over TLS (`serve --tls-*`, or an https `--public-url` behind a proxy), since a
 * browser ignores it over plain HTTP and it would pin a plain-HTTP name to TLS.
 */
export function securityHeaders(res: ServerResponse, hsts: boolean): void {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Permissions-Policy', PERMISSIONS_POLICY);
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
  res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
  if (hsts) res.setHeader('Strict-Transport-Security', `max-age=${HSTS_MAX_AGE_S}`);
}

export function sendJson(res: ServerResponse, status: number, body: ResponseEnvelope): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

export function sendError(res: ServerResponse, status: number, error: ErrorDataWire): void {
  sendJson(res, status, { ok: false, error });
}

export const errData = (err: unknown): ErrorDataWire => errorToData(err) as ErrorDataWire;

/** 401: not signed in (the page shows its sign-in screen); the error name says so, the code stays FORBIDDEN. */
export function unauthorized(res: ServerResponse, message: string): void {
  res.setHeader('WWW-Authenticate', 'Bearer');
  sendError(res, 401, {
    name: 'UnauthenticatedError',
    code: 'FORBIDDEN',
    message,
    details: { reason: 'unauthenticated' },
  });
}

export function forbidden(res: ServerResponse, message: string, reason?: string): void {
  sendError(res, 403, {
    name: 'ForbiddenError',
    code: 'FORBIDDEN',
    message,
    ...(reason === undefined ? {} : { details: { reason } }),
  });
}

/** 429 with the seconds to wait: a cap of this caller or this address, never of everyone. */
export function tooMany(res: ServerResponse, message: string, retryAfterMs: number): void {
  res.setHeader('Retry-After', String(Math.max(1, Math.ceil(retryAfterMs / 1000))));
  sendError(res, 429, {
    name: 'RateLimitedError',
    code: 'FORBIDDEN',
    message,
    details: { reason: 'rate-limited', retryAfterMs: Math.ceil(retryAfterMs) },
  });
}

/** 421: the name in Host is not this server's (a rebinding page, or a name missing from --public-url). */
export function misdirected(res: ServerResponse): void {
  res.writeHead(421, { 'Content-Type': 'text/plain; charset=utf-8' });
  res.end('misdirected request: this Host is not served here (see --public-url)\n');
}

export function notFound(res: ServerResponse): void {
  res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
  res.end('not found\n');
}

/** A refusal of a WebSocket upgrade, written on the raw socket (there is no response object). */
export function refuseUpgrade(
  socket: { end(data: string): void },
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Type: text/plain\r\n${extra}Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
  );
}
