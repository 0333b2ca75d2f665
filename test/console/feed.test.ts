/**
 * The fleet model stays exactly equal to the backend while writes pour in and
 * the feed's connections are cut: after the writes stop, the model must match
 * a fresh `admin.list` snapshot row for row.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  type ConsoleEvent,
  createConsoleService,
  FleetModel,
  ServerClock,
  toLeaseRow,
} from '../../src/console/index.ts';
import {
  BackendUnavailableError,
  type LeaseAdmin,
  type LeaseBackend,
  type LeaseRecord,
} from '../../src/index.ts';
import { type BackendTarget, openIsolated, PG_URL, REDIS_URL, uniqueNamespace } from '../support/backends.ts';
import { dropConnections, dropNamespace } from '../support/faults.ts';

async function fullList(admin: LeaseAdmin): Promise<ReturnType<typeof toLeaseRow>[]> {
  const rows: ReturnType<typeof toLeaseRow>[] = [];
  let cursor: string | null = null;
  do {
    const page = await admin.list({ cursor, limit: 1000 });
    rows.push(...page.items.map(toLeaseRow));
    cursor = page.nextCursor;
  } while (cursor !== null);
  return rows.sort((a, b) => (a.workId < b.workId ? -1 : 1));
}

function sorted<T extends { workId: string }>(rows: T[]): T[] {
  return [...rows].sort((a, b) => (a.workId < b.workId ? -1 : 1));
}

/**
 * Hundreds of acquires/renews/checkpoints/releases across `items` work items
 * from `workers` concurrent loops, with prunes in between. Errors (held leases,
 * cut connections) are part of the weather.
 */
async function churn(
  backend: LeaseBackend,
  opsPerWorker: number,
  onHalf: () => Promise<void>,
): Promise<number> {
  const items = 30;
  const workers = 6;
  let done = 0;
  let halfFired = false;
  const total = opsPerWorker * workers;
  const worker = async (w: number): Promise<void> => {
    let held: LeaseRecord | null = null;
    for (let i = 0; i < opsPerWorker; i++) {
      done++;
      if (!halfFired && done >= total / 2) {
        halfFired = true;
        await onHalf();
      }
      try {
        if (held === null) {
          held = await backend.acquire(`item-${(w * 7 + i) % items}`, `worker-${w}`, 30_000);
        } else if (i % 5 === 0) {
          await backend.release(held);
          held = null;
        } else if (i % 3 === 0) {
          await backend.checkpoint(held, new TextEncoder().encode(`{"i":${i}}`), 30_000);
        } else {
          held = await backend.renew(held, 30_000);
        }
      } catch {
        held = null;
      }
      if (w === 0 && i % 40 === 39) await backend.admin.prune({ olderThanMs: 0 }).catch(() => 0);
    }
    if (held !== null) await backend.release(held).catch(() => {});
  };
  await Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
  return done;
}

const targets: Array<BackendTarget & { param: string }> = [
  { kind: 'postgres', url: PG_URL, param: 'schema' },
  { kind: 'redis', url: REDIS_URL, param: 'keyPrefix' },
];

describe.each(targets)('console feed on $kind', (target) => {
  const ns = uniqueNamespace('feed');
  let writer: LeaseBackend | undefined;

  afterAll(async () => {
    await writer?.close();
    await dropNamespace(target, ns);
  });

  it('matches a fresh snapshot after fast writes with the connections killed mid-way', async () => {
    writer = await openIsolated(target, ns);
    // Some leases exist before the console starts: they come from the snapshot.
    for (let i = 0; i < 10; i++) await writer.acquire(`pre-${i}`, 'early', 30_000);
    const service = createConsoleService({
      // The feed carries ownership changes only: renews and checkpoints reach the model through
      // its heartbeat checks.
      connections: [{ name: target.kind, url: `${target.url}?${target.param}=${ns}` }],
      feed: { pollMinMs: 20, pollMaxMs: 200, retryMinMs: 50, retryMaxMs: 500, heartbeatCheckMs: 500 },
    });
    const events: ConsoleEvent[] = [];
    service.subscribe((e) => events.push(e));
    try {
      const id = service.connections()[0]!.id;
      await service.waitLive(id);
      let killed = 0;
      const ops = await churn(writer, 120, async () => {
        killed += await dropConnections(target, ns);
        await new Promise((r) => setTimeout(r, 30));
        killed += await dropConnections(target, ns);
      });
      expect(ops).toBe(720);
      expect(killed).toBeGreaterThan(0);
      await service.waitLive(id);
      const model = service.model(id)!;
      await model.caughtUp();
      const fresh = await fullList(writer.admin);
      expect(fresh.length).toBeGreaterThan(10);
      // Checks re-read the due rows and the rows in view (issue 43): with every row in view, one
      // check brings every renew and checkpoint the feed does not carry.
      model.setVisible(() => fresh.map((r) => r.workId));
      await model.swept();
      expect(sorted(model.snapshot().rows)).toEqual(fresh);
      // Every leases event carried the next seq.
      const seqs = events.flatMap((e) => (e.type === 'leases' || e.type === 'resync' ? [e.seq] : []));
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    } finally {
      await service.close();
    }
  });

  it('resumes from its cursor after backend errors and rebuilds after a gap', async () => {
    writer ??= await openIsolated(target, ns);
    const admin = writer.admin;
    // Fails every third `changes` call as a dropped connection would, and
    // reports one gap, to drive the model's recovery paths deterministically.
    let calls = 0;
    let gapAt = 5;
    const faulty: LeaseAdmin = {
      ...admin,
      async changes(options) {
        calls++;
        if (calls % 3 === 0) throw new BackendUnavailableError('injected: connection reset');
        if (calls === gapAt) {
          gapAt = -1;
          const batch = await admin.changes(options);
          return { ...batch, gap: true };
        }
        return admin.changes(options);
      },
    };
    const clock = new ServerClock(() => admin.serverTime());
    await clock.measure();
    const model = new FleetModel(faulty, clock, {
      pollMinMs: 10,
      pollMaxMs: 50,
      retryMinMs: 10,
      retryMaxMs: 50,
    });
    const seen: string[] = [];
    model.subscribe((e) => {
      if (e.type === 'state') seen.push(e.state);
      else seen.push(e.type);
    });
    model.start();
    try {
      await churn(writer, 60, async () => {});
      await model.swept();
      // Last: a poll that succeeded (every third fails), so the state is live again.
      await model.caughtUp();
      expect(seen).toContain('reconnecting');
      expect(seen.filter((s) => s === 'resync').length).toBeGreaterThanOrEqual(2);
      expect(sorted(model.snapshot().rows)).toEqual(await fullList(admin));
      expect(model.state).toBe('live');
    } finally {
      await model.close();
    }
  });
});
