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
 * Drops `client`'s connection (it reconnects and asks the sentinels) unless it is connected to
 * `to` already: every sentinel announces the same switch, and only the first should cost a reconnect.
 */
export function followSwitch(client: Redis, to: { host: string; port: number }): void {
  const stream = client.stream;
  const at = stream === undefined ? undefined : { host: stream.remoteAddress, port: stream.remotePort };
  const there =
    client.status === 'ready' &&
    at?.port === to.port &&
    (at.host === to.host || at.host === `::ffff:${to.host}`);
  if (!there && client.status !== 'reconnecting' && client.status !== 'end') client.disconnect(true);
}
