/**
 * Following a Sentinel-managed master (`redis+sentinel://`). ioredis asks the sentinels for the
 * master on every (re)connect and checks that the server calls itself master (connection.ts);
 * what it does not do by itself is notice a failover while its connection to the old master is
 * still up (a demoted master keeps its clients). Two signals end that connection:
 * - a READONLY reply (connection.ts, `reconnectOnError`): that call fails, the client reconnects;
 * - Sentinel's `+switch-master` event, which {@link SentinelWatch} subscribes to on every sentinel:
 *   the lease client drops its connection at once if it is not at the new master's address.
 *
 * Either way the calls in flight fail BACKEND_UNAVAILABLE (never re-sent: they may have run on the
 * old master), and the next call waits for the connection to the new master (send.ts).
 *
 * ioredis has a failover detector of its own (`failoverDetector`), off here: its sentinel
 * connections have no 'error' listener, so a sentinel going away would print to stderr.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { type RedisTarget, tlsFor } from './connection.ts';
import type { Wire } from './wire.ts';

/** Sentinel's channel for a completed failover: `<name> <old ip> <old port> <new ip> <new port>`. */
const SWITCH_MASTER = '+switch-master';

/** Parses a `+switch-master` message for master `name`: the new master's address, or undefined. */
export function switchedTo(message: string, name: string): { host: string; port: number } | undefined {
  const parts = message.split(' ');
  if (parts.length !== 5 || parts[0] !== name) return undefined;
  const port = Number(parts[4]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  return { host: parts[3]!, port };
}

/** Subscribes to `+switch-master` on every sentinel of `target` and reports this master's switches. */
export class SentinelWatch {
  private readonly subscribers: Redis[];

  constructor(
    target: RedisTarget,
    connectTimeoutMs: number,
    onSwitch: (to: { host: string; port: number }) => void,
  ) {
    const sentinel = target.sentinel!;
    this.subscribers = target.nodes.map((node) => {
      const options: RedisOptions = {
        host: node.host,
        port: node.port,
        connectionName: 'worklease:sentinel-watch',
        connectTimeout: connectTimeoutMs,
        disableClientInfo: true,
        enableReadyCheck: false,
        keepAlive: 30_000,
        maxRetriesPerRequest: null,
        autoResubscribe: true,
        retryStrategy: (times) => Math.min(100 * times, 2000),
      };
      if (sentinel.password !== undefined) options.password = sentinel.password;
      if (target.tls) options.tls = tlsFor(node.host);
      const client = new Redis(options);
      // A sentinel that is down is retried in the background; nothing reaches stderr.
      client.on('error', () => {});
      client.on('message', (channel: string, message: string) => {
        if (channel !== SWITCH_MASTER) return;
        const to = switchedTo(message, sentinel.name);
        if (to !== undefined) onSwitch(to);
      });
      client.subscribe(SWITCH_MASTER).catch(() => {});
      return client;
    });
  }

  close(): void {
    for (const client of this.subscribers) client.disconnect();
  }
}

/**
 * Moves `client` to the master a `+switch-master` named (ioredis asks the sentinels when it
 * reconnects), once it is connected somewhere else. Every sentinel announces the same switch, and
 * only the first should cost a reconnect. Never while it connects: ioredis' Sentinel connector,
 * disconnected while it asks the sentinels, fails its connect and ends the client for good ('end');
 * the switch is then checked when it is ready.
 */
export class MasterFollower {
  private wanted: { host: string; port: number } | undefined;

  constructor(private readonly client: Redis) {
    client.on('ready', () => this.check());
  }

  switched(to: { host: string; port: number }): void {
    this.wanted = to;
    this.check();
  }

  private check(): void {
    const to = this.wanted;
    if (to === undefined || this.client.status !== 'ready') return;
    const stream = this.client.stream;
    const host = stream?.remoteAddress;
    const there = stream?.remotePort === to.port && (host === to.host || host === `::ffff:${to.host}`);
    this.wanted = undefined;
    if (!there) this.client.disconnect(true);
  }
}

/**
 * Connects `client` again whenever it ended without being closed (`closed()` false): ioredis'
 * Sentinel connector ends the client when a connect fails in a way it does not retry by itself
 * (disconnected while asking the sentinels). Its calls meanwhile fail BACKEND_UNAVAILABLE.
 */
export function keepConnecting(client: Redis, closed: () => boolean): void {
  client.on('end', () => {
    if (closed()) return;
    const timer = setTimeout(() => {
      if (!closed() && client.status === 'end') client.connect().catch(() => {});
    }, 200);
    timer.unref();
  });
}

/**
 * Keeps the lease calls' own connection (wire.ts) at the master the ioredis client reached (asked
 * of the sentinels and checked: connection.ts): it connects there, and is reset when ioredis gets
 * ready at another one.
 */
export class WireFollower {
  constructor(
    private readonly client: Redis,
    private readonly wire: Wire,
  ) {
    client.on('ready', () => {
      if (!same(this.address(), wire.peer)) wire.reset();
    });
  }

  /** The address the ioredis client is connected to now; undefined while it is not ready. */
  address(): { host: string; port: number } | undefined {
    const stream = this.client.stream;
    if (this.client.status !== 'ready' || stream?.remoteAddress === undefined) return undefined;
    if (stream.remotePort === undefined) return undefined;
    return { host: stream.remoteAddress, port: stream.remotePort };
  }

  /**
   * A READONLY reply on the lease calls' connection: the master was demoted under it. It is reset,
   * and so is ioredis' connection when it is at the same server, so that both ask again.
   */
  demoted(): void {
    const peer = this.wire.peer;
    const at = this.address();
    this.wire.reset();
    if (at !== undefined && same(at, peer)) this.client.disconnect(true);
  }
}

function same(
  a: { host: string; port: number } | undefined,
  b: { host: string; port: number } | undefined,
): boolean {
  return a === undefined || b === undefined || (a.host === b.host && a.port === b.port);
}
