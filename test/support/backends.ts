/**
 * The real servers the tests run against, and per-file isolation: each test
 * file opens its backends under its own Postgres schema / Redis key prefix, so
 * files can run in parallel and leave nothing behind.
 */
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import type { BackendKind, LeaseBackend, OpenOptions } from '../../src/index.ts';
import { openBackend } from '../../src/index.ts';

export const PG_URL = process.env.WORKLEASE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.WORKLEASE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface BackendTarget {
  kind: BackendKind;
  url: string;
  /**
   * Cuts the connections of the backend opened on `namespace` where the server's own kill cannot
   * (behind a connection pooler, whose server connections are shared: the pooler cuts its clients).
   */
  cut?: (namespace: string) => Promise<number>;
}

/** Every backend the conformance suite runs on. */
export function allTargets(): BackendTarget[] {
  return [
    { kind: 'postgres', url: PG_URL },
    { kind: 'redis', url: REDIS_URL },
    { kind: 'redis-cluster', url: inject('redisClusterUrl') },
    { kind: 'pglite', url: 'pglite://memory' },
  ];
}

/** A fresh namespace name: valid as a Postgres schema and as a Redis key prefix. */
export function uniqueNamespace(tag = 't'): string {
  return `${tag}_${randomBytes(5).toString('hex')}`;
}

/** Options that put a backend in its own namespace. */
export function isolated(target: BackendTarget, namespace: string, extra: OpenOptions = {}): OpenOptions {
  return target.kind === 'postgres' || target.kind === 'pglite'
    ? { schema: namespace, ...extra }
    : { keyPrefix: namespace, ...extra };
}

export async function openIsolated(
  target: BackendTarget,
  namespace = uniqueNamespace(),
  extra: OpenOptions = {},
): Promise<LeaseBackend> {
  return openBackend(target.url, isolated(target, namespace, extra));
}

/** The error code a call fails with, 'OK' when it succeeds (or the error itself as text when it has no code). */
export async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'OK';
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  }
}
