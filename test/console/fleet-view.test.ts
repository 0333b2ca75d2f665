/**
 * The fleet view on the console server (issue 43), on PostgreSQL and Redis: `fleet.view` windows
 * and totals against the backend's own listing, validation before any I/O, distinct NOT_FOUNDs,
 * `getMany` in one round trip, view subscriptions over the real WebSocket (pushes for rows in view
 * and counts), the bulk force-release and export jobs by filter, and `connections.reopen`.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { type ConsoleEvent, ConsoleEventSchema, methods } from '../../src/console/api.ts';
import { type ConsoleService, createConsoleService } from '../../src/console/index.ts';
import type { LeaseBackend, LeaseInfo } from '../../src/index.ts';
import { startWebServer, type WebServer } from '../../src/server/index.ts';
import {
  type BackendTarget,
  codeOf,
  openIsolated,
  PG_URL,
  REDIS_URL,
  uniqueNamespace,
} from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';
import { until } from './helpers.ts';

const targets: Array<BackendTarget & { param: string }> = [
  { kind: 'postgres', url: PG_URL, param: 'schema' },
  { kind: 'redis', url: REDIS_URL, param: 'keyPrefix' },
];
const TOKEN = randomBytes(32).toString('hex');

describe.each(targets)('fleet view on $kind', (target) => {
  const ns = uniqueNamespace('view');
  let writer: LeaseBackend;
  let service: ConsoleService;
  let server: WebServer;
  let id: string;

  beforeAll(async () => {
    writer = await openIsolated(target, ns);
    for (let i = 0; i < 60; i++) {
      await writer.acquire(
        `job-${String(i).padStart(3, '0')}`,
        `worker-${i % 4}`,
        i % 10 === 0 ? 1500 : 120_000,
      );
    }
    service = createConsoleService({
      connections: [{ name: target.kind, url: `${target.url}?${target.param}=${ns}` }],
      feed: { pollMinMs: 20, pollMaxMs: 200, heartbeatCheckMs: 300 },
    });
    id = service.connections()[0]!.id;
    await service.waitLive(id);
    server = await startWebServer({ service, port: 0, token: TOKEN });
  }, 60_000);

  afterAll(async () => {
    await server?.close();
    await service?.close();
    await writer?.close();
    await dropNamespace(target, ns);
  });

  it('pages a filtered, sorted view with cursors; totals and counts agree with the backend', async () => {
    const all = await service.call('fleet.view', { connectionId: id, limit: 1000 });
    expect(all.total).toBe(60);
    expect(all.loading).toBeNull();
    expect(all.rows.map((r) => r.workId)).toEqual([...all.rows.map((r) => r.workId)].sort());
    expect(all.counts.total).toBe(await writer.admin.count());
    const byHolder = await service.call('fleet.view', {
      connectionId: id,
      filter: { holder: 'worker-1' },
      sort: { column: 'workId', dir: 'desc' },
      limit: 4,
    });
    expect(byHolder.total).toBe(await writer.admin.count({ holderId: 'worker-1' }));
    const ids: string[] = [];
    let page = byHolder;
    for (;;) {
      ids.push(...page.rows.map((r) => r.workId));
      if (page.nextCursor === null) break;
      page = await service.call('fleet.view', {
        connectionId: id,
        filter: { holder: 'worker-1' },
        sort: { column: 'workId', dir: 'desc' },
        cursor: page.nextCursor,
        limit: 4,
      });
    }
    const listed = (await writer.admin.list({ holderId: 'worker-1', limit: 1000 })).items.map(
      (i) => i.workId,
    );
    expect(ids).toEqual(listed.reverse());
    // Short leases run out: shown expired only once a check confirmed it, and counted so.
    await until(
      'expired leases',
      async () => {
        const v = await service.call('fleet.view', { connectionId: id, filter: { statuses: ['expired'] } });
        return v.total === 6 && v.statuses.every((s) => s === 'expired') && v.counts.byStatus.expired === 6;
      },
      20_000,
    );
  });

  it('refuses bad filters, sorts and cursors before any backend call, and names what is missing', async () => {
    const bad = [
      { connectionId: id, sort: { column: 'nope', dir: 'asc' } },
      { connectionId: id, filter: { statuses: ['sleeping'] } },
      { connectionId: id, filter: { extra: 1 } },
      { connectionId: id, limit: 5000 },
      { connectionId: id, cursor: 'abc', offset: 3 },
    ];
    for (const params of bad) {
      expect(methods['fleet.view'].params.safeParse(params).success).toBe(false);
      expect(await codeOf(service.call('fleet.view', params as never))).toBe('INVALID_ARGUMENT');
    }
    const cursorErr = await service
      .call('fleet.view', { connectionId: id, cursor: 'bm90IG91cnM' })
      .catch((e: unknown) => e as { code: string; message: string });
    expect(cursorErr).toMatchObject({ code: 'INVALID_ARGUMENT' });
    const unknown = await service
      .call('fleet.view', { connectionId: 'no-such-connection' })
      .catch((e: unknown) => e as { code: string; details: unknown });
    expect(unknown).toMatchObject({ code: 'NOT_FOUND', details: { what: 'connection' } });
    expect(await service.call('lease.get', { connectionId: id, workId: 'never-existed' })).toBeNull();
  });

  it('getMany reads many leases in one call, in the order asked, null where none', async () => {
    const many = (writer.admin as { getMany?: (ids: string[]) => Promise<Array<LeaseInfo | null>> }).getMany;
    expect(typeof many).toBe('function');
    const got = await many!.call(writer.admin, ['job-005', 'missing', 'job-001']);
    expect(got.map((i) => i?.workId ?? null)).toEqual(['job-005', null, 'job-001']);
    expect(got[0]).toEqual(await writer.admin.get('job-005'));
    expect(await codeOf(many!.call(writer.admin, [''] as string[]))).toBe('INVALID_ARGUMENT');
  });

  it('pushes a subscribed window over the WebSocket when a row in it is renewed, and refuses bad messages', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/api/events`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const events: ConsoleEvent[] = [];
    ws.on('message', (data) => events.push(ConsoleEventSchema.parse(JSON.parse(String(data)))));
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    try {
      ws.send('not json');
      ws.send(
        JSON.stringify({
          type: 'view.watch',
          watchId: 'w1-abcdefgh',
          query: { connectionId: id, limit: -1 },
        }),
      );
      await until('two errors', () => events.filter((e) => e.type === 'view.error').length >= 2);
      const errors = events.filter((e) => e.type === 'view.error');
      expect(errors[0]).toMatchObject({ watchId: null, error: { code: 'INVALID_ARGUMENT' } });
      expect(errors[1]).toMatchObject({ watchId: 'w1-abcdefgh', error: { code: 'INVALID_ARGUMENT' } });
      ws.send(
        JSON.stringify({
          type: 'view.watch',
          watchId: 'w2-abcdefgh',
          query: { connectionId: id, filter: { workIdPrefix: 'job-02' }, limit: 5 },
        }),
      );
      const first = await until('first window', () =>
        events.find((e) => e.type === 'view' && e.watchId === 'w2-abcdefgh'),
      );
      if (first.type !== 'view') throw new Error('not a view');
      expect(first.view.rows.map((r) => r.workId)).toEqual([
        'job-020',
        'job-021',
        'job-022',
        'job-023',
        'job-024',
      ]);
      expect(first.view.total).toBe(10);
      // An acquire comes through the feed into the window; its renew writes no feed entry: the
      // row in view is re-read by the next check and pushed.
      const rec = await writer.acquire('job-020a', 'worker-9', 120_000);
      await until('the new row in the window', () =>
        events.some(
          (e) => e.type === 'view' && e.watchId === 'w2-abcdefgh' && e.view.rows[1]?.workId === 'job-020a',
        ),
      );
      await writer.renew(rec, 120_000);
      const pushed = await until(
        'a pushed window with the renew',
        () =>
          events.find(
            (e) =>
              e.type === 'view' &&
              e.watchId === 'w2-abcdefgh' &&
              e.view.rows.some((r) => r.workId === 'job-020a' && r.renewedAt !== null),
          ),
        15_000,
      );
      expect(pushed.type).toBe('view');
      ws.send(JSON.stringify({ type: 'view.unwatch', watchId: 'w2-abcdefgh' }));
    } finally {
      ws.close();
    }
  });

  it('force-releases by filter as a job over one snapshot, refusing a count that moved', async () => {
    const filter = { workIdPrefix: 'job-05' };
    const moved = await service
      .call('lease.forceReleaseMatching', { connectionId: id, filter, expectCount: 3, reason: 'test' })
      .catch((e: unknown) => e as { code: string; details: { count: number } });
    expect(moved).toMatchObject({ code: 'CONFLICT', details: { count: 10 } });
    const jobs: ConsoleEvent[] = [];
    const off = service.subscribe((e) => {
      if (e.type === 'job') jobs.push(e);
    });
    try {
      const job = await service.call('lease.forceReleaseMatching', {
        connectionId: id,
        filter,
        expectCount: 10,
        reason: 'maintenance',
      });
      expect(job).toMatchObject({ total: 10, kind: 'force-release' });
      const done = await until('job finished', async () => {
        const j = await service.call('job.get', { jobId: job.jobId });
        return j.finished ? j : null;
      });
      expect(done.ok + done.failed).toBe(10);
      expect(done.ok).toBe(10);
      const audit = await writer.admin.audit({ limit: 100 });
      expect(audit.filter((a) => a.batchId === done.batchId)).toHaveLength(10);
      expect(jobs.length).toBeGreaterThan(0);
    } finally {
      off();
    }
  });

  it('exports by filter over one snapshot, page by page', async () => {
    const first = await service.call('fleet.exportMatching', {
      connectionId: id,
      format: 'json',
      filter: { holder: 'worker-2' },
      limit: 7,
    });
    const records = [...first.records];
    let next = first.nextOffset;
    while (next !== null) {
      const page = await service.call('fleet.exportMatching', {
        connectionId: id,
        format: 'json',
        filter: { holder: 'worker-2' },
        jobId: first.jobId,
        offset: next,
        limit: 7,
      });
      records.push(...page.records);
      next = page.nextOffset;
    }
    expect(records).toHaveLength(first.total);
    expect(first.total).toBe(await writer.admin.count({ holderId: 'worker-2' }));
    expect(records.every((r) => JSON.parse(r).holderId === 'worker-2')).toBe(true);
    expect(
      await codeOf(
        service.call('fleet.exportMatching', { connectionId: id, format: 'csv', jobId: 'j_nope' }),
      ),
    ).toBe('NOT_FOUND');
  });

  it('reopens a connection from the console and loads the fleet again', async () => {
    const before = await service.call('fleet.view', { connectionId: id });
    const info = await service.call('connections.reopen', { id });
    expect(info.id).toBe(id);
    await service.waitLive(id);
    const after = await service.call('fleet.view', { connectionId: id });
    expect(after.generation).not.toBe(before.generation === 0 ? -1 : -2);
    expect(after.total).toBe(before.total);
    expect(after.loading).toBeNull();
  });
});
