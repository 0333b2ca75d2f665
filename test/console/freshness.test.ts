/**
 * Freshness: the fleet model confirms its feed about every second, turns `stale` within 2 s when
 * the backend stops answering (a hanging call, long before its timeout), and the service then
 * counts statuses at the last confirmed backend time, not by a clock that runs on.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ConnectionState } from '../../src/console/api.ts';
import { createConsoleService, FleetModel, ServerClock } from '../../src/console/index.ts';
import { BackendUnavailableError, type LeaseAdmin, type LeaseBackend, openBackend } from '../../src/index.ts';
import { sharedOpener, until } from './helpers.ts';

/** The backend's admin with a switch that makes every call hang (a frozen server), counting calls. */
function hangable(admin: LeaseAdmin, push: boolean) {
  const pending: Array<(err: Error) => void> = [];
  const ctl = {
    hang: false,
    serverTime: 0,
    changes: 0,
    /** Ends the hang; calls in flight fail as a call timeout would. */
    resume() {
      ctl.hang = false;
      for (const reject of pending.splice(0)) reject(new BackendUnavailableError('call timed out'));
    },
  };
  const hung = <T>(): Promise<T> => new Promise<T>((_, reject) => pending.push(reject));
  const wrapped: LeaseAdmin = {
    ...admin,
    list: (o) => (ctl.hang ? hung() : admin.list(o)),
    serverTime: () => {
      ctl.serverTime++;
      return ctl.hang ? hung() : admin.serverTime();
    },
    changeCursor: () => (ctl.hang ? hung() : admin.changeCursor()),
    changes: (o) => {
      ctl.changes++;
      return ctl.hang ? hung() : admin.changes(o);
    },
  };
  // A push channel that never fires: the model must still confirm the link every second.
  if (push) wrapped.watchChanges = () => () => {};
  else delete wrapped.watchChanges;
  return { admin: wrapped, ctl };
}

describe('console freshness', () => {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  for (const push of [false, true]) {
    it(`confirms about every second and turns stale within 2 s of a hang (${push ? 'push + heartbeat' : 'polling'})`, async () => {
      const backend = await openBackend('pglite://memory');
      closers.push(() => backend.close());
      const { admin, ctl } = hangable(backend.admin, push);
      const clock = new ServerClock(() => admin.serverTime());
      await clock.measure();
      const model = new FleetModel(admin, clock);
      const states: Array<{ state: ConnectionState; at: number }> = [];
      model.subscribe((e) => {
        if (e.type === 'state') states.push({ state: e.state, at: performance.now() });
      });
      model.start();
      closers.push(() => model.close());
      await until('live', () => model.state === 'live');
      // Idle fleet: confirmations keep coming, at most ~1 s apart.
      const first = model.syncedAt as number;
      await new Promise((r) => setTimeout(r, 2600));
      const confirmedSpan = (model.syncedAt as number) - first;
      expect(confirmedSpan).toBeGreaterThanOrEqual(1500);
      expect(model.state).toBe('live');
      if (push) {
        // Between 60 s safety polls the heartbeat is one serverTime call, not a poll of the feed.
        expect(ctl.serverTime).toBeGreaterThanOrEqual(2);
      }
      const lostAt = performance.now();
      const syncedBefore = model.syncedAt as number;
      ctl.hang = true;
      await until('stale', () => model.state === 'stale', 4000);
      const staleAfter = (states.find((s) => s.state === 'stale')?.at ?? Number.NaN) - lostAt;
      expect(staleAfter).toBeLessThan(2000);
      // syncedAt stays at the last confirmation while nothing answers.
      expect(model.syncedAt).toBeLessThanOrEqual(syncedBefore + 1100);
      ctl.resume();
      await until('live again', () => model.state === 'live', 5000);
    });
  }

  it('counts statuses at the last confirmed time while stale: a live lease never turns expired', async () => {
    const backend: LeaseBackend = await openBackend('pglite://memory');
    closers.push(() => backend.close());
    const { admin, ctl } = hangable(backend.admin, false);
    const service = createConsoleService({
      openBackend: sharedOpener({ ...backend, admin }),
      connections: [{ name: 'demo', url: 'pglite://memory' }],
    });
    closers.push(() => service.close());
    const id = service.connections()[0]?.id as string;
    await service.waitLive(id);
    await backend.acquire('short-1', 'worker-a', 1500);
    await service.model(id)?.caughtUp();
    ctl.hang = true;
    await until('stale', () => service.connections()[0]?.state === 'stale', 4000);
    // Well past the lease's 1.5 s ttl by the local clock.
    await new Promise((r) => setTimeout(r, 2000));
    const { counts } = await service.call('fleet.counts', { connectionId: id });
    expect(counts.byStatus.expired).toBe(0);
    expect(counts.byStatus.live + counts.byStatus.expiring).toBe(1);
    ctl.resume();
    await until('live again', () => service.connections()[0]?.state === 'live', 5000);
  });
});
