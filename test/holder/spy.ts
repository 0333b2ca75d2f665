/**
 * A pass-through LeaseBackend that counts the calls made through it and how
 * many are still in flight, so tests can prove a lost holder sent nothing and
 * see a renew hanging. It does not alter any call: the server behind is real.
 */
import type { LeaseBackend } from '../../src/index.ts';

export interface Spy {
  backend: LeaseBackend;
  /** Calls started, by name. */
  calls: Record<string, number>;
  inFlight(name?: string): number;
}

export function spyBackend(inner: LeaseBackend): Spy {
  const calls: Record<string, number> = {};
  const pending: Record<string, number> = {};
  const wrap =
    <A extends unknown[], R>(name: string, fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      calls[name] = (calls[name] ?? 0) + 1;
      pending[name] = (pending[name] ?? 0) + 1;
      try {
        return await fn(...args);
      } finally {
        pending[name] = (pending[name] ?? 1) - 1;
      }
    };
  const backend: LeaseBackend = {
    kind: inner.kind,
    url: inner.url,
    maxStateBytes: inner.maxStateBytes,
    acquire: wrap('acquire', inner.acquire.bind(inner)),
    checkpoint: wrap('checkpoint', inner.checkpoint.bind(inner)),
    renew: wrap('renew', inner.renew.bind(inner)),
    release: wrap('release', inner.release.bind(inner)),
    readCheckpoint: wrap('readCheckpoint', inner.readCheckpoint.bind(inner)),
    admin: inner.admin,
    close: () => inner.close(),
  };
  return {
    backend,
    calls,
    inFlight: (name) =>
      name === undefined ? Object.values(pending).reduce((a, b) => a + b, 0) : (pending[name] ?? 0),
  };
}
