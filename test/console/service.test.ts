import { userInfo } from 'node:os';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConsoleEvent,
  type ConsoleService,
  createConsoleService,
  type MethodName,
  methods,
  type Params,
  type Result,
} from '../../src/console/index.ts';
import { type LeaseBackend, openBackend } from '../../src/index.ts';
import { PG_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';
import { sharedOpener, until } from './helpers.ts';

/** Calls through the service and checks the result against the contract's schema. */
async function call<M extends MethodName>(
  service: ConsoleService,
  method: M,
  params: Params<M>,
): Promise<Result<M>> {
  const result = await service.call(method, params);
  methods[method].result.parse(result);
  return result;
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return (err as { code?: string }).code ?? 'none';
  }
  return 'resolved';
}

describe('console service on PGlite', () => {
  let backend: LeaseBackend;
  let service: ConsoleService;
  let rw: string;
  let ro: string;
  const events: ConsoleEvent[] = [];

  beforeAll(async () => {
    backend = await openBackend('pglite://memory');
    service = createConsoleService({
      openBackend: sharedOpener(backend),
      connections: [
        { name: 'demo', url: 'pglite://memory', environment: 'demo' },
        { name: 'demo-ro', url: 'pglite://memory', readOnly: true },
      ],
      feed: { pollMaxMs: 200 },
    });
    service.subscribe((e) => events.push(e));
    const list = service.connections();
    rw = list[0]!.id;
    ro = list[1]!.id;
    await service.waitLive(rw);
    await service.waitLive(ro);
  });

  afterAll(async () => {
    await service?.close();
    await backend?.close();
  });

  it('lists connections with state, freshness and the OS user as operator', async () => {
    const conns = await call(service, 'connections.list', {});
    expect(conns.map((c) => [c.name, c.state, c.readOnly, c.kind])).toEqual([
      ['demo', 'live', false, 'pglite'],
      ['demo-ro', 'live', true, 'pglite'],
    ]);
    expect(conns[0]!.syncedAt).not.toBeNull();
    const info = await call(service, 'console.info', {});
    expect(info.operator).toBe(userInfo().username);
    expect(info.readOnly).toBe(false);
  });

  it('follows writes: leases events with consecutive seq, snapshot, counts and rates', async () => {
    const before = events.length;
    const a = await backend.acquire('job-a', 'worker-1', 60_000);
    await backend.acquire('job-b', 'worker-2', 60_000);
    await backend.renew(a, 60_000);
    const model = service.model(rw)!;
    await model.caughtUp();
    // The renew is not in the feed: a heartbeat check reads it, as job-a is in view (issue 43).
    model.setVisible(() => ['job-a']);
    await model.swept();
    const snap = await call(service, 'fleet.snapshot', { connectionId: rw });
    expect(snap.rows.map((r) => r.workId).sort()).toEqual(['job-a', 'job-b']);
    const rowA = snap.rows.find((r) => r.workId === 'job-a')!;
    expect(rowA.renewedAt).not.toBeNull();
    const mine = events
      .slice(before)
      .filter(
        (e): e is Extract<ConsoleEvent, { type: 'leases' }> => e.type === 'leases' && e.connectionId === rw,
      );
    expect(mine.length).toBeGreaterThan(0);
    for (let i = 1; i < mine.length; i++) expect(mine[i]!.seq).toBe(mine[i - 1]!.seq + 1);
    expect(mine.at(-1)!.seq).toBe(snap.seq);
    const counts = await call(service, 'fleet.counts', { connectionId: rw });
    expect(counts.counts.total).toBe(2);
    expect(counts.counts.byStatus.live).toBe(2);
    expect(counts.counts.byHolder.map((h) => h.holderId).sort()).toEqual(['worker-1', 'worker-2']);
    expect(counts.rates.reduce((n, p) => n + p.acquires, 0)).toBe(2);
  });

  it('reads one lease fresh, and checkpoints page by page with decoding', async () => {
    expect(await call(service, 'lease.get', { connectionId: rw, workId: 'nope' })).toBeNull();
    const rec = await backend.acquire('job-c', 'worker-3', 60_000);
    const doc = { step: 7, items: ['x', 'y'] };
    await backend.checkpoint(rec, new TextEncoder().encode(JSON.stringify(doc)), 60_000);
    const got = await call(service, 'lease.get', { connectionId: rw, workId: 'job-c' });
    expect(got?.checkpointSize).toBe(JSON.stringify(doc).length);
    const page = await call(service, 'checkpoint.read', { connectionId: rw, workId: 'job-c' });
    expect(page?.decoded.kind).toBe('json');
    expect(page?.decoded.json).toEqual(doc);
    const part = await call(service, 'checkpoint.read', {
      connectionId: rw,
      workId: 'job-c',
      offset: 2,
      length: 4,
    });
    expect(part?.length).toBe(4);
    expect(Buffer.from(part!.base64, 'base64').toString()).toBe(JSON.stringify(doc).slice(2, 6));
    expect(part?.decoded.kind).not.toBe('json');
    const bin = await backend.acquire('job-bin', 'worker-3', 60_000);
    await backend.checkpoint(bin, new Uint8Array([0, 1, 2, 255, 254]), 60_000);
    const hex = await call(service, 'checkpoint.read', { connectionId: rw, workId: 'job-bin' });
    expect(hex?.decoded.kind).toBe('hex');
    expect(await call(service, 'checkpoint.read', { connectionId: rw, workId: 'missing' })).toBeNull();
  });

  it('force-releases with the token the operator saw, refuses a moved token, and audits', async () => {
    const rec = await backend.acquire('job-f', 'worker-9', 60_000);
    const stale = (rec.fencingToken + 5n).toString();
    expect(
      await codeOf(
        service.call('lease.forceRelease', {
          connectionId: rw,
          workId: 'job-f',
          expectedToken: stale,
          reason: 'x',
        }),
      ),
    ).toBe('CONFLICT');
    const row = await call(service, 'lease.forceRelease', {
      connectionId: rw,
      workId: 'job-f',
      expectedToken: rec.fencingToken.toString(),
      reason: 'stuck on a poisoned message',
    });
    expect(row.ended).toBe('force-released');
    // A new token above the old one (the token rule floors it by the server clock: not always + 1).
    expect(BigInt(row.fencingToken) > rec.fencingToken).toBe(true);
    expect(await codeOf(backend.renew(rec, 1000))).toBe('FENCED');
    const audit = await call(service, 'audit.list', { connectionId: rw, workId: 'job-f' });
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      workId: 'job-f',
      operator: userInfo().username,
      reason: 'stuck on a poisoned message',
      oldHolderId: 'worker-9',
      oldToken: rec.fencingToken.toString(),
    });
    const all = await call(service, 'audit.list', { connectionId: rw });
    expect(all.map((a) => a.workId)).toContain('job-f');
    expect(service.model(rw)!.get('job-f')?.ended).toBe('force-released');
  });

  it('requests a release: the row carries the request (server ms), the token stays, audited; a moved token is CONFLICT', async () => {
    const rec = await backend.acquire('job-rr', 'worker-3', 60_000);
    expect(
      await codeOf(
        service.call('lease.requestRelease', {
          connectionId: rw,
          workId: 'job-rr',
          expectedToken: (rec.fencingToken + 5n).toString(),
          reason: 'x',
        }),
      ),
    ).toBe('CONFLICT');
    expect((await backend.admin.get('job-rr'))?.releaseRequest).toBeNull();
    const before = (await backend.admin.serverTime()).getTime();
    const row = await call(service, 'lease.requestRelease', {
      connectionId: rw,
      workId: 'job-rr',
      expectedToken: rec.fencingToken.toString(),
      reason: 'drain node 7',
    });
    expect(row).toMatchObject({
      fencingToken: rec.fencingToken.toString(),
      ended: null,
      releaseRequest: { operator: userInfo().username, reason: 'drain node 7', at: expect.any(Number) },
    });
    expect(row.releaseRequest!.at).toBeGreaterThanOrEqual(before - 5);
    // The holder hears it from its renew; the model shows it too.
    expect((await backend.renew(rec, 60_000)).releaseRequested?.reason).toBe('drain node 7');
    await until(
      'the model shows the request',
      () => service.model(rw)!.get('job-rr')?.releaseRequest?.reason === 'drain node 7',
    );
    const audit = await call(service, 'audit.list', { connectionId: rw, workId: 'job-rr' });
    expect(audit).toMatchObject([
      {
        action: 'request-release',
        operator: userInfo().username,
        oldToken: rec.fencingToken.toString(),
        newToken: rec.fencingToken.toString(),
      },
    ]);
    // The fleet snapshot carries it on the wire as well.
    const snap = await call(service, 'fleet.snapshot', { connectionId: rw });
    expect(JSON.stringify(snap)).toContain('drain node 7');
    // Once released, the request is gone from the row.
    await backend.release(rec);
    const after = await call(service, 'lease.get', { connectionId: rw, workId: 'job-rr' });
    expect(after?.releaseRequest).toBeNull();
  });

  it('refuses request-release on a read-only connection (FORBIDDEN), and says so in the session', async () => {
    const rec = await backend.acquire('job-rr-ro', 'worker-1', 60_000);
    const attempt = service.call('lease.requestRelease', {
      connectionId: ro,
      workId: 'job-rr-ro',
      expectedToken: rec.fencingToken.toString(),
      reason: 'should not happen',
    });
    expect(await codeOf(attempt)).toBe('FORBIDDEN');
    expect((await backend.admin.get('job-rr-ro'))?.releaseRequest).toBeNull();
    const session = await call(service, 'console.session', {});
    const byId = new Map(session.connections.map((c) => [c.connectionId, c]));
    expect(byId.get(rw)?.requestRelease).toEqual({ allowed: true });
    expect(byId.get(ro)?.requestRelease).toMatchObject({
      allowed: false,
      reason: expect.stringMatching(/read-only: request-release is refused/),
    });
    expect(
      await codeOf(
        service.call('lease.requestRelease', {
          connectionId: rw,
          workId: 'job-rr-ro',
          expectedToken: rec.fencingToken.toString(),
          reason: '  ',
        }),
      ),
    ).toBe('INVALID_ARGUMENT');
    expect(
      await codeOf(
        service.call('lease.requestRelease', {
          connectionId: rw,
          workId: 'job-rr-ro',
          expectedToken: 'not-a-token',
          reason: 'r',
        }),
      ),
    ).toBe('INVALID_ARGUMENT');
    expect((await backend.admin.get('job-rr-ro'))?.releaseRequest).toBeNull();
  });

  it('refuses force-release on a read-only connection in the service itself', async () => {
    const rec = await backend.acquire('job-ro', 'worker-1', 60_000);
    const attempt = service.call('lease.forceRelease', {
      connectionId: ro,
      workId: 'job-ro',
      expectedToken: rec.fencingToken.toString(),
      reason: 'should not happen',
    });
    expect(await codeOf(attempt)).toBe('FORBIDDEN');
    expect((await backend.admin.get('job-ro'))?.ended).toBeNull();
  });

  it('a read-only console makes every connection read-only', async () => {
    const readOnly = createConsoleService({
      readOnly: true,
      openBackend: sharedOpener(backend),
      connections: [{ name: 'rw-profile', url: 'pglite://memory', readOnly: false }],
    });
    try {
      const id = readOnly.connections()[0]!.id;
      await readOnly.waitLive(id);
      expect(readOnly.connections()[0]!.readOnly).toBe(true);
      expect((await readOnly.call('console.info', {})).readOnly).toBe(true);
      const rec = await backend.acquire('job-ro2', 'worker-1', 60_000);
      const attempt = readOnly.call('lease.forceRelease', {
        connectionId: id,
        workId: 'job-ro2',
        expectedToken: rec.fencingToken.toString(),
        reason: 'no',
      });
      expect(await codeOf(attempt)).toBe('FORBIDDEN');
    } finally {
      await readOnly.close();
    }
  });

  it('refuses bad params and unknown connections with stable codes', async () => {
    expect(await codeOf(service.call('fleet.snapshot', { connectionId: 'nope' }))).toBe('NOT_FOUND');
    expect(
      await codeOf(
        service.call('lease.forceRelease', {
          connectionId: rw,
          workId: 'job-a',
          expectedToken: '1',
          reason: '  ',
        }),
      ),
    ).toBe('INVALID_ARGUMENT');
    // Only the chart's windows: no other span, no string.
    for (const minutes of [30, 0, 2000, '15'] as never[]) {
      expect(await codeOf(service.call('fleet.counts', { connectionId: rw, minutes })), String(minutes)).toBe(
        'INVALID_ARGUMENT',
      );
    }
  });
});

describe('console service on PostgreSQL', () => {
  const ns = uniqueNamespace('console');
  const target = { kind: 'postgres' as const, url: PG_URL };
  let backend: LeaseBackend;

  beforeAll(async () => {
    backend = await openBackend(PG_URL, { schema: ns });
  });
  afterAll(async () => {
    await backend?.close();
    await dropNamespace(target, ns);
  });

  it('never migrates: a missing schema is a SCHEMA_MISMATCH in the connection error', async () => {
    const missing = uniqueNamespace('absent');
    const service = createConsoleService({
      connections: [{ name: 'pg', url: `${PG_URL}?schema=${missing}` }],
    });
    try {
      const conn = await until('error state', () => {
        const c = service.connections()[0]!;
        return c.state === 'error' ? c : null;
      });
      expect(conn.error?.code).toBe('SCHEMA_MISMATCH');
      expect(conn.error?.message).toMatch(/schema/i);
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      try {
        const res = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [missing]);
        expect(res.rowCount).toBe(0);
      } finally {
        await client.end();
      }
      expect(await codeOf(service.call('lease.get', { connectionId: conn.id, workId: 'x' }))).toBe(
        'SCHEMA_MISMATCH',
      );
    } finally {
      await service.close();
    }
  });

  it('tests a URL without migrating: clock and latency, or SCHEMA_MISMATCH', async () => {
    const service = createConsoleService();
    try {
      const ok = await call(service, 'connections.test', { url: `${PG_URL}?schema=${ns}` });
      expect(ok.kind).toBe('postgres');
      expect(Math.abs(ok.serverTime - Date.now())).toBeLessThan(5_000);
      const missing = uniqueNamespace('absent');
      expect(await codeOf(service.call('connections.test', { url: `${PG_URL}?schema=${missing}` }))).toBe(
        'SCHEMA_MISMATCH',
      );
      expect(await codeOf(service.call('connections.test', { url: 'mysql://db' }))).toBe('INVALID_ARGUMENT');
    } finally {
      await service.close();
    }
  });

  it("reads URLs with the library's grammar: unknown and conflicting options are refused before anything is saved", async () => {
    const service = createConsoleService({ backendOptions: { schema: ns } });
    try {
      // The same schema in the URL and in the service's options is fine.
      const ok = await call(service, 'connections.test', { url: `${PG_URL}?schema=${ns}` });
      expect(ok.kind).toBe('postgres');
      for (const url of [`${PG_URL}?shema=${ns}`, `${PG_URL}?schema=other_${ns}`, `${PG_URL}?keyPrefix=x`]) {
        expect(await codeOf(service.call('connections.test', { url })), url).toBe('INVALID_ARGUMENT');
        expect(
          await codeOf(
            service.call('connections.add', { name: 'typo', url, readOnly: false, environment: '' }),
          ),
          url,
        ).toBe('INVALID_ARGUMENT');
      }
      expect(service.connections()).toEqual([]);
    } finally {
      await service.close();
    }
  });

  it('derives statuses by the server clock even when the local clock is 5 minutes off', async () => {
    const skew = 5 * 60_000;
    const service = createConsoleService({
      now: () => Date.now() + skew,
      connections: [{ name: 'pg', url: `${PG_URL}?schema=${ns}` }],
    });
    try {
      const id = service.connections()[0]!.id;
      await backend.acquire('skew-live', 'w', 120_000);
      const gone = await backend.acquire('skew-gone', 'w', 60_000);
      await backend.release(gone);
      const info = await service.waitLive(id);
      expect(Math.abs(info.clockOffsetMs + skew)).toBeLessThan(2_000);
      await service.model(id)!.caughtUp();
      const { counts } = await call(service, 'fleet.counts', { connectionId: id });
      // With the raw local clock the live lease (2 min left) would look expired.
      expect(counts.byStatus.live).toBe(1);
      expect(counts.byStatus.released).toBe(1);
      expect(counts.byStatus.expired).toBe(0);
      const snap = await call(service, 'fleet.snapshot', { connectionId: id });
      expect(Math.abs(snap.serverTime - Date.now())).toBeLessThan(2_000);
    } finally {
      await service.close();
    }
  });
});
