import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LeaseStatus } from '../../src/console/api.ts';
import { Budget } from '../../src/console/decode/compression.ts';
import { detect } from '../../src/console/decode/detect.ts';
import { decodeCheckpoint } from '../../src/console/decode/page.ts';
import { leaseStatus } from '../../src/console/status.ts';
import { encodePayload, resume, startDemoFleet } from '../../src/demo/fleet.ts';
import { type LeaseBackend, type LeaseInfo, openBackend } from '../../src/index.ts';

const thresholds = { expiringFraction: 0.25, stuckAfterMs: 700 };

function statusOf(info: LeaseInfo, now: number): LeaseStatus {
  return leaseStatus(
    {
      workId: info.workId,
      expiresAt: info.expiresAt.getTime(),
      ttlMs: info.ttlMs,
      ended: info.ended,
      acquiredAt: info.acquiredAt.getTime(),
      renewedAt: info.renewedAt?.getTime() ?? null,
      checkpointedAt: info.checkpointedAt?.getTime() ?? null,
    },
    now,
    thresholds,
  );
}

describe('demo fleet on pglite://memory', () => {
  let backend: LeaseBackend;
  beforeAll(async () => {
    backend = await openBackend('pglite://memory');
  });
  afterAll(async () => {
    await backend?.close();
  });

  it('shows live, stuck and ended leases with JSON, text and binary checkpoints, within its bounds', async () => {
    const errors: unknown[] = [];
    const fleet = startDemoFleet(backend, {
      workers: 6,
      items: 10,
      ttlMs: 1200,
      tickMs: 120,
      stuckForMs: 60_000,
      newItemEveryMs: 200,
      onError: (err) => errors.push(err),
    });
    expect(new Set(fleet.workers.values())).toEqual(new Set(['steady', 'stuck', 'dying', 'flapping']));
    const seen = new Set<LeaseStatus>();
    let items: LeaseInfo[] = [];
    const deadline = Date.now() + 20_000;
    try {
      // Polls until every behaviour has shown up at least once (or the generous deadline passes).
      while (Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 250));
        items = (await backend.admin.list({ limit: 1000 })).items;
        const now = (await backend.admin.serverTime()).getTime();
        for (const info of items) seen.add(statusOf(info, now));
        if (['live', 'stuck', 'expired', 'released'].every((s) => seen.has(s as LeaseStatus))) break;
      }
    } finally {
      await fleet.stop();
    }
    expect([...seen]).toEqual(expect.arrayContaining(['live', 'stuck', 'expired', 'released']));
    expect(items.length).toBeLessThanOrEqual(10);
    expect(fleet.stats().items).toBeLessThanOrEqual(10);
    expect(errors).toEqual([]);

    const kinds = new Set<string>();
    for (const info of items) {
      const page = await backend.admin.readState(info.workId);
      if (page === null || page.size === null) continue;
      kinds.add(decodeCheckpoint(page.bytes, page.size, 0).kind);
    }
    expect([...kinds]).toEqual(expect.arrayContaining(['json', 'text', 'hex']));
    const stats = fleet.stats();
    expect(stats.claims).toBeGreaterThan(5);
    expect(stats.saves).toBeGreaterThan(5);
    expect(stats.renewals).toBeGreaterThan(0);
    expect(stats.abandoned).toBeGreaterThan(0);
    // stop() is idempotent and nothing runs after it.
    await fleet.stop();
    const before = (await backend.admin.changeCursor()) as string;
    await new Promise((r) => setTimeout(r, 400));
    expect((await backend.admin.changes({ cursor: before })).changes).toEqual([]);
  });
});

describe('demo payloads', () => {
  it('resume where the previous holder stopped, and start a new run when done', () => {
    for (const format of ['json', 'text', 'binary'] as const) {
      const bytes = encodePayload(format, { processed: 7, target: 30, run: 2 }, 'w-1', 3);
      expect(resume(bytes, format)).toEqual({ processed: 7, target: 30, run: 2 });
      const done = encodePayload(format, { processed: 30, target: 30, run: 2 }, 'w-1', 3);
      expect(resume(done, format)).toMatchObject({ processed: 0, run: 3 });
    }
    expect(resume(null, 'json')).toMatchObject({ processed: 0, run: 1 });
    expect(resume(new Uint8Array([1, 2, 3]), 'binary')).toMatchObject({ processed: 0, run: 1 });
  });
});

describe('demo fleet checkpoints in the formats the console decodes', () => {
  it('encodes each format so the console detects it', () => {
    const p = { processed: 7, target: 30, run: 2 };
    const layers = (format: Parameters<typeof encodePayload>[0]) => {
      const bytes = encodePayload(format, p, 'w-1', 3);
      return `${detect(bytes, new Budget()).layers.join('+')}${bytes.length > 2 * 1024 * 1024 ? ' (>2 MiB)' : ''}`;
    };
    expect({
      json: layers('json'),
      text: layers('text'),
      binary: layers('binary'),
      msgpack: layers('msgpack'),
      cbor: layers('cbor'),
      'protobuf-gzip': layers('protobuf-gzip'),
      envelope: layers('envelope'),
      export: layers('export'),
    }).toEqual({
      json: 'json',
      text: 'text',
      binary: '',
      msgpack: 'msgpack',
      cbor: 'cbor',
      'protobuf-gzip': 'gzip+protobuf',
      envelope: 'json',
      export: 'json (>2 MiB)',
    });
    // The envelope's body is base64 of gzip'd msgpack: the tree shows it decoded.
    const envelope = JSON.parse(new TextDecoder().decode(encodePayload('envelope', p, 'w-1', 3))) as {
      body: string;
    };
    expect(detect(new TextEncoder().encode(envelope.body), new Budget()).layers).toEqual([
      'base64',
      'gzip',
      'msgpack',
    ]);
  });

  it('gives one item the 2.2 MiB export where the checkpoint limit allows it, a JSON job where not', async () => {
    for (const [maxStateBytes, fifth] of [
      [4 * 1024 * 1024, 'demo/export-0005'],
      [1024 * 1024, 'demo/job-0005'],
    ] as const) {
      const backend = await openBackend('pglite://memory', { maxStateBytes });
      const errors: unknown[] = [];
      const fleet = startDemoFleet(backend, {
        workers: 8,
        items: 8,
        ttlMs: 5000,
        tickMs: 200,
        onError: (e) => errors.push(e),
      });
      let ids: string[] = [];
      try {
        const deadline = Date.now() + 30_000;
        while (Date.now() < deadline && ids.length < 8) {
          await new Promise((r) => setTimeout(r, 200));
          ids = (await backend.admin.list({ limit: 100 })).items.map((i) => i.workId).sort();
        }
      } finally {
        await fleet.stop();
        await backend.close();
      }
      expect(errors).toEqual([]);
      expect(ids).toEqual(
        [
          'demo/blob-0001',
          'demo/msgpack-0002',
          'demo/log-0003',
          'demo/proto-0004',
          fifth,
          'demo/cbor-0006',
          'demo/envelope-0007',
          'demo/job-0008',
        ].sort(),
      );
    }
  }, 90_000);

  it('reads the progress back from every format', () => {
    for (const format of ['msgpack', 'cbor', 'protobuf-gzip', 'envelope', 'export'] as const) {
      const p = { processed: 7, target: 30, run: 2 };
      expect(resume(encodePayload(format, p, 'w-1', 3), format), format).toEqual(p);
    }
  });
});
