/**
 * Parsing `redis://`, `rediss://` and `redis+cluster://` URLs and building the
 * ioredis client with the retry behaviour the lease contract needs.
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
 * Reconnection itself continues in the background forever with a capped backoff.
 */
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import { InvalidArgumentError } from '../../lease/errors.ts';
import type { ResolvedOptions } from '../common.ts';
import { redactUrl } from '../url.ts';

export interface RedisTarget {
  kind: 'redis' | 'redis-cluster';
  nodes: Array<{ host: string; port: number }>;
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

/**
 * `redis://[user[:password]@]host[:port][/db]`, `rediss://…` (TLS), and
 * `redis+cluster://[user[:password]@]host:port[,host:port…][?tls=true]` (seed nodes).
 */
export function parseRedisUrl(url: string): RedisTarget {
  const m = /^(redis|rediss|redis\+cluster):\/\/(?:([^@/]*)@)?([^/?#]*)(\/[^?#]*)?(?:\?([^#]*))?$/i.exec(url);
  if (m === null) throw bad(url, 'expected redis://, rediss:// or redis+cluster://host:port[,host:port…]');
  const scheme = (m[1] ?? '').toLowerCase();
  const [userPart = '', ...rest] = (m[2] ?? '').split(':');
  const username = decode(url, userPart);
  const password = rest.length > 0 ? decode(url, rest.join(':')) : undefined;
  const hostList = m[3] ?? '';
  if (hostList === '') throw bad(url, 'no host');
  const params = new URLSearchParams(m[5] ?? '');
  for (const key of params.keys()) {
    if (key !== 'tls') throw bad(url, `unknown parameter '${key}' (known: tls)`);
  }
  const tlsParam = params.get('tls');
  if (tlsParam !== null && tlsParam !== 'true' && tlsParam !== 'false')
    throw bad(url, 'tls must be true or false');
  const tls = scheme === 'rediss' || tlsParam === 'true';
  const path = (m[4] ?? '').replace(/^\//, '');
  if (scheme === 'redis+cluster') {
    if (path !== '') throw bad(url, 'a cluster URL has no database number (Redis Cluster has only db 0)');
    const nodes = hostList.split(',').map((h) => parseHostPort(url, h));
    return { kind: 'redis-cluster', nodes, username, password, db: 0, tls, redacted: redactUrl(url) };
  }
  if (hostList.includes(',')) throw bad(url, 'several hosts need redis+cluster://');
  if (path !== '' && !/^\d{1,5}$/.test(path)) throw bad(url, `bad database number '${path}'`);
  return {
    kind: 'redis',
    nodes: [parseHostPort(url, hostList)],
    username,
    password,
    db: path === '' ? 0 : Number(path),
    tls,
    redacted: redactUrl(url),
  };
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
  const node = target.nodes[0]!;
  const standalone: RedisOptions = {
    ...nodeOptions,
    host: node.host,
    port: node.port,
    db: target.db,
    retryStrategy: (times) => Math.min(50 * times, 1000),
  };
  if (target.tls) standalone.tls = { servername: node.host };
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
  const node = target.nodes[0]!;
  const standalone: RedisOptions = {
    ...nodeOptions,
    host: node.host,
    port: node.port,
    db: target.db,
    enableOfflineQueue: false,
    retryStrategy: (times) => Math.min(50 * times, 1000),
  };
  if (target.tls) standalone.tls = { servername: node.host };
  return new Redis(standalone);
}
