/**
 * `worklease serve` (the web console over one or more backends) and
 * `worklease demo` (a simulated fleet, served the same way).
 *
 * The console binds to 127.0.0.1 and requires a sign-in by default (see
 * docs/security.md). A shared token is generated unless one is given
 * (`--token-file`, `WORKLEASE_TOKEN`, `--token`) or the config file names
 * users or a proxy; a generated token is printed only inside the URL to open,
 * on stdout, for the operator who started the command — a given one is never
 * printed. SIGHUP re-reads the config file's users and proxy (and the proxy
 * secret file): a removed token's sessions end without a restart.
 */
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { createServer, isIP } from 'node:net';
import { parseBackendUrl, redactUrl } from '../../backends/url.ts';
import { parseConnectionHosts, type Role } from '../../console/access.ts';
import { type ConnectionInput, createConsoleService } from '../../console/service.ts';
import { startDemoConsole } from '../../demo/console.ts';
import { openBackend } from '../../index.ts';
import { InvalidArgumentError, WorkleaseError } from '../../lease/errors.ts';
import { splitUrlText } from '../../lease/redact.ts';
import type { OpenOptions } from '../../lease/types.ts';
import {
  type AuthOptions,
  checkTokenStrength,
  DEFAULT_PROXY_HEADER,
  DEFAULT_PROXY_SECRET_HEADER,
  generateToken,
} from '../../server/auth.ts';
import { loadServeConfig, type ServeConfig } from '../../server/config.ts';
import {
  type MetricsServer,
  parseMetricsBind,
  startMetricsServer,
  startWebServer,
} from '../../server/index.ts';
import { consolePageDir } from '../console-page.ts';
import { type GlobalOptions, openCli, openOptions, out, resolveUrl, warn } from '../context.ts';

export interface ServeOptions {
  connect?: string[];
  host: string;
  port: number;
  token?: string;
  tokenFile?: string;
  config?: string;
  publicUrl?: string;
  tlsCert?: string;
  tlsKey?: string;
  insecureHttp?: boolean;
  allowConnectionEdits?: boolean;
  pgliteDir?: string;
  maxClients?: number;
  readOnly?: boolean;
  environment?: string;
  /** Serve Prometheus text at /metrics behind the console's sign-in. */
  metrics?: boolean;
  /** Serve /metrics without sign-in on a listener of its own: PORT or HOST:PORT (host default 127.0.0.1). */
  metricsBind?: string;
  /** File holding the trusted proxy's shared secret (else WORKLEASE_PROXY_SECRET). */
  proxySecretFile?: string;
  /** host:port pairs connections added through the API may reach, besides the configured ones. */
  connectionHosts?: string[];
  /** A session without requests or open streams for this long ends, ms. */
  sessionIdle?: number;
  /** A session ends this long after sign-in, ms. */
  sessionLifetime?: number;
  /** Most event streams of one person. */
  maxClientsPerUser?: number;
  /** Most event streams from one source address. */
  maxClientsPerAddress?: number;
}

export interface DemoOptions {
  backend: string;
  workers: number;
  items: number;
  ttl: number;
  tick: number;
  stuckAfter: number;
  groupMembers: number;
  serve: boolean;
  host: string;
  port: number;
  token?: string;
  tokenFile?: string;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost', '[::1]']);

/**
 * The shared token: from `--token-file`, `WORKLEASE_TOKEN` or `--token` (in
 * that order of preference: argv is visible to every user in `ps`), else a
 * generated one when `generate`. Weak or malformed tokens are refused.
 */
function resolveToken(
  options: { token?: string | undefined; tokenFile?: string | undefined },
  generate: boolean,
): { token: string | null; generated: boolean } {
  if (options.token !== undefined && options.tokenFile !== undefined) {
    throw new InvalidArgumentError('give --token or --token-file, not both');
  }
  let token: string | undefined;
  let what = 'the token';
  if (options.tokenFile !== undefined) {
    try {
      // One trailing newline (what `echo` and editors add) is not part of the token.
      token = readFileSync(options.tokenFile, 'utf8').replace(/\r?\n$/, '');
    } catch (err) {
      throw new InvalidArgumentError(
        `cannot read --token-file ${options.tokenFile}: ${(err as Error).message}`,
      );
    }
    what = `the token in ${options.tokenFile}`;
  } else if (process.env.WORKLEASE_TOKEN) {
    token = process.env.WORKLEASE_TOKEN;
    what = 'WORKLEASE_TOKEN';
  } else if (options.token !== undefined) {
    token = options.token;
    what = '--token';
    warn('--token is visible to every user of this machine (ps); prefer --token-file or WORKLEASE_TOKEN');
  }
  if (token !== undefined) return { token: checkTokenStrength(token, what), generated: false };
  return generate ? { token: generateToken(), generated: true } : { token: null, generated: false };
}

/**
 * The trusted proxy's secret: from `--proxy-secret-file` or `WORKLEASE_PROXY_SECRET`, checked
 * like a token. A configured proxy without one is refused: on loopback every local process can
 * connect from the proxy's address, so the address proves nothing.
 */
function resolveProxySecret(config: ServeConfig, file: string | undefined): string | null {
  let secret: string | undefined;
  let what = 'WORKLEASE_PROXY_SECRET';
  if (file !== undefined) {
    try {
      secret = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (err) {
      throw new InvalidArgumentError(`cannot read --proxy-secret-file ${file}: ${(err as Error).message}`);
    }
    what = `the proxy secret in ${file}`;
  } else if (process.env.WORKLEASE_PROXY_SECRET) {
    secret = process.env.WORKLEASE_PROXY_SECRET;
  }
  if (config.proxy === null) {
    // A file named on purpose is a mistake worth saying; a variable left in the environment is not.
    if (file !== undefined) {
      throw new InvalidArgumentError(
        '--proxy-secret-file is given but the config file names no proxy (proxy.trusted)',
      );
    }
    return null;
  }
  if (secret === undefined) {
    throw new InvalidArgumentError(
      `the config file trusts a proxy at ${config.proxy.trusted.join(', ')} but no proxy secret is given: ` +
        'set WORKLEASE_PROXY_SECRET or --proxy-secret-file (e.g. `openssl rand -hex 32`) and have the proxy send it in ' +
        `${config.proxy.secretHeader ?? DEFAULT_PROXY_SECRET_HEADER} on every request`,
    );
  }
  return checkTokenStrength(secret, what);
}

/** The sign-in configuration of the server, from the config file and the secrets. */
function authOf(
  config: ServeConfig,
  token: string | null,
  sharedRole: Role,
  proxySecret: string | null,
): AuthOptions {
  return {
    sharedToken: token,
    sharedRoles: { '*': sharedRole },
    users: config.users,
    proxy: config.proxy === null || proxySecret === null ? null : { ...config.proxy, secret: proxySecret },
  };
}

/** Plain HTTP off loopback sends tokens and cookies in clear: refused unless TLS or --insecure-http. */
function checkHost(host: string, tls: boolean, insecureHttp: boolean): void {
  if (LOOPBACK.has(host) || host.startsWith('127.')) return;
  if (!tls && !insecureHttp) {
    throw new InvalidArgumentError(
      `the console would be reachable on ${host} over plain HTTP (tokens and session cookies in clear): ` +
        'give --tls-cert and --tls-key, or bind to 127.0.0.1 behind a TLS proxy, or pass --insecure-http',
    );
  }
  warn(`the console is bound to ${host}, not loopback: anyone who can reach it can try to sign in.`);
  if (!tls) warn('Traffic is plain HTTP (--insecure-http): tokens and cookies cross the network in clear.');
}

/** A readable connection name: kind, hosts, path and query (secrets redacted), never the user information. */
function connectionName(url: string): string {
  const { kind } = parseBackendUrl(url);
  const shown = redactUrl(url);
  const parts = splitUrlText(shown);
  const rest =
    parts === null
      ? shown.replace(/^[a-z][a-z0-9+.-]*:/i, '')
      : `${parts.hosts}${parts.path}${parts.query === null ? '' : `?${parts.query}`}`;
  return `${kind} ${rest}`.slice(0, 100);
}

/**
 * A listen failure as one operator-sized error: the port taken (exit 8, with
 * the way out), not allowed, or an address this machine does not have.
 */
function listenError(err: unknown, host: string, port: number): unknown {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  const where = `${host}:${port}`;
  if (code === 'EADDRINUSE') {
    return new InvalidArgumentError(`cannot serve the console on ${where}: the port is in use (EADDRINUSE)`, {
      cause: err,
      details: { code, reason: 'port-in-use', host, port },
    });
  }
  if (code === 'EACCES') {
    return new InvalidArgumentError(
      `cannot serve the console on ${where}: not allowed to bind it (EACCES; ports below 1024 need privileges) — use another --port, or --port 0`,
      { cause: err, details: { code, host, port } },
    );
  }
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new InvalidArgumentError(
      `cannot serve the console on ${where}: --host ${host} is not an address of this machine (${code})`,
      { cause: err, details: { code, host, port } },
    );
  }
  return err;
}

/** Binds the console, turning a listen failure into {@link listenError}. */
async function listen(options: Parameters<typeof startWebServer>[0]): ReturnType<typeof startWebServer> {
  try {
    return await startWebServer(options);
  } catch (err) {
    if (err instanceof WorkleaseError) throw err;
    throw listenError(err, options.host ?? '127.0.0.1', options.port ?? 7420);
  }
}

/**
 * Fails fast when the port is taken, before a slow start (the embedded
 * Postgres of `demo` takes seconds): binds it once and lets it go. Another
 * process may still take it in between; then {@link listen} reports it.
 */
function checkPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err) => reject(listenError(err, host, port)));
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

/** Until SIGINT or SIGTERM; each SIGHUP meanwhile calls `onHangup`. */
function untilSignal(onHangup?: () => void): Promise<string> {
  return new Promise((resolve) => {
    const hangup = (): void => onHangup?.();
    const on = (signal: string): void => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      if (onHangup !== undefined) process.off('SIGHUP', hangup);
      resolve(signal);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
    if (onHangup !== undefined) process.on('SIGHUP', hangup);
  });
}

function backendOptions(globals: GlobalOptions): Omit<OpenOptions, 'migrate'> {
  const { migrate: _ignored, ...rest } = openOptions(globals, false);
  return rest;
}

function readPem(path: string | undefined, flag: string): Buffer {
  if (path === undefined) throw new InvalidArgumentError('give both --tls-cert and --tls-key');
  try {
    return readFileSync(path);
  } catch (err) {
    throw new InvalidArgumentError(`cannot read ${flag} ${path}: ${(err as Error).message}`);
  }
}

function pgliteDir(dir: string | undefined): string | undefined {
  if (dir === undefined) return undefined;
  try {
    if (!statSync(dir).isDirectory()) throw new Error('not a directory');
    return realpathSync(dir);
  } catch (err) {
    throw new InvalidArgumentError(
      `--pglite-dir ${dir} must be an existing directory: ${(err as Error).message}`,
    );
  }
}

export async function serveCommand(options: ServeOptions, globals: GlobalOptions): Promise<void> {
  const readOnly = options.readOnly === true;
  if (readOnly && options.allowConnectionEdits === true) {
    throw new InvalidArgumentError('--read-only and --allow-connection-edits exclude each other');
  }
  if (options.connectionHosts !== undefined && options.allowConnectionEdits !== true) {
    throw new InvalidArgumentError(
      '--connection-hosts is for connections added through the page: give --allow-connection-edits too',
    );
  }
  const config: ServeConfig =
    options.config === undefined
      ? { connections: [], users: [], proxy: null }
      : loadServeConfig(options.config);
  // It may hold database passwords: say so when other users can read it.
  if (options.config !== undefined && (statSync(options.config).mode & 0o077) !== 0) {
    warn(`${options.config} is readable by other users: it may hold passwords; chmod 600 it`);
  }
  const given = options.connect?.length ? options.connect : config.connections.length > 0 ? [] : [undefined];
  const urls = given.map((u) => resolveUrl(u));
  const haveUsers = config.users.length > 0 || config.proxy !== null;
  const { token, generated } = resolveToken(options, !haveUsers);
  const proxySecret = resolveProxySecret(config, options.proxySecretFile);
  const tls =
    options.tlsCert === undefined && options.tlsKey === undefined
      ? undefined
      : { cert: readPem(options.tlsCert, '--tls-cert'), key: readPem(options.tlsKey, '--tls-key') };
  checkHost(options.host, tls !== undefined, options.insecureHttp === true);
  const metricsBind = options.metricsBind === undefined ? null : parseMetricsBind(options.metricsBind);
  await checkPortFree(options.host, options.port);
  if (metricsBind !== null) await checkPortFree(metricsBind.host, metricsBind.port);
  const connections: ConnectionInput[] = [
    ...config.connections.map((c) => ({ ...c, readOnly: c.readOnly || readOnly })),
    ...urls.map((url) => ({
      name: connectionName(url),
      url,
      readOnly,
      environment: options.environment ?? '',
    })),
  ];
  // The shared token's holder may do what the server allows (edits only with the flag).
  const sharedRole: Role = options.allowConnectionEdits === true ? 'admin' : 'operator';
  const auth = authOf(config, token, sharedRole, proxySecret);
  const dataDir = pgliteDir(options.pgliteDir);
  const service = createConsoleService({
    readOnly,
    connections,
    backendOptions: backendOptions(globals),
    shared: {
      allowConnectionEdits: options.allowConnectionEdits === true,
      ...(dataDir === undefined ? {} : { pgliteDataDir: dataDir }),
      connectionHosts: parseConnectionHosts(options.connectionHosts ?? []),
    },
  });
  try {
    const server = await listen({
      service,
      staticDir: await consolePageDir(warn),
      host: options.host,
      port: options.port,
      auth,
      readOnly,
      ...(options.publicUrl === undefined ? {} : { publicUrl: options.publicUrl }),
      ...(tls === undefined ? {} : { tls }),
      ...(options.maxClients === undefined ? {} : { maxClients: options.maxClients }),
      metrics: options.metrics === true,
      sessions: {
        ...(options.sessionIdle === undefined ? {} : { idleMs: options.sessionIdle }),
        ...(options.sessionLifetime === undefined ? {} : { lifetimeMs: options.sessionLifetime }),
      },
      limits: {
        ...(options.maxClientsPerUser === undefined
          ? {}
          : { maxStreamsPerIdentity: options.maxClientsPerUser }),
        ...(options.maxClientsPerAddress === undefined
          ? {}
          : { maxStreamsPerAddress: options.maxClientsPerAddress }),
      },
    });
    let metricsServer: MetricsServer | null = null;
    if (metricsBind !== null) {
      if (!(LOOPBACK.has(metricsBind.host) || metricsBind.host.startsWith('127.'))) {
        warn(
          `/metrics is served without sign-in on ${metricsBind.host}: whoever reaches it reads lease counts, holder counts and connection names`,
        );
      }
      try {
        metricsServer = await startMetricsServer({
          service,
          ...metricsBind,
          hostNames: [
            ...(isIP(metricsBind.host) === 0 ? [metricsBind.host] : []),
            ...(options.publicUrl === undefined ? [] : [new URL(options.publicUrl).hostname]),
          ],
          security: () => server.securityCounts(),
        });
      } catch (err) {
        await server.close().catch(() => {});
        throw listenError(err, metricsBind.host, metricsBind.port);
      }
    }
    const signIn = [
      token === null ? null : generated ? 'a generated token (in the URL below)' : 'the given token',
      config.users.some((u) => u.tokenSha256 !== undefined) ? 'per-user tokens' : null,
      config.proxy === null
        ? null
        : `the proxy's ${config.proxy.header ?? DEFAULT_PROXY_HEADER} header with its secret, from ${config.proxy.trusted.join(', ')}`,
    ].filter((x) => x !== null);
    // A given token is never printed (stdout may end up in a log); a generated one must be.
    const shown = generated ? server.url : server.url.replace(/\?token=.*$/, '');
    try {
      await out(
        [
          `worklease console${readOnly ? ' (read-only)' : ''} for ${connections.map((c) => redactUrl(c.url)).join(', ')}`,
          `sign-in: ${signIn.join('; ')}`,
          `open: ${shown}`,
          ...(options.metrics === true
            ? [`metrics: ${new URL('/metrics', server.origin).href} (signed in)`]
            : []),
          ...(metricsServer === null ? [] : [`metrics: ${metricsServer.url} (no sign-in)`]),
          'Ctrl-C to stop',
        ].join('\n'),
      );
      await untilSignal(() => {
        // A bad file leaves the running configuration as it was: refusing everyone is worse.
        try {
          const next = options.config === undefined ? config : loadServeConfig(options.config);
          server.reload(authOf(next, token, sharedRole, resolveProxySecret(next, options.proxySecretFile)));
        } catch (err) {
          warn(`SIGHUP: the configuration was not reloaded: ${(err as Error).message}`);
        }
      });
    } finally {
      await metricsServer?.close().catch(() => {});
      await server.close().catch(() => {});
    }
  } finally {
    await service.close().catch(() => {});
  }
}

/** The demo backend's checkpoint limit: 4 MiB (the fleet saves one JSON of 2.2 MiB). */
const DEMO_MAX_STATE_BYTES = 4 * 1024 * 1024;

export async function demoCommand(options: DemoOptions, globals: GlobalOptions): Promise<void> {
  const url = resolveUrl(options.backend);
  const resolved = options.serve ? resolveToken(options, true) : null;
  const token = resolved?.token ?? undefined;
  if (options.serve && !(LOOPBACK.has(options.host) || options.host.startsWith('127.'))) {
    throw new InvalidArgumentError(
      'worklease demo serves on loopback only; for a console others reach, use worklease serve with TLS',
    );
  }
  if (options.groupMembers > 20) throw new InvalidArgumentError('--group-members must be 0..20');
  if (options.serve) await checkPortFree(options.host, options.port);
  if (parseBackendUrl(url).kind === 'pglite')
    warn(`starting ${redactUrl(url)} (embedded Postgres; this takes a few seconds)`);
  // The fleet's 2.2 MiB JSON export needs more than the default 1 MiB checkpoint limit.
  const backend = new URL(url).searchParams.has('maxStateBytes')
    ? await openCli(url, globals, true)
    : await openBackend(url, { ...openOptions(globals, true), maxStateBytes: DEMO_MAX_STATE_BYTES });
  const demo = startDemoConsole(backend, {
    name: `demo (${connectionName(url)})`,
    url,
    stuckAfterMs: options.stuckAfter,
    ...(options.serve ? { shared: {} } : {}),
    ...(options.groupMembers > 0
      ? { group: { members: options.groupMembers, ttlMs: options.ttl, tickMs: options.tick } }
      : {}),
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
        // backend.url names the schema / key prefix itself.
        `demo fleet: ${options.workers} workers on ${backend.url}\nCtrl-C to stop`,
      );
      await untilSignal();
      return;
    }
    const server = await listen({
      service: demo.service,
      staticDir: await consolePageDir(warn),
      host: options.host,
      port: options.port,
      ...(token === undefined ? {} : { token }),
    });
    try {
      await out(
        `demo fleet: ${options.workers} workers on ${backend.url}\nopen: ${resolved?.generated ? server.url : server.url.replace(/\?token=.*$/, '')}\nCtrl-C to stop`,
      );
      await untilSignal();
    } finally {
      await server.close().catch(() => {});
    }
  } finally {
    await demo.close();
  }
}
