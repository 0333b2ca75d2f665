/**
 * `worklease serve` (the web console over one or more backends) and
 * `worklease demo` (a simulated fleet, served the same way).
 *
 * The console binds to 127.0.0.1 and requires a bearer token by default. The
 * token is generated unless given; it is printed only inside the URL to open,
 * on stdout, for the operator who started the command.
 */
import { randomBytes } from 'node:crypto';
import { parseBackendUrl, redactUrl } from '../../backends/url.ts';
import { type ConnectionInput, createConsoleService } from '../../console/service.ts';
import { startDemoConsole } from '../../demo/console.ts';
import { InvalidArgumentError } from '../../lease/errors.ts';
import type { OpenOptions } from '../../lease/types.ts';
import { startWebServer } from '../../server/index.ts';
import { consolePageDir } from '../console-page.ts';
import { type GlobalOptions, openCli, openOptions, out, resolveUrl, warn } from '../context.ts';

export interface ServeOptions {
  connect?: string[];
  host: string;
  port: number;
  token?: string;
  readOnly?: boolean;
  environment?: string;
}

export interface DemoOptions {
  backend: string;
  workers: number;
  items: number;
  ttl: number;
  tick: number;
  stuckAfter: number;
  serve: boolean;
  host: string;
  port: number;
  token?: string;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost', '[::1]']);

function resolveToken(given: string | undefined): string {
  const token = given ?? process.env.WORKLEASE_TOKEN ?? randomBytes(24).toString('base64url');
  if (token.length < 16) throw new InvalidArgumentError('--token must be at least 16 characters');
  return token;
}

function checkHost(host: string): void {
  if (LOOPBACK.has(host) || host.startsWith('127.')) return;
  warn('!!! WARNING !!!');
  warn(`the console is bound to ${host}, not loopback: anyone who can reach this address and learns the`);
  warn('token can force-release leases. Traffic is plain HTTP (the token crosses the network in clear).');
  warn('Prefer 127.0.0.1 with an SSH tunnel, or add --read-only.');
}

/** A readable connection name: kind and host part, never the password. */
function connectionName(url: string): string {
  const { kind } = parseBackendUrl(url);
  const rest = redactUrl(url)
    .replace(/^[a-z][a-z0-9+.-]*:\/\//i, '')
    .replace(/^[^@/]*@/, '');
  return `${kind} ${rest}`.slice(0, 100);
}

function untilSignal(): Promise<string> {
  return new Promise((resolve) => {
    const on = (signal: string): void => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(signal);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}

function backendOptions(globals: GlobalOptions): Omit<OpenOptions, 'migrate'> {
  const { migrate: _ignored, ...rest } = openOptions(globals, false);
  return rest;
}

export async function serveCommand(options: ServeOptions, globals: GlobalOptions): Promise<void> {
  const urls = (options.connect?.length ? options.connect : [undefined]).map((u) => resolveUrl(u));
  const token = resolveToken(options.token);
  checkHost(options.host);
  const connections: ConnectionInput[] = urls.map((url) => ({
    name: connectionName(url),
    url,
    readOnly: options.readOnly === true,
    environment: options.environment ?? '',
  }));
  const service = createConsoleService({
    readOnly: options.readOnly === true,
    connections,
    backendOptions: backendOptions(globals),
  });
  try {
    const server = await startWebServer({
      service,
      staticDir: await consolePageDir(warn),
      host: options.host,
      port: options.port,
      token,
      readOnly: options.readOnly === true,
    });
    try {
      await out(
        [
          `worklease console${options.readOnly ? ' (read-only)' : ''} for ${urls.map(redactUrl).join(', ')}`,
          `open: ${server.url}`,
          'Ctrl-C to stop',
        ].join('\n'),
      );
      await untilSignal();
    } finally {
      await server.close().catch(() => {});
    }
  } finally {
    await service.close().catch(() => {});
  }
}

export async function demoCommand(options: DemoOptions, globals: GlobalOptions): Promise<void> {
  const url = resolveUrl(options.backend);
  const token = options.serve ? resolveToken(options.token) : '';
  if (options.serve) checkHost(options.host);
  if (parseBackendUrl(url).kind === 'pglite')
    warn(`starting ${redactUrl(url)} (embedded Postgres; this takes a few seconds)`);
  const backend = await openCli(url, globals, true);
  const demo = startDemoConsole(backend, {
    name: `demo (${connectionName(url)})`,
    url,
    stuckAfterMs: options.stuckAfter,
    fleet: {
      workers: options.workers,
      items: options.items,
      ttlMs: options.ttl,
      tickMs: options.tick,
      // Stuck workers stay stuck long enough for ops to find and force-release them, then give up.
      stuckForMs: options.stuckAfter * 10,
      onError: (err) => {
        if (globals.debug) warn(`demo worker: ${err instanceof Error ? err.message : String(err)}`);
      },
    },
  });
  try {
    if (!options.serve) {
      await out(
        `demo fleet: ${options.workers} workers on ${backend.url}${globals.schema ? ` (schema ${globals.schema})` : ''}\nCtrl-C to stop`,
      );
      await untilSignal();
      return;
    }
    const server = await startWebServer({
      service: demo.service,
      staticDir: await consolePageDir(warn),
      host: options.host,
      port: options.port,
      token,
    });
    try {
      await out(
        `demo fleet: ${options.workers} workers on ${backend.url}\nopen: ${server.url}\nCtrl-C to stop`,
      );
      await untilSignal();
    } finally {
      await server.close().catch(() => {});
    }
  } finally {
    await demo.close();
  }
}
