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

/**
 * The backend with its change feed cut down to what the feed carries after issue 14: ownership
 * changes only (acquired, released, force-released, release-requested, pruned). Until the backend
 * branches that drop heartbeat-rate changes are merged, the real feed still carries `renewed` and
 * `checkpointed`; this thin filter makes the tests prove that the console sees renews and
 * checkpoints through its own sweeps, not through the feed. After the merge it drops nothing.
 *
 * Today's Postgres feed delivers each row's latest version, so an acquire followed by a renew can
 * arrive as one `renewed` change: such a change still carries an ownership change (a token or an
 * end the filter has not passed for that work item) and is passed, as the new feed would carry
 * the acquire. Only a heartbeat of the lease last passed is dropped (and the first change of a work
 * item the filter never saw, e.g. one from the console's snapshot, is passed: it cannot tell).
 * `dropped` counts what it removed.
 */
export function withoutHeartbeatChanges(backend: LeaseBackend): {
  backend: LeaseBackend;
  dropped: { renewed: number; checkpointed: number };
} {
  const dropped = { renewed: 0, checkpointed: 0 };
  /** Per work item: the token and end of the last change passed. */
  const passed = new Map<string, { token: bigint; ended: string | null }>();
  const admin = backend.admin;
  const filtered: typeof admin = {
    ...admin,
    async changes(options) {
      const batch = await admin.changes(options);
      const changes = batch.changes.filter((c) => {
        const last = passed.get(c.workId);
        if (c.kind === 'pruned' || c.lease === null) {
          passed.delete(c.workId);
          return true;
        }
        const heartbeat = c.kind === 'renewed' || c.kind === 'checkpointed';
        if (
          heartbeat &&
          last !== undefined &&
          last.token === c.lease.fencingToken &&
          last.ended === c.lease.ended
        ) {
          dropped[c.kind as 'renewed' | 'checkpointed']++;
          return false;
        }
        passed.set(c.workId, { token: c.lease.fencingToken, ended: c.lease.ended });
        return true;
      });
      return { ...batch, changes };
    },
  };
  return { backend: { ...backend, admin: filtered }, dropped };
}
