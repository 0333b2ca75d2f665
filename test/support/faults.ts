/**
 * Fault injection and cleanup for the conformance suite, done from outside the
 * backend under test (its own `pg` / `ioredis` connections), so the suite needs
 * nothing from a backend's internals.
 *
 * Both rely on the naming convention every server backend follows: Postgres
 * connections carry `application_name = 'worklease:<schema>'`, Redis connections
 * `CLIENT SETNAME worklease:<keyPrefix>`.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import type { BackendTarget } from './backends.ts';

/** True when the backend has server connections that {@link dropConnections} can cut. */
export function hasServerConnections(target: BackendTarget): boolean {
  return target.kind !== 'pglite';
}

/**
 * Makes the server drop every connection the backend opened for `namespace`
 * (as a failover, an idle timeout or an admin would). Returns how many it cut.
 * PGlite runs in-process and has no server connection: calling it there is a test bug.
 */
export async function dropConnections(target: BackendTarget, namespace: string): Promise<number> {
  switch (target.kind) {
    case 'postgres':
      return withPg(target.url, async (client) => {
        const res = await client.query<{ killed: boolean }>(
          `SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity
            WHERE application_name = $1 AND pid <> pg_backend_pid()`,
          [`worklease:${namespace}`],
        );
        return res.rows.filter((r) => r.killed).length;
      });
    case 'redis':
    case 'redis-cluster': {
      const name = `worklease:${namespace}`;
      let killed = 0;
      for (const node of await redisNodes(target, false)) {
        killed += await withRedis(node, async (redis) => {
          const list = String(await redis.call('CLIENT', 'LIST', 'TYPE', 'normal'));
          let n = 0;
          for (const line of list.split('\n')) {
            const fields = parseClientLine(line);
            if (fields.name !== name || fields.id === undefined) continue;
            n += Number(await redis.call('CLIENT', 'KILL', 'ID', fields.id));
          }
          return n;
        });
      }
      return killed;
    }
    case 'pglite':
      throw new Error('pglite is embedded: it has no server connections to drop');
  }
}

/** Removes everything a test file stored under `namespace`: the schema, or every key under the prefix. */
export async function dropNamespace(target: BackendTarget, namespace: string): Promise<void> {
  switch (target.kind) {
    case 'postgres':
      await withPg(target.url, (client) =>
        client.query(`DROP SCHEMA IF EXISTS ${quoteIdent(namespace)} CASCADE`),
      );
      return;
    case 'redis':
    case 'redis-cluster': {
      const pattern = `${namespace.replace(/[*?[\]\\]/g, '\\$&')}*`;
      for (const node of await redisNodes(target, true)) {
        await withRedis(node, async (redis) => {
          let cursor = '0';
          do {
            const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
            cursor = next;
            // One key per UNLINK: keys on one cluster node still span slots, and a
            // multi-key command across slots is refused (CROSSSLOT).
            if (keys.length > 0) await Promise.all(keys.map((k) => redis.unlink(k)));
          } while (cursor !== '0');
        });
      }
      return;
    }
    case 'pglite':
      // In memory: closing the backend frees everything.
      return;
  }
}

interface NodeAddress {
  host: string;
  port: number;
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

async function withPg<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, application_name: 'worklease-test-support' });
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
    connectionName: 'worklease-test-support',
  });
  redis.on('error', () => {});
  await redis.connect();
  try {
    return await fn(redis);
  } finally {
    redis.disconnect();
  }
}

/** `host:port` pairs from `redis://…` or `redis+cluster://h1:p1,h2:p2`. */
function seedAddresses(url: string): NodeAddress[] {
  const rest = url.replace(/^[a-z+]+:\/\//i, '');
  const hosts = (rest.split('@').pop() ?? '').split('/')[0] ?? '';
  return hosts.split(',').map((hp) => {
    const i = hp.lastIndexOf(':');
    return i < 0 ? { host: hp, port: 6379 } : { host: hp.slice(0, i), port: Number(hp.slice(i + 1)) };
  });
}

/** Every node of the deployment (masters only when `mastersOnly`), from the cluster's own view. */
async function redisNodes(target: BackendTarget, mastersOnly: boolean): Promise<NodeAddress[]> {
  const seeds = seedAddresses(target.url);
  if (target.kind === 'redis') return seeds.slice(0, 1);
  const seed = seeds[0];
  if (seed === undefined) throw new Error(`no node in ${target.url}`);
  const text = await withRedis(seed, async (redis) => String(await redis.call('CLUSTER', 'NODES')));
  const nodes: NodeAddress[] = [];
  for (const line of text.split('\n')) {
    const [, addr, flags] = line.split(' ');
    if (addr === undefined || flags === undefined) continue;
    const flagList = flags.split(',');
    if (flagList.includes('fail') || flagList.includes('noaddr')) continue;
    if (mastersOnly && !flagList.includes('master')) continue;
    const hostPort = addr.split('@')[0] ?? '';
    const i = hostPort.lastIndexOf(':');
    nodes.push({ host: hostPort.slice(0, i) || seed.host, port: Number(hostPort.slice(i + 1)) });
  }
  return nodes;
}

function parseClientLine(line: string): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const part of line.trim().split(' ')) {
    const eq = part.indexOf('=');
    if (eq > 0) out[part.slice(0, eq)] = part.slice(eq + 1);
  }
  return out;
}
