/**
 * PGlite-specific behaviour: URL forms, on-disk persistence across reopen,
 * schema checks, serialized calls on its single connection, and the change
 * feed's xid functions in the WASM build. The lease contract itself is covered
 * by the conformance suite (test/conformance).
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPglite, pgliteLocation } from '../../src/backends/pglite/index.ts';
import type { LeaseBackend } from '../../src/index.ts';
import { openBackend } from '../../src/index.ts';
import { codeOf, uniqueNamespace } from '../support/backends.ts';
import { expectLeaseInfoReadsAgree } from './sql-lease-info.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'worklease-pglite-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('URLs', () => {
  it('accepts memory and absolute directories', () => {
    expect(pgliteLocation('pglite://memory')).toEqual({ dataDir: null });
    expect(pgliteLocation('pglite:///var/lib/x%20y')).toEqual({ dataDir: '/var/lib/x y' });
  });

  it('refuses relative paths before touching the disk', async () => {
    for (const url of ['pglite://data/dir', 'pglite:data', 'pglite://', 'pglite:', 'pglite://./x']) {
      expect(await codeOf(openPglite(url)), url).toBe('INVALID_ARGUMENT');
    }
    expect(await codeOf(openBackend('pglite://relative/dir'))).toBe('INVALID_ARGUMENT');
  });
});

describe('on disk', () => {
  it('keeps leases, checkpoints and tokens across close and reopen', async () => {
    const url = `pglite://${path.join(dir, 'db1')}`;
    const schema = uniqueNamespace('plt');
    // A missing database is refused when migration is off, and nothing is created.
    expect(await codeOf(openPglite(url, { schema, migrate: false }))).toBe('NOT_FOUND');
    expect(existsSync(path.join(dir, 'db1'))).toBe(false);

    const first = await openPglite(url, { schema });
    const rec = await first.acquire('job', 'h1', 60_000);
    await first.checkpoint(rec, new Uint8Array([1, 2, 3]), 60_000);
    await first.close();
    // The database exists now; another schema in it is still missing, and is not created.
    expect(await codeOf(openPglite(url, { schema: `${schema}_other`, migrate: false }))).toBe(
      'SCHEMA_MISMATCH',
    );

    const again = await openPglite(url, { schema, migrate: false });
    try {
      expect(await again.readCheckpoint(rec)).toEqual({
        state: new Uint8Array([1, 2, 3]),
        cleanHandoff: true,
      });
      await again.release(rec);
      const next = await again.acquire('job', 'h2', 60_000);
      expect(next.fencingToken > rec.fencingToken).toBe(true);
      expect((await again.admin.get('job'))?.predecessorEnd).toBe('released');
    } finally {
      await again.close();
    }
    // Three on-disk opens (each starts Postgres in WASM): seconds each on a busy machine.
  }, 120_000);
});

describe('in memory', () => {
  let b: LeaseBackend;
  beforeAll(async () => {
    b = await openPglite('pglite://memory', { schema: uniqueNamespace('plt') });
  });
  afterAll(async () => {
    await b.close();
  });

  it('is a separate database per open', async () => {
    const other = await openPglite('pglite://memory');
    try {
      await other.acquire('only-here', 'h', 10_000);
      expect(await b.admin.get('only-here')).toBeNull();
    } finally {
      await other.close();
    }
  });

  it('serializes concurrent calls on its one connection: exactly one acquire wins', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => codeOf(b.acquire('contended', `h${i}`, 10_000))),
    );
    expect(results.filter((r) => r === 'OK')).toHaveLength(1);
    expect(results.filter((r) => r === 'LEASE_HELD')).toHaveLength(19);
    const many = await Promise.all(Array.from({ length: 30 }, (_, i) => b.acquire(`many-${i}`, 'h', 10_000)));
    for (const r of many) expect((await b.admin.get(r.workId))?.version).toBe(1n);
  });

  it('runs the change feed (pg_current_xact_id, pg_current_snapshot work in the WASM build)', async () => {
    const cursor = await b.admin.changeCursor();
    const rec = await b.acquire('feed', 'h', 10_000);
    await b.checkpoint(rec, new Uint8Array([9]), 10_000);
    await b.release(rec);
    expect(await b.admin.prune({ olderThanMs: 0 })).toBeGreaterThanOrEqual(1);
    const seen: string[] = [];
    let c = cursor;
    for (let i = 0; i < 20; i++) {
      const batch = await b.admin.changes({ cursor: c, limit: 2 });
      seen.push(...batch.changes.filter((x) => x.workId === 'feed').map((x) => `${x.kind}:${x.version}`));
      c = batch.cursor;
      if (batch.changes.length === 0) break;
    }
    // Only the latest version of a row is kept, so the feed shows where it ended up.
    expect(seen.at(-1)).toBe('pruned:4');
    expect(await b.admin.get('feed')).toBeNull();
    const next = await b.acquire('feed', 'h2', 10_000);
    expect(next.fencingToken > rec.fencingToken).toBe(true);
    expect((await b.admin.changes({ cursor: c })).changes.map((x) => [x.workId, x.kind])).toContainEqual([
      'feed',
      'acquired',
    ]);
  });

  it('get, list, changes and forceRelease return the same LeaseInfo for a row with every field set', async () => {
    const own = await openPglite('pglite://memory');
    try {
      await expectLeaseInfoReadsAgree(own);
    } finally {
      await own.close();
    }
  });

  it('lets timers run during a tight loop of calls (PGlite settles without I/O)', async () => {
    const rec = await b.acquire('timers', 'h', 60_000);
    let ticks = 0;
    const interval = setInterval(() => ticks++, 10);
    let calls = 0;
    try {
      for (let i = 0; i < 150; i++) {
        await b.renew(rec, 60_000);
        await b.admin.get('timers');
        calls += 2;
      }
    } finally {
      clearInterval(interval);
    }
    expect(calls).toBe(300);
    // Liveness only: without a turn of the event loop between calls this stays 0.
    expect(ticks).toBeGreaterThan(0);
  });

  it('reports the server clock', async () => {
    const t = await b.admin.serverTime();
    expect(Math.abs(t.getTime() - Date.now())).toBeLessThan(60_000);
  });
});
