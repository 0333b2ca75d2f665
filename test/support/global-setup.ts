/**
 * Runs once before the test files: checks that the real servers the tests need
 * are up (a clear message instead of a hundred timeouts) and starts a Redis
 * Cluster on loopback ports for the cluster runs of the conformance suite.
 */
import net from 'node:net';
import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { ensureRenderer } from '../../scripts/renderer-build.ts';
import { startRedisCluster } from './redis-cluster.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    redisClusterUrl: string;
  }
}

function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: 2000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** Fails with one clear message when PostgreSQL or Redis is down, instead of a hundred timeouts. */
export async function requireServers(): Promise<void> {
  const missing: string[] = [];
  if (!(await reachable('127.0.0.1', 5432))) missing.push('PostgreSQL on 127.0.0.1:5432');
  if (!(await reachable('127.0.0.1', 6379))) missing.push('Redis on 127.0.0.1:6379');
  if (missing.length > 0) {
    throw new Error(
      `The tests need real servers and these are down: ${missing.join(', ')}. Start them or run .ci/run, which starts them.`,
    );
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  await requireServers();
  // `worklease serve` serves dist/renderer and, in a fresh checkout, builds it on first use (about
  // 10 s): built here once, so the CLI tests that start the console do not race to build it.
  const [cluster] = await Promise.all([startRedisCluster(3), ensureRenderer()]);
  project.provide('redisClusterUrl', cluster.url);
  return () => cluster.stop();
}
