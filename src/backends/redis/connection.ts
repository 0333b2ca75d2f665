/**
 * Parsing `redis://`, `rediss://`, `redis+cluster://` and `redis+sentinel://` URLs and building
 * the ioredis client with the retry behaviour the lease contract needs.
 *
 * Retry policy (why these options): every lease call is a single attempt and
 * the holder layer owns retries (DESIGN §2). A script whose reply was lost may
 * or may not have run, and re-sending it is not harmless (see scripts.ts:
 * a re-sent acquire answers LEASE_HELD, a re-sent release LEASE_EXPIRED), so
 * the client must never re-send a call by itself:
 * - `autoResendUnfulfilledCommands: false` and `maxRetriesPerRequest: 0`: a
 *   call in flight when the socket drops is rejected at once (ioredis flushes
 *   its queue on close) → BACKEND_UNAVAILABLE, never replayed after reconnect.
 * - Standalone `enableOfflineQueue: false` plus our own ready gate (send.ts):
 *   a call made while reconnecting waits for the new socket up to
 *   `callTimeoutMs` and is written only then, or fails without ever being
 *   written. ioredis' own offline queue would write a call that already
 *   timed out for its caller once the socket came back, applying it late.
 * - Cluster `retryDelayOnFailover: 0`: ioredis would otherwise re-send a call
 *   whose node connection closed under it to another node. MOVED / ASK /
 *   TRYAGAIN / CLUSTERDOWN are still followed: those replies mean the command
 *   was not executed, so following them cannot double-apply.
 * - Every call is bounded by callTimeoutMs by the driver's watchdog (send.ts),
 *   which also makes a call that timed out while queued unable to run later.
 *   The node connect timeout is half of callTimeoutMs, so a call queued on a
 *   cluster node that is still connecting is normally written well before that.
 * - Sentinel (`redis+sentinel://`): every (re)connect asks the sentinels for the master and
 *   checks that the server it reached calls itself master (ioredis' ready check), so a reconnect
 *   after a failover reaches the new master. A READONLY reply (the master was demoted under us)
 *   fails that call and makes the client reconnect (`reconnectOnError` 1: never re-sent), and
 *   sentinel.ts drops the connection on Sentinel's `+switch-master`. A call in flight then fails
 *   BACKEND_UNAVAILABLE; the next one waits for the new master (send.ts, the ready gate).
 * Reconnection itself continues in the background forever with a capped backoff.
 */
import net from 'node:net';
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import { InvalidArgumentError } from '../../lease/errors.ts';
import type { ResolvedOptions } from '../common.ts';
import { redactUrl } from '../url.ts';

export interface RedisTarget {
  kind: 'redis' | 'redis-cluster';
  /** The server, the Cluster's seed nodes, or (with {@link sentinel}) the sentinels. */
  nodes: Array<{ host: string; port: number }>;
  /** `redis+sentinel://`: the master's name at the sentinels, and their password. */
  sentinel?: { name: string; password: string | undefined };
  username: string | undefined;
  password: string | undefined;
  db: number;
  tls: boolean;
  /** The URL with the password replaced, for messages. */
  redacted: string;
}

function bad(url: string, why: string): InvalidArgumentError {
  return new InvalidArgumentError(`invalid Redis URL '${redactUrl(url)}': ${why}`);
}

function decode(url: string, part: string): string | undefined {
  if (part === '') return undefined;
  try {
    return decodeURIComponent(part);
  } catch {
    throw bad(url, 'bad percent-encoding in the user or password');
  }
}

function parsePort(url: string, text: string | undefined): number {
  if (text === undefined || text === '') return 6379;
  const port = Number(text);
  if (!/^\d{1,5}$/.test(text) || port < 1 || port > 65535) throw bad(url, `bad port '${text}'`);
  return port;
}

function parseHostPort(url: string, text: string): { host: string; port: number } {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d*))?$/.exec(text);
  if (m === null || m[1] === undefined) throw bad(url, `bad host '${text}'`);
  return { host: m[1].replace(/^\[|\]$/g, ''), port: parsePort(url, m[2]) };
}

/** The query parameters a Redis URL passes to the driver (url.ts, URL_OPTIONS), checked. */
function parseParams(url: string, query: string, sentinel: boolean): URLSearchParams {
  const params = new URLSearchParams(query);
  const known = sentinel ? ['tls', 'db', 'sentinelPassword'] : ['tls'];
  for (const key of params.keys()) {
    if (known.includes(key)) continue;
    const only = key === 'db' || key === 'sentinelPassword' ? ' (only redis+sentinel:// takes it)' : '';
    throw bad(url, `unknown parameter '${key}'${only} (known: ${known.join(', ')})`);
  }
  const tlsParam = params.get('tls');
  if (tlsParam !== null && tlsParam !== 'true' && tlsParam !== 'false')
    throw bad(url, 'tls must be true or false');
  return params;
}

function parseDb(url: string, text: string): number {
  // Redis' own limit is the server's `databases` setting, checked when opening (open.ts, selectDb).
  if (!/^\d{1,5}$/.test(text)) throw bad(url, `bad database number '${text}'`);
  return Number(text);
}

/**
 * `redis://[user[:password]@]host[:port][/db]`, `rediss://…` (TLS),
 * `redis+cluster://[user[:password]@]host:port[,host:port…][?tls=true]` (seed nodes), and
 * `redis+sentinel://[user[:password]@]host:port[,host:port…]/<masterName>[?db=…&sentinelPassword=…&tls=…]`
 * (the sentinels; user and password are the master's).
 */
export function parseRedisUrl(url: string): RedisTarget {
  const m =
    /^(redis|rediss|redis\+cluster|redis\+sentinel):\/\/(?:([^@/]*)@)?([^/?#]*)(\/[^?#]*)?(?:\?([^#]*))?$/i.exec(
      url,
    );
  if (m === null)
    throw bad(
      url,
      'expected redis://, rediss://, redis+cluster://host:port[,host:port…] or redis+sentinel://host:port[,host:port…]/masterName',
    );
  const scheme = (m[1] ?? '').toLowerCase();
  const [userPart = '', ...rest] = (m[2] ?? '').split(':');
  const username = decode(url, userPart);
  const password = rest.length > 0 ? decode(url, rest.join(':')) : undefined;
  const hostList = m[3] ?? '';
  if (hostList === '') throw bad(url, 'no host');
  const params = parseParams(url, m[5] ?? '', scheme === 'redis+sentinel');
  const tls = scheme === 'rediss' || params.get('tls') === 'true';
  const path = (m[4] ?? '').replace(/^\//, '');
  const redacted = redactUrl(url);
  if (scheme === 'redis+cluster') {
    if (path !== '') throw bad(url, 'a cluster URL has no database number (Redis Cluster has only db 0)');
    const nodes = hostList.split(',').map((h) => parseHostPort(url, h));
    return { kind: 'redis-cluster', nodes, username, password, db: 0, tls, redacted };
  }
  if (scheme === 'redis+sentinel') {
    const name = path === '' ? undefined : decode(url, path);
    if (name === undefined || name.includes('/'))
      throw bad(url, 'a sentinel URL names its master: redis+sentinel://host:port[,host:port…]/masterName');
    const nodes = hostList.split(',').map((h) => parseHostPort(url, h));
    const db = params.get('db');
    return {
      kind: 'redis',
      nodes,
      sentinel: { name, password: params.get('sentinelPassword') ?? undefined },
      username,
      password,
      db: db === null ? 0 : parseDb(url, db),
      tls,
      redacted,
    };
  }
  if (hostList.includes(',')) throw bad(url, 'several hosts need redis+cluster:// or redis+sentinel://');
  return {
    kind: 'redis',
    nodes: [parseHostPort(url, hostList)],
    username,
    password,
    db: path === '' ? 0 : parseDb(url, path),
    tls,
    redacted,
  };
}

/**
 * TLS options for a connection to `host`: the host as SNI server name, unless it is an IP address
 * (Node warns, DEP0123, and RFC 6066 allows only host names there).
 */
export function tlsFor(host: string): { servername?: string } {
  return net.isIP(host) === 0 ? { servername: host } : {};
}

/**
 * A sentinel target's options (connection.ts header, Sentinel): the sentinels, the master's name,
 * READONLY as a reason to reconnect (the failed call is not re-sent), no failover detector of
 * ioredis (its sentinel connections have no error listener, so a dead sentinel would print to
 * stderr: sentinel.ts watches `+switch-master` instead).
 */
function sentinelOptions(target: RedisTarget, base: RedisOptions): RedisOptions {
  const s = target.sentinel!;
  const options: RedisOptions = {
    ...base,
    sentinels: target.nodes,
    name: s.name,
    role: 'master',
    db: target.db,
    failoverDetector: false,
    updateSentinels: false,
    sentinelCommandTimeout: base.connectTimeout,
    sentinelRetryStrategy: (times) => Math.min(50 * times, 1000),
    reconnectOnError: (err) => (/^READONLY/.test(err.message) ? 1 : false),
    retryStrategy: (times) => Math.min(50 * times, 1000),
  };
  if (s.password !== undefined) options.sentinelPassword = s.password;
  if (target.tls) {
    options.tls = {};
    options.sentinelTLS = {};
    options.enableTLSForSentinelMode = true;
  }
  return options;
}

export type RedisClient = Redis | Cluster;

/**
 * A connection for the change watch only (feed.ts, ChangeWatch): sharded Pub/Sub on a Cluster, a
 * blocking XREAD on standalone Redis, each of which needs a connection of its own. It may queue
 * commands while connecting, reconnects forever and sends a command in flight again on the new
 * connection (a blocking XREAD from the same stream ids misses nothing); it only reads, and a lost
 * wake-up only delays a reader until its next poll, so none of the at-most-once care of lease
 * calls applies.
 */
export function createSubscriber(target: RedisTarget, options: ResolvedOptions): RedisClient {
  const nodeOptions: RedisOptions = {
    connectionName: `worklease:${options.keyPrefix}:watch`,
    connectTimeout: Math.max(1, Math.floor(options.callTimeoutMs / 2)),
    disableClientInfo: true,
    keepAlive: 30_000,
    lazyConnect: true,
    // The driver subscribes again on every 'ready' itself, and wakes its readers then.
    autoResubscribe: false,
    maxRetriesPerRequest: null,
  };
  if (target.username !== undefined) nodeOptions.username = target.username;
  if (target.password !== undefined) nodeOptions.password = target.password;
  if (target.tls) nodeOptions.tls = {};
  if (target.kind === 'redis-cluster') {
    return new Cluster(target.nodes, {
      redisOptions: { ...nodeOptions, autoResubscribe: true },
      lazyConnect: true,
      shardedSubscribers: true,
      clusterRetryStrategy: (times) => Math.min(100 * times, 2000),
    });
  }
  if (target.sentinel !== undefined) return new Redis(sentinelOptions(target, nodeOptions));
  const node = target.nodes[0]!;
  const standalone: RedisOptions = {
    ...nodeOptions,
    host: node.host,
    port: node.port,
    db: target.db,
    retryStrategy: (times) => Math.min(50 * times, 1000),
  };
  if (target.tls) standalone.tls = tlsFor(node.host);
  return new Redis(standalone);
}

export function createClient(target: RedisTarget, options: ResolvedOptions): RedisClient {
  const nodeOptions: RedisOptions = {
    connectionName: `worklease:${options.keyPrefix}`,
    connectTimeout: Math.max(1, Math.floor(options.callTimeoutMs / 2)),
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    // CLIENT SETINFO is Redis 7.2+; on 7.0 it is one wasted round trip per connect.
    disableClientInfo: true,
    keepAlive: 30_000,
    lazyConnect: true,
  };
  if (target.username !== undefined) nodeOptions.username = target.username;
  if (target.password !== undefined) nodeOptions.password = target.password;
  if (target.tls) nodeOptions.tls = {};
  if (target.kind === 'redis-cluster') {
    const clusterOptions: ClusterOptions = {
      redisOptions: nodeOptions,
      lazyConnect: true,
      enableOfflineQueue: true,
      scaleReads: 'master',
      retryDelayOnFailover: 0,
      retryDelayOnClusterDown: 100,
      retryDelayOnTryAgain: 100,
      maxRedirections: 16,
      slotsRefreshTimeout: Math.max(100, Math.min(options.callTimeoutMs, 2000)),
      clusterRetryStrategy: (times) => Math.min(100 * times, 2000),
    };
    return new Cluster(target.nodes, clusterOptions);
  }
  if (target.sentinel !== undefined) {
    return new Redis({ ...sentinelOptions(target, nodeOptions), enableOfflineQueue: false });
  }
  const node = target.nodes[0]!;
  const standalone: RedisOptions = {
    ...nodeOptions,
    host: node.host,
    port: node.port,
    db: target.db,
    enableOfflineQueue: false,
    retryStrategy: (times) => Math.min(50 * times, 1000),
  };
  if (target.tls) standalone.tls = tlsFor(node.host);
  return new Redis(standalone);
}
