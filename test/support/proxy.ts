/**
 * A TCP proxy between a backend and its real server, for faults that must sit
 * on the wire: `blackhole()` stops forwarding in both directions while keeping
 * every socket open, so calls hang exactly as with a server that stopped
 * answering (a partition, a stuck primary). `restore()` lets the buffered bytes
 * flow again. The server behind is real; only the network is faulty.
 */
import net from 'node:net';

export interface TcpProxy {
  /** Loopback port the proxy listens on. */
  readonly port: number;
  /** `url` with its host:port replaced by the proxy's. */
  rewrite(url: string): string;
  /** Stop forwarding (new connections are accepted and held too). */
  blackhole(): void;
  /** Forward again, including what was held. */
  restore(): void;
  /** Connections currently open through the proxy. */
  readonly connections: number;
  close(): Promise<void>;
}

export async function startProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  let holding = false;
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();

  const server = net.createServer((client) => {
    const upstream = net.connect({ host: targetHost, port: targetPort });
    const pair = { client, upstream };
    pairs.add(pair);
    // Explicit data handlers rather than pipe(): pause()/resume() must be the only thing deciding the flow.
    client.on('data', (chunk) => {
      if (!upstream.write(chunk)) client.pause();
    });
    upstream.on('data', (chunk) => {
      if (!client.write(chunk)) upstream.pause();
    });
    client.on('drain', () => {
      if (!holding) upstream.resume();
    });
    upstream.on('drain', () => {
      if (!holding) client.resume();
    });
    const end = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
    if (holding) {
      client.pause();
      upstream.pause();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no TCP address');
  const port = address.port;

  return {
    port,
    rewrite(url: string): string {
      return url.replace(/^([a-z+]+:\/\/(?:[^@/]*@)?)[^/?#]+/i, `$1127.0.0.1:${port}`);
    },
    blackhole(): void {
      holding = true;
      for (const { client, upstream } of pairs) {
        client.pause();
        upstream.pause();
      }
    },
    restore(): void {
      holding = false;
      for (const { client, upstream } of pairs) {
        client.resume();
        upstream.resume();
      }
    },
    get connections(): number {
      return pairs.size;
    },
    async close(): Promise<void> {
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      pairs.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
