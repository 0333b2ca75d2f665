/**
 * Removing what a bench created on the shared servers, and nothing else: the keys under its
 * own prefix (SCAN + UNLINK in batches, never FLUSHALL or KEYS) and the schema it created.
 */
import { Redis } from 'ioredis';
import pg from 'pg';

/** Unlinks every key matching `<prefix>:*`, 1 000 at a time. Returns how many were unlinked. */
export async function unlinkPrefix(url: string, prefix: string): Promise<number> {
  if (!/^[\w-]+$/.test(prefix))
    throw new Error(`refusing to unlink keys of prefix ${JSON.stringify(prefix)}`);
  const redis = new Redis(url, { lazyConnect: true });
  await redis.connect();
  let unlinked = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) unlinked += await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return unlinked;
}

/** Drops `schema`, which the bench created itself (a random `bench_…` name). */
export async function dropSchema(url: string, schema: string): Promise<void> {
  if (!/^bench_[a-z0-9_]+$/.test(schema)) throw new Error(`refusing to drop schema ${schema}`);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}
