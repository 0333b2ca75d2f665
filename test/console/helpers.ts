/**
 * Helpers for the console tests: the console opens its own backends by URL,
 * but an in-memory PGlite exists only in this process, so PGlite tests hand
 * the service the test's own backend (its close() left to the test).
 */
import type { LeaseBackend, OpenOptions } from '../../src/index.ts';

export function sharedOpener(
  backend: LeaseBackend,
): (url: string, options: OpenOptions) => Promise<LeaseBackend> {
  return async (_url, options) => {
    if (options.migrate !== false) throw new Error('the console must open backends with migrate: false');
    return { ...backend, async close() {} };
  };
}

export async function until<T>(
  what: string,
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export { leaseRow } from '../support/lease-row.ts';
