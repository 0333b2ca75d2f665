/**
 * Which requests are addressed to this server (Host) and which come from its
 * own page (Origin): the first guard of every request and WebSocket upgrade.
 *
 * - **Host** must name this server: the bind address (and its other loopback
 *   names when it is loopback) or the public URL's host. A page on
 *   `evil.example` whose name was rebound to 127.0.0.1 sends `Host:
 *   evil.example:PORT` and gets 421 (DNS rebinding).
 * - **Origin**, when present, must be one of ours; browsers send it on every
 *   cross-origin request, on POSTs and on WebSocket upgrades. A request without
 *   one (a script, curl) is not foreign: it has no cookies to abuse, and it is
 *   authenticated like any other.
 */
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

export const LOOPBACK = /^(127(\.\d{1,3}){3}|::1|localhost)$/i;
export const WILDCARD = new Set(['0.0.0.0', '::', '[::]', '']);

export function hostForUrl(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

export class HostGuard {
  /** Host header values that name this server (lower case, port included). */
  readonly hosts = new Set<string>();
  /** Every accepted Origin (lower case). */
  readonly origins = new Set<string>();
  /** `scheme://host:port` of the bind address. */
  readonly origin: string;

  constructor(options: { scheme: 'http' | 'https'; host: string; port: number; publicUrl: URL | null }) {
    const { scheme, host, port, publicUrl } = options;
    this.origin = `${scheme}://${hostForUrl(host)}:${port}`;
    if (!WILDCARD.has(host)) {
      this.hosts.add(`${hostForUrl(host)}:${port}`.toLowerCase());
      // The same machine by its other loopback names, so `http://localhost:PORT` works too.
      if (LOOPBACK.test(host))
        for (const h of ['localhost', '127.0.0.1', '[::1]']) this.hosts.add(`${h}:${port}`);
    }
    for (const h of this.hosts) this.origins.add(`${scheme}://${h}`);
    if (publicUrl !== null) {
      this.hosts.add(publicUrl.host.toLowerCase());
      this.origins.add(publicUrl.origin.toLowerCase());
    }
  }

  hostAccepted(req: IncomingMessage): boolean {
    return typeof req.headers.host === 'string' && this.hosts.has(req.headers.host.toLowerCase());
  }

  /** A request is foreign when it carries an Origin other than ours (browsers always send one cross-origin). */
  foreignOrigin(req: IncomingMessage): boolean {
    const o = req.headers.origin;
    return o !== undefined && !this.origins.has(o.toLowerCase());
  }

  hasOurOrigin(req: IncomingMessage): boolean {
    return typeof req.headers.origin === 'string' && this.origins.has(req.headers.origin.toLowerCase());
  }

  /** The page's Content-Security-Policy: its own scripts, styles and API only, in no frame. */
  contentSecurityPolicy(): string {
    const wsOrigins = [...this.origins].map((o) => o.replace(/^http/, 'ws'));
    return [
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
  }
}

/**
 * The Host check of the metrics listener, which has no page and no sign-in but answers with
 * every connection's name: a Host that is an IP literal (a page can only be on that address
 * itself, never on a rebound name), `localhost` when the listener is loopback, or a name the
 * operator gave; with the listener's port. A scraper configured with a DNS name needs that
 * name given (`--public-url`, or the name in `--metrics-bind`).
 */
export function metricsHostAccepted(
  hostHeader: string | undefined,
  listener: { port: number; loopback: boolean; names: readonly string[] },
): boolean {
  if (typeof hostHeader !== 'string') return false;
  const m = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/i.exec(hostHeader.trim());
  if (m === null) return false;
  const name = m[1]!.toLowerCase();
  const port = m[2] === undefined ? null : Number(m[2]);
  if (port !== listener.port) return false;
  const bare = name.replace(/^\[(.*)\]$/, '$1');
  if (isIP(bare) !== 0) return true;
  if (name === 'localhost' && listener.loopback) return true;
  return listener.names.some((n) => n.toLowerCase() === name);
}
