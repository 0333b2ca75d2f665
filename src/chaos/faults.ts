/**
 * Server-side fault injectors and namespace cleanup for the chaos harness,
 * done over their own `pg` / `ioredis` connections, never through the backend
 * under test. Connections are found by the naming convention every server
 * backend follows (`application_name` / `CLIENT SETNAME` = `worklease:<namespace>`),
 * so kills hit only this run's connections even on a shared server.
 *
 * `CLIENT PAUSE` is different: it pauses a whole Redis server (every client).
 * Point a run with pauses at a dedicated server or cluster, not a shared one.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import type { BackendKind } from '../lease/types.ts';

export interface NodeAddress {
  host: string;
  port: number;
}

const ADMIN_NAME = 'worklease-chaos';

export function connectionName(namespace: string): string {
  return `worklease:${namespace}`;
}

async function withPg<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, application_name: ADMIN_NAME });
  client.on('error', () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

async function withRedis<T>(node: NodeAddress, fn: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis({
    host: node.host,
    port: node.port,
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    connectTimeout: 5000,
    connectionName: ADMIN_NAME,
  });
  redis.on('error', () => {});
  await redis.connect();
  try {
    return await fn(redis);
  } finally {
    redis.disconnect();
  }
}

/** `host:port` pairs of `redis://…` or `redis+cluster://h1:p1,h2:p2`. */
function seedAddresses(url: string): NodeAddress[] {
  const rest = url.replace(/^[a-z+]+:\/\//i, '');
  const hosts = (rest.split('@').pop() ?? '').split(/[/?]/)[0] ?? '';
  return hosts.split(',').map((hp) => {
    const i = hp.lastIndexOf(':');
    return i < 0 ? { host: hp, port: 6379 } : { host: hp.slice(0, i), port: Number(hp.slice(i + 1)) };
  });
}

/** The masters of a cluster (from CLUSTER NODES), or the one standalone server. */
export async function redisMasters(kind: BackendKind, url: string): Promise<NodeAddress[]> {
  const seeds = seedAddresses(url);
  if (kind !== 'redis-cluster') return seeds.slice(0, 1);
  const seed = seeds[0];
  if (seed === undefined) throw new Error('no node in the cluster URL');
  const text = await withRedis(seed, async (r) => String(await r.call('CLUSTER', 'NODES')));
  const nodes: NodeAddress[] = [];
  for (const line of text.split('\n')) {
    const [, addr, flags] = line.split(' ');
    if (addr === undefined || flags === undefined) continue;
    const f = flags.split(',');
    if (!f.includes('master') || f.includes('fail') || f.includes('noaddr')) continue;
    const hostPort = addr.split('@')[0] ?? '';
    const i = hostPort.lastIndexOf(':');
    nodes.push({ host: hostPort.slice(0, i) || seed.host, port: Number(hostPort.slice(i + 1)) });
  }
  return nodes;
}

function clientFields(line: string): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const part of line.trim().split(' ')) {
    const eq = part.indexOf('=');
    if (eq > 0) out[part.slice(0, eq)] = part.slice(eq + 1);
  }
  return out;
}

/**
 * Makes the server drop this run's connections: `pg_terminate_backend` or
 * `CLIENT KILL ID`. `share` (0..1] is the fraction of them to cut. Returns how many were cut.
 */
export async function killConnections(
  kind: BackendKind,
  url: string,
  namespace: string,
  share = 1,
): Promise<number> {
  const name = connectionName(namespace);
  if (kind === 'pglite') return 0;
  if (kind === 'postgres') {
    return withPg(url, async (client) => {
      const res = await client.query<{ killed: boolean }>(
        `SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity
          WHERE application_name = $1 AND pid <> pg_backend_pid() AND random() < $2`,
        [name, share],
      );
      return res.rows.filter((r) => r.killed).length;
    });
  }
  let killed = 0;
  for (const node of await redisMasters(kind, url)) {
    killed += await withRedis(node, async (redis) => {
      const list = String(await redis.call('CLIENT', 'LIST', 'TYPE', 'normal'));
      let n = 0;
      for (const line of list.split('\n')) {
        const f = clientFields(line);
        if (f.name !== name || f.id === undefined || Math.random() >= share) continue;
        n += Number(await redis.call('CLIENT', 'KILL', 'ID', f.id));
      }
      return n;
    });
  }
  return killed;
}

/** `CLIENT PAUSE ms ALL` on one random master; returns its address. */
export async function pauseRedis(kind: BackendKind, url: string, ms: number): Promise<string> {
  const nodes = await redisMasters(kind, url);
  const node = nodes[Math.floor(Math.random() * nodes.length)];
  if (node === undefined) throw new Error('no Redis node to pause');
  await withRedis(node, (r) => r.call('CLIENT', 'PAUSE', String(Math.round(ms)), 'ALL'));
  return `${node.host}:${node.port}`;
}

/** Removes everything the run stored: the schema, or every key of the prefix (bucket keys included). */
export async function dropNamespace(kind: BackendKind, url: string, namespace: string): Promise<void> {
  if (kind === 'pglite') return;
  if (kind === 'postgres') {
    await withPg(url, (c) => c.query(`DROP SCHEMA IF EXISTS "${namespace.replaceAll('"', '""')}" CASCADE`));
    return;
  }
  const escaped = namespace.replace(/[*?[\]\\]/g, '\\$&');
  for (const node of await redisMasters(kind, url)) {
    await withRedis(node, async (redis) => {
      for (const pattern of [`${escaped}:*`, `\\{${escaped}:*`]) {
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
          cursor = next;
          // One key per UNLINK: keys on one node span slots, and multi-key commands across slots are refused.
          if (keys.length > 0) await Promise.all(keys.map((k) => redis.unlink(k)));
        } while (cursor !== '0');
      }
    });
  }
}
