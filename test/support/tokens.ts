/**
 * Rewrites a work item's stored token from outside the backend under test, so
 * the conformance suite can put tokens where the API never would: near 2^53,
 * or back below tokens already handed out (a backend that lost its latest
 * writes: a restored backup, a promoted lagging replica, a wiped item).
 *
 * PGlite has no outside connection: for it the seeder runs the backend on a
 * directory of its own and rewrites the row with a second PGlite instance
 * while the backend is closed (one process at a time per directory).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { Cluster, Redis } from 'ioredis';
import pg from 'pg';
import { DEFAULT_BUCKETS, Layout } from '../../src/backends/redis/layout.ts';
import type { LeaseBackend } from '../../src/index.ts';
import { openBackend } from '../../src/index.ts';
import { type BackendTarget, isolated, uniqueNamespace } from './backends.ts';
import { dropNamespace } from './faults.ts';

export interface TokenSeeder {
  /** The backend to call; replaced by {@link set} on PGlite (reopened), so read it after each set. */
  backend: LeaseBackend;
  /** Stores `token` as workId's token (the lease otherwise unchanged), or removes the work item (null). */
  set(workId: string, token: bigint | null): Promise<void>;
  close(): Promise<void>;
}

function redisSeeds(url: string): Array<{ host: string; port: number }> {
  const hosts = url.replace(/^[a-z+]+:\/\//i, '').split(/[/?]/)[0] ?? '';
  return hosts.split(',').map((hp) => {
    const i = hp.lastIndexOf(':');
    return { host: hp.slice(0, i), port: Number(hp.slice(i + 1)) };
  });
}

/** A packed Redis lease with its token (field 2) replaced; a tombstone is the token alone. */
function withToken(packed: string | null, token: bigint): string {
  if (packed === null || !packed.includes('\n')) return token.toString();
  const fields = packed.split('\n');
  fields[1] = token.toString();
  return fields.join('\n');
}

export async function tokenSeeder(
  target: BackendTarget,
  namespace = uniqueNamespace('seed'),
): Promise<TokenSeeder> {
  if (target.kind === 'postgres') {
    const backend = await openBackend(target.url, isolated(target, namespace));
    const client = new pg.Client({ connectionString: target.url });
    await client.connect();
    const table = `"${namespace}".leases`;
    return {
      backend,
      async set(workId, token) {
        if (token === null) await client.query(`DELETE FROM ${table} WHERE work_id = $1`, [workId]);
        else
          await client.query(`UPDATE ${table} SET token = $2 WHERE work_id = $1`, [workId, token.toString()]);
      },
      async close() {
        await backend.close();
        await client.end();
        await dropNamespace(target, namespace);
      },
    };
  }
  if (target.kind === 'redis' || target.kind === 'redis-cluster') {
    const backend = await openBackend(target.url, isolated(target, namespace));
    const seeds = redisSeeds(target.url);
    const redis = target.kind === 'redis' ? new Redis(seeds[0]!) : new Cluster(seeds);
    const layout = new Layout(namespace, DEFAULT_BUCKETS);
    return {
      backend,
      async set(workId, token) {
        const key = layout.m[layout.bucketOf(workId)]!;
        if (token === null) await redis.hdel(key, workId);
        else await redis.hset(key, workId, withToken(await redis.hget(key, workId), token));
      },
      async close() {
        await backend.close();
        redis.disconnect();
        await dropNamespace(target, namespace);
      },
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'worklease-seed-'));
  const url = `pglite://${dir}`;
  const seeder: TokenSeeder = {
    backend: await openBackend(url, isolated(target, namespace)),
    async set(workId, token) {
      await seeder.backend.close();
      const db = await PGlite.create(dir);
      const table = `"${namespace}".leases`;
      if (token === null) await db.query(`DELETE FROM ${table} WHERE work_id = $1`, [workId]);
      else await db.query(`UPDATE ${table} SET token = $2 WHERE work_id = $1`, [workId, token.toString()]);
      await db.close();
      seeder.backend = await openBackend(url, isolated(target, namespace));
    },
    async close() {
      await seeder.backend.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return seeder;
}
