/**
 * checkpoint.decode / search / export through the console service, on real PostgreSQL: a
 * checkpoint larger than one readState page is read whole and consistently, decoded once, served
 * by path in pages, and refused with CONFLICT once it changed.
 */
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { encode as msgpackEncode } from '@msgpack/msgpack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConsoleService,
  createConsoleService,
  dispatch,
  type MethodName,
  methods,
  type Params,
  type Result,
} from '../../src/console/index.ts';
import type { LeaseAdmin, LeaseBackend, LeaseRecord } from '../../src/index.ts';
import { codeOf, openIsolated, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';
import { sharedOpener } from './helpers.ts';

const TARGET = {
  kind: 'postgres' as const,
  url: process.env.WORKLEASE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
};
const TTL = 120_000;
const enc = new TextEncoder();

async function call<M extends MethodName>(
  service: ConsoleService,
  method: M,
  params: Params<M>,
): Promise<Result<M>> {
  const result = await service.call(method, params);
  methods[method].result.parse(result);
  return result;
}

/** About `mib` MiB of JSON: an object with an array of orders and a few plain fields. */
function bigDoc(mib: number, tag: string) {
  const n = Math.ceil((mib * 1024 * 1024) / 40);
  return {
    tag,
    orders: Array.from({ length: n }, (_, i) => ({ id: i, sku: `SKU-${tag}-${i}`, qty: i % 7 })),
    done: false,
  };
}

describe('decoded checkpoints through the console service (PostgreSQL)', () => {
  const ns = uniqueNamespace('decode');
  let backend: LeaseBackend;
  let service: ConsoleService;
  let conn: string;
  const reads = { state: 0 };

  beforeAll(async () => {
    backend = await openIsolated(TARGET, ns, { maxStateBytes: 20 * 1024 * 1024 });
    // Counts the backend reads the console makes, to show a decoded checkpoint is read once.
    const counted: LeaseBackend = {
      ...backend,
      admin: new Proxy(backend.admin, {
        get(target, key) {
          const v = Reflect.get(target, key) as unknown;
          if (key === 'readState' && typeof v === 'function') {
            return (...args: unknown[]) => {
              reads.state++;
              return (v as (...a: unknown[]) => unknown).apply(target, args);
            };
          }
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      }) as LeaseAdmin,
    };
    service = createConsoleService({
      openBackend: sharedOpener(counted),
      connections: [{ name: 'pg', url: `${TARGET.url}?schema=${ns}` }],
      feed: { pollMaxMs: 200 },
    });
    conn = service.connections()[0]!.id;
    await service.waitLive(conn);
  });

  afterAll(async () => {
    await service?.close();
    await backend?.close();
    await dropNamespace(TARGET, ns);
  });

  const save = async (workId: string, bytes: Uint8Array): Promise<LeaseRecord> => {
    const info = await backend.admin.get(workId);
    const r =
      info !== null && info.ended === null && info.expiresAt.getTime() > Date.now()
        ? { workId, holderId: info.holderId, fencingToken: info.fencingToken, expiresAt: info.expiresAt }
        : await backend.acquire(workId, 'worker-1', TTL);
    await backend.checkpoint(r, bytes, TTL);
    return r;
  };

  it('shows a 2 MiB JSON as a tree: read once, served by path a page at a time', async () => {
    const doc = bigDoc(2.2, 'a');
    const bytes = enc.encode(JSON.stringify(doc));
    expect(bytes.length).toBeGreaterThan(2 * 1024 * 1024);
    await save('big/json', bytes);
    reads.state = 0;
    const t0 = performance.now();
    const root = await call(service, 'checkpoint.decode', { connectionId: conn, workId: 'big/json' });
    const firstTreeMs = performance.now() - t0;
    console.log(
      `first tree of a ${(bytes.length / 1048576).toFixed(1)} MiB JSON: ${firstTreeMs.toFixed(0)} ms`,
    );
    expect(root).toMatchObject({ layers: ['json'], error: null, size: bytes.length, guessed: false });
    expect(root!.node).toMatchObject({ type: 'object', count: 3 });
    expect(root!.children.map((c) => [c.key, c.preview])).toEqual([
      ['tag', '"a"'],
      ['orders', `[${doc.orders.length}]`],
      ['done', 'false'],
    ]);
    // 3 pages of 1 MiB, no more.
    const readsForDecode = reads.state;
    expect(readsForDecode).toBe(3);

    const last = doc.orders.length - 1;
    const page = await call(service, 'checkpoint.decode', {
      connectionId: conn,
      workId: 'big/json',
      id: root!.id,
      path: ['orders'],
      offset: last - 9,
      limit: 10,
    });
    expect(page!.children.map((c) => c.key)).toEqual(
      Array.from({ length: 10 }, (_, i) => String(last - 9 + i)),
    );
    const deep = await call(service, 'checkpoint.decode', {
      connectionId: conn,
      workId: 'big/json',
      id: root!.id,
      path: ['orders', String(last)],
    });
    expect(deep!.trail).toEqual([1, last]);
    expect(deep!.children.map((c) => [c.key, c.preview])).toEqual([
      ['id', String(last)],
      ['sku', `"SKU-a-${last}"`],
      ['qty', String(last % 7)],
    ]);
    // Pages of the same decoding read nothing from the backend.
    expect(reads.state).toBe(readsForDecode);

    const found = await call(service, 'checkpoint.search', {
      connectionId: conn,
      workId: 'big/json',
      id: root!.id,
      query: `sku-a-${last}`,
    });
    expect(found.matches.map((m) => m.path)).toEqual([['orders', String(last), 'sku']]);

    // The decoded JSON, in export pages, is the document; the raw pages are the bytes.
    let json = '';
    for (let offset: number | null = 0; offset !== null; ) {
      const p: Result<'checkpoint.export'> = await call(service, 'checkpoint.export', {
        connectionId: conn,
        workId: 'big/json',
        id: root!.id,
        format: 'json',
        offset,
      });
      json += p.data;
      offset = p.nextOffset;
    }
    expect(json).toBe(JSON.stringify(doc, null, 2));
    const raw: Buffer[] = [];
    for (let offset: number | null = 0; offset !== null; ) {
      const p: Result<'checkpoint.export'> = await call(service, 'checkpoint.export', {
        connectionId: conn,
        workId: 'big/json',
        id: root!.id,
        format: 'raw',
        offset,
      });
      raw.push(Buffer.from(p.data, 'base64'));
      offset = p.nextOffset;
    }
    expect(Buffer.concat(raw).equals(Buffer.from(bytes))).toBe(true);
  });

  it('refuses a path with no node (NOT_FOUND), an id of another checkpoint (CONFLICT), and bad params before any read', async () => {
    const r = await save('small/msgpack', msgpackEncode({ a: 1, list: [1, 2] }));
    const first = await call(service, 'checkpoint.decode', { connectionId: conn, workId: 'small/msgpack' });
    expect(first!.layers).toEqual(['msgpack']);
    expect(
      await codeOf(
        call(service, 'checkpoint.decode', { connectionId: conn, workId: 'small/msgpack', path: ['nope'] }),
      ),
    ).toBe('NOT_FOUND');
    // A new checkpoint is a new id; the old id is still served from the cache (the same decoding),
    // but an id the console does not hold and the backend no longer has is a CONFLICT.
    await backend.checkpoint(r, msgpackEncode({ a: 2 }), TTL);
    const second = await call(service, 'checkpoint.decode', { connectionId: conn, workId: 'small/msgpack' });
    expect(second!.id).not.toBe(first!.id);
    expect(second!.children.map((c) => c.preview)).toEqual(['2']);
    const again = await call(service, 'checkpoint.decode', {
      connectionId: conn,
      workId: 'small/msgpack',
      id: first!.id,
    });
    expect(again!.children.map((c) => c.preview)).toEqual(['1', '[2]']);
    const stale = `${r.fencingToken}.${'0'.repeat(32)}`;
    expect(
      await codeOf(
        call(service, 'checkpoint.decode', { connectionId: conn, workId: 'small/msgpack', id: stale }),
      ),
    ).toBe('CONFLICT');
    expect(
      await call(service, 'checkpoint.decode', { connectionId: conn, workId: 'no/such/item' }),
    ).toBeNull();

    reads.state = 0;
    const bad = await dispatch(service, 'checkpoint.decode', {
      connectionId: conn,
      workId: 'small/msgpack',
      limit: 5000,
    });
    expect(bad).toMatchObject({ ok: false, error: { code: 'INVALID_ARGUMENT' } });
    const badFormat = await dispatch(service, 'checkpoint.export', {
      connectionId: conn,
      workId: 'small/msgpack',
      id: second!.id,
      format: 'xml',
    });
    expect(badFormat).toMatchObject({ ok: false, error: { code: 'INVALID_ARGUMENT' } });
    expect(JSON.stringify(badFormat)).toContain('json');
    expect(reads.state).toBe(0);
  });

  it('reports a decompression bomb as could-not-decode, and the hex pages still work', async () => {
    const member = gzipSync(new Uint8Array(64 * 1024 * 1024), { level: 9 });
    const bomb = Buffer.concat(Array.from({ length: 16 }, () => member));
    await save('bad/bomb', bomb);
    const d = await call(service, 'checkpoint.decode', { connectionId: conn, workId: 'bad/bomb' });
    expect(d).toMatchObject({ layers: ['gzip'], node: null, children: [] });
    expect(d!.error).toMatch(/^could not decode: gzip expands past 16 MiB/);
    const page = await call(service, 'checkpoint.read', { connectionId: conn, workId: 'bad/bomb' });
    expect(page!.decoded.kind).toBe('hex');
    expect(page!.decoded.text.startsWith('00000000  1f 8b 08')).toBe(true);
  }, 60_000);

  it('declines a checkpoint over 16 MiB with a reason, and still exports its raw bytes', async () => {
    const bytes = new Uint8Array(17 * 1024 * 1024).map((_, i) => (i * 31) & 0xff);
    await save('big/blob', bytes);
    const d = await call(service, 'checkpoint.decode', { connectionId: conn, workId: 'big/blob' });
    expect(d!.error).toBe(
      'could not decode: the checkpoint is 17 MiB, over the 16 MiB the console decodes (its text and hex pages and the raw download still work)',
    );
    const hash = createHash('sha256');
    for (let offset: number | null = 0; offset !== null; ) {
      const p: Result<'checkpoint.export'> = await call(service, 'checkpoint.export', {
        connectionId: conn,
        workId: 'big/blob',
        id: d!.id,
        format: 'raw',
        offset,
      });
      hash.update(Buffer.from(p.data, 'base64'));
      offset = p.nextOffset;
    }
    expect(hash.digest('hex')).toBe(createHash('sha256').update(bytes).digest('hex'));
  }, 60_000);

  it('never mixes two checkpoints saved while a multi-page one is read', async () => {
    const a = enc.encode(JSON.stringify(bigDoc(2.2, 'a')));
    const b = enc.encode(JSON.stringify(bigDoc(2.2, 'b')));
    const r = await save('busy/json', a);
    let stop = false;
    let writes = 0;
    const writer = (async () => {
      while (!stop) {
        await backend.checkpoint(r, writes % 2 === 0 ? b : a, TTL);
        writes++;
        // Quiet spells between bursts of writes, so some reads see no write and succeed.
        if (writes % 3 === 0) await new Promise((res) => setTimeout(res, 400));
      }
    })();
    const tags = new Set<string>();
    let conflicts = 0;
    try {
      for (let i = 0; i < 10; i++) {
        const out = await service
          .call('checkpoint.decode', { connectionId: conn, workId: 'busy/json' })
          .catch((err: { code?: string }) => {
            if (err.code !== 'CONFLICT') throw err;
            conflicts++;
            return null;
          });
        if (out === null) continue;
        // Whole and one version: it parsed as JSON, and its tag matches every order's sku.
        expect(out!.error).toBeNull();
        const tag = out!.children[0]!.preview;
        const last = await call(service, 'checkpoint.decode', {
          connectionId: conn,
          workId: 'busy/json',
          id: out!.id,
          path: ['orders', String(Math.ceil((2.2 * 1024 * 1024) / 40) - 1), 'sku'],
        });
        expect(last!.node!.preview).toContain(`SKU-${JSON.parse(tag)}-`);
        tags.add(tag);
      }
    } finally {
      stop = true;
      await writer;
    }
    console.log(`busy checkpoint: ${writes} writes, ${tags.size} versions seen, ${conflicts} CONFLICTs`);
    expect(writes).toBeGreaterThan(0);
    expect(tags.size).toBeGreaterThan(0);
  }, 60_000);
});
