/**
 * Prometheus text exposition (format 0.0.4) of the console's figures: leases by
 * status, stuck leases and holders per connection, whether each connection is
 * live, and the console's own load on each backend (calls in all, and per
 * second). Served at `/metrics` by the web server behind its sign-in
 * (`serve --metrics`: a bearer token or the session cookie, connections
 * filtered by the caller's roles), or by {@link startMetricsServer} on a
 * listener of its own without sign-in (`serve --metrics-bind`), loopback
 * unless the operator names another address.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LEASE_STATUSES } from '../console/api.ts';
import type { ConnectionMetrics, ConsoleService } from '../console/service.ts';
import { InvalidArgumentError } from '../lease/errors.ts';
import { LOOPBACK, metricsHostAccepted } from './guards/host.ts';
import { SECURITY_EVENTS, type SecurityEvent } from './security-log.ts';

export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** A label value: backslash, double quote and line feed escaped, as the text format wants. */
export function escapeLabel(value: string): string {
  return value.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n');
}

/** HELP text: backslash and line feed escaped. */
function escapeHelp(text: string): string {
  return text.replaceAll('\\', '\\\\').replaceAll('\n', '\\n');
}

function num(n: number): string {
  return Number.isFinite(n) ? String(n) : n > 0 ? '+Inf' : n < 0 ? '-Inf' : 'NaN';
}

interface Family {
  name: string;
  type: 'gauge' | 'counter';
  help: string;
  samples: Array<{ labels: Record<string, string>; value: number }>;
}

function render(families: Family[]): string {
  const out: string[] = [];
  for (const f of families) {
    out.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`);
    for (const s of f.samples) {
      const labels = Object.entries(s.labels)
        .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
        .join(',');
      out.push(`${f.name}${labels === '' ? '' : `{${labels}}`} ${num(s.value)}`);
    }
  }
  return `${out.join('\n')}\n`;
}

/** The exposition of these connections' figures, and of the security log's counters when given. */
export function formatMetrics(
  connections: readonly ConnectionMetrics[],
  security?: Readonly<Record<SecurityEvent, number>>,
): string {
  const base = (c: ConnectionMetrics) => ({ connection: c.name, connection_id: c.id });
  const synced = connections.filter((c) => c.byStatus !== null);
  const checked = connections.filter((c) => c.heartbeats !== null);
  return render([
    {
      name: 'worklease_console_connection_up',
      type: 'gauge',
      help: 'Whether the console follows the connection live (1) or not (0: connecting, stale, reconnecting, error).',
      samples: connections.map((c) => ({
        labels: { ...base(c), kind: c.kind },
        value: c.state === 'live' ? 1 : 0,
      })),
    },
    {
      name: 'worklease_console_leases',
      type: 'gauge',
      help: "Leases by status, derived at the backend's time (the console's status rules and thresholds).",
      samples: synced.flatMap((c) =>
        LEASE_STATUSES.map((status) => ({ labels: { ...base(c), status }, value: c.byStatus![status] })),
      ),
    },
    {
      name: 'worklease_console_stuck_leases',
      type: 'gauge',
      help: 'Leases renewed without checkpoint progress for longer than the stuck threshold.',
      samples: synced.map((c) => ({ labels: base(c), value: c.byStatus!.stuck })),
    },
    {
      name: 'worklease_console_holders',
      type: 'gauge',
      help: 'Distinct holders of the leases held now (live, expiring or stuck).',
      samples: synced.map((c) => ({ labels: base(c), value: c.holders ?? 0 })),
    },
    {
      name: 'worklease_console_heartbeats_checked_age_seconds',
      type: 'gauge',
      help: "Time since the last complete heartbeat check (a sweep of the fleet: the change feed carries no renews) began, by the backend's clock. Statuses are judged no later than that moment.",
      samples: checked.map((c) => ({ labels: base(c), value: c.heartbeats!.ageSeconds })),
    },
    {
      name: 'worklease_console_heartbeat_check_interval_seconds',
      type: 'gauge',
      help: 'The interval heartbeat checks run at now: 2 s, or 5 times a sweep where the fleet makes a sweep slower.',
      samples: checked.map((c) => ({ labels: base(c), value: c.heartbeats!.intervalSeconds })),
    },
    {
      name: 'worklease_console_heartbeat_check_duration_seconds',
      type: 'gauge',
      help: 'How long the last heartbeat check (serverTime and every list page) took.',
      samples: checked.map((c) => ({ labels: base(c), value: c.heartbeats!.lastSeconds })),
    },
    {
      name: 'worklease_console_backend_calls_total',
      type: 'counter',
      help: "The console's own calls to the backend (feed polls, heartbeats, reads, operator actions).",
      samples: connections.map((c) => ({ labels: base(c), value: c.callsTotal })),
    },
    {
      name: 'worklease_console_backend_calls_per_second',
      type: 'gauge',
      help: "The console's own calls to the backend per second, averaged over the last 10 s.",
      samples: connections.map((c) => ({ labels: base(c), value: c.callsPerSecond })),
    },
    ...(security === undefined
      ? []
      : [
          {
            name: 'worklease_console_security_events_total',
            type: 'counter' as const,
            help: 'Events of the security log since start (sign-in, failures, sign-out, revocations, proxy refusals, forbidden calls, caps).',
            samples: SECURITY_EVENTS.map((event) => ({ labels: { event }, value: security[event] })),
          },
        ]),
  ]);
}

export interface MetricsServer {
  /** `http://host:port/metrics` */
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * A listener that answers `GET /metrics` with every connection's figures and
 * nothing else, without sign-in: for a scraper on the same machine (the
 * default host is 127.0.0.1) or on a network the operator chose by naming
 * another host.
 */
export async function startMetricsServer(options: {
  service: Pick<ConsoleService, 'metrics'>;
  host?: string;
  port: number;
  /**
   * DNS names a scraper may send as Host (besides IP literals, and `localhost` on loopback):
   * a name that is not listed gets 421, so a page whose name was rebound to this address
   * reads nothing.
   */
  hostNames?: readonly string[];
  /** The security log's counters, shown with the connections' figures. */
  security?: () => Readonly<Record<SecurityEvent, number>>;
}): Promise<MetricsServer> {
  const host = options.host ?? '127.0.0.1';
  let port = 0;
  const names = options.hostNames ?? [];
  const server: Server = createServer((req, res) => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Cache-Control', 'no-store');
    if (!metricsHostAccepted(req.headers.host, { port, loopback: LOOPBACK.test(host), names })) {
      res.writeHead(421, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('misdirected request: this Host is not served here\n');
      return;
    }
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('not found: this listener serves /metrics only\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('method not allowed\n');
      return;
    }
    const body = formatMetrics(options.service.metrics(undefined), options.security?.());
    res.writeHead(200, { 'Content-Type': METRICS_CONTENT_TYPE, 'Content-Length': Buffer.byteLength(body) });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  const shown = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}/metrics`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** `--metrics-bind`: `PORT`, `HOST:PORT` or `[IPv6]:PORT`; the host defaults to 127.0.0.1. */
export function parseMetricsBind(text: string): { host: string; port: number } {
  const m = /^(?:(\[[0-9a-fA-F:.]+\]|[^:[\]]+):)?(\d{1,5})$/.exec(text.trim());
  const port = m === null ? Number.NaN : Number(m[2]);
  if (m === null || !Number.isInteger(port) || port > 65_535) {
    throw new InvalidArgumentError(`--metrics-bind must be PORT or HOST:PORT (port 0..65535), got '${text}'`);
  }
  const host = m[1] === undefined ? '127.0.0.1' : m[1].replace(/^\[(.*)\]$/, '$1');
  return { host, port };
}
