/**
 * The checkpoint decoders on real encodings, each made by the format's own encoder
 * (@msgpack/msgpack, cborg, protobufjs, node:zlib), and on what must not bring the console down:
 * cut and corrupt data, decompression bombs, deep nesting, random bytes.
 */
import {
  brotliCompressSync,
  deflateRawSync,
  deflateSync,
  gzipSync as gzipBomb,
  gzipSync,
  constants as zlibConstants,
} from 'node:zlib';
import { encode as msgpackEncode } from '@msgpack/msgpack';
import { encode as cborEncode, Tagged } from 'cborg';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { Budget } from '../../src/console/decode/compression.ts';
import { detect } from '../../src/console/decode/detect.ts';
import { MAX_DEPTH, MAX_OUTPUT_BYTES, MAX_PROTOBUF_DEPTH } from '../../src/console/decode/limits.ts';
import { type PbField, PbMessage } from '../../src/console/decode/protobuf.ts';
import { DecodedDoc, exportJson, searchDoc, treePage } from '../../src/console/decode/tree.ts';

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const run = (bytes: Uint8Array) => detect(bytes, new Budget());
const doc = (bytes: Uint8Array) => {
  const d = run(bytes);
  return new DecodedDoc(d, bytes.length);
};
/** The rows a tree shows under `path`: key → preview. */
const rows = (bytes: Uint8Array | DecodedDoc, path: string[] = []) =>
  Object.fromEntries(
    treePage(bytes instanceof DecodedDoc ? bytes : doc(bytes), path, 0, 1000).children.map((c) => [
      c.key,
      c.preview,
    ]),
  );

const PROTO = `
syntax = "proto3";
message Cursor { string shard = 1; int64 offset = 2; }
message Item { string sku = 1; uint32 qty = 2; }
message Batch {
  string id = 1;
  uint64 processed = 2;
  repeated int32 counts = 3;
  Cursor cursor = 4;
  repeated Item items = 5;
  double ratio = 6;
  bytes blob = 7;
  sint32 delta = 8;
  float weight = 9;
}
`;
const Batch = protobuf.parse(PROTO).root.lookupType('Batch');
const batchValue = {
  id: 'batch-0042',
  processed: 1234567,
  counts: [1, 2, 300, 70000],
  cursor: { shard: 'eu-west/7', offset: 98765 },
  items: [
    { sku: 'A-1', qty: 2 },
    { sku: 'B-22', qty: 150 },
  ],
  ratio: 0.625,
  blob: gzipSync(utf8('{"inner":"gzip inside protobuf"}')),
  delta: -3,
  weight: 2.5,
};
const batchBytes = (): Uint8Array => Batch.encode(Batch.create(batchValue)).finish();

describe('msgpack', () => {
  it('decodes what @msgpack/msgpack encodes: maps, arrays, binary, big integers, timestamps', () => {
    const bytes = msgpackEncode(
      {
        order: 42,
        lines: [{ sku: 'A-1', qty: 2 }],
        paid: true,
        big: 2n ** 62n,
        raw: new Uint8Array([1, 2, 3]),
        at: new Date('2026-01-02T03:04:05.000Z'),
        none: null,
      },
      { useBigInt64: true },
    );
    const d = run(bytes);
    expect(d.layers).toEqual(['msgpack']);
    expect(d.guessed).toBe(false);
    expect(rows(bytes)).toEqual({
      order: '42',
      lines: '[1]',
      paid: 'true',
      big: String(2n ** 62n),
      raw: '3 bytes 010203',
      at: '2026-01-02T03:04:05.000Z',
      none: 'null',
    });
    expect(rows(bytes, ['lines', '0'])).toEqual({ sku: '"A-1"', qty: '2' });
  });

  it('is not fooled by a cut or a trailing byte', () => {
    const bytes = msgpackEncode({ a: 1, list: [1, 2, 3] });
    expect(run(bytes.subarray(0, bytes.length - 1)).layers).not.toEqual(['msgpack']);
    expect(run(new Uint8Array([...bytes, 0xc0])).layers).not.toEqual(['msgpack']);
  });

  it('refuses an array header that claims more items than there are bytes, at once', () => {
    // 0xdd: array 32 with 2^32-1 items, then nothing.
    const t0 = performance.now();
    expect(run(new Uint8Array([0xdd, 0xff, 0xff, 0xff, 0xff, 0x01])).layers).toEqual([]);
    expect(performance.now() - t0).toBeLessThan(1000);
  });
});

describe('CBOR', () => {
  it('decodes what cborg encodes, with non-string keys, tags and byte strings', () => {
    const bytes = cborEncode({
      order: 42,
      lines: [{ sku: 'A-1', qty: 2 }],
      big: 2n ** 63n,
      raw: new Uint8Array([0xde, 0xad]),
      when: new Tagged(1, 1767322800),
    });
    const d = run(bytes);
    expect(d.layers).toEqual(['cbor']);
    expect(rows(bytes)).toEqual({
      order: '42',
      lines: '[1]',
      big: String(2n ** 63n),
      raw: '2 bytes dead',
      when: 'tag 1',
    });
    expect(rows(bytes, ['when'])).toEqual({ value: '1767322800' });
    // A map keyed by integers (CBOR allows it) stays a map.
    const intKeys = cborEncode(
      new Map<unknown, unknown>([
        [1, 'one'],
        [2, 'two'],
      ]),
      { mapSorter: () => 0 },
    );
    expect(run(intKeys).layers).toEqual(['cbor']);
    expect(rows(intKeys)).toEqual({ 1: '"one"', 2: '"two"' });
  });

  it('keeps a huge big integer as tagged bytes instead of spending minutes on it', () => {
    // Tag 2 over 1 MiB of 0xff: a bigint built byte by byte would cost the square of that.
    const bytes = new Uint8Array(7 + 1024 * 1024);
    bytes.set([0x81, 0xc2, 0x5a, 0x00, 0x10, 0x00, 0x00]);
    bytes.fill(0xff, 7);
    const t0 = performance.now();
    const d = run(bytes);
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(d.layers).toEqual(['cbor']);
    expect(rows(bytes)).toEqual({ 0: 'tag 2' });
  });

  it('tells msgpack and CBOR apart where both parse, and names the other reading', () => {
    // msgpack {a:1,b:2,c:3} starts with 0x83, a 3-item array in CBOR.
    const bytes = msgpackEncode({ a: 1, b: 2, c: 3 });
    const d = run(bytes);
    expect(d.layers).toEqual(['msgpack']);
    const c = run(cborEncode({ alpha: 'x', beta: [1, 2] }));
    expect(c.layers).toEqual(['cbor']);
  });
});

describe('protobuf without a schema', () => {
  it('reads what protobufjs encodes: fields, nested and repeated messages, packed fields, guessed and marked so', () => {
    const bytes = batchBytes();
    const d = run(bytes);
    expect(d.layers).toEqual(['protobuf']);
    expect(d.guessed).toBe(true);
    const page = treePage(doc(bytes), [], 0, 100);
    expect(page.node.type).toBe('message');
    const byKey = Object.fromEntries(page.children.map((c) => [c.key, c]));
    expect(byKey['1']).toMatchObject({ type: 'string', preview: '"batch-0042"', guessed: true });
    expect(byKey['1']!.field).toMatchObject({ no: 1, wire: 'len', as: 'string' });
    expect(byKey['2']).toMatchObject({ type: 'integer', preview: '1234567' });
    expect(byKey['2']!.field).toMatchObject({ wire: 'varint', as: 'uint64' });
    expect(byKey['3']).toMatchObject({ type: 'packed', count: 4 });
    expect(rows(bytes, ['3'])).toEqual({ 0: '1', 1: '2', 2: '300', 3: '70000' });
    expect(byKey['4']).toMatchObject({ type: 'message', count: 2 });
    expect(rows(bytes, ['4'])).toEqual({ 1: '"eu-west/7"', 2: '98765' });
    // Two occurrences of field 5: one repeated node, each item a nested message.
    expect(byKey['5']).toMatchObject({ type: 'repeated', count: 2 });
    expect(rows(bytes, ['5', '1'])).toEqual({ 1: '"B-22"', 2: '150' });
    expect(byKey['6']).toMatchObject({ type: 'number', preview: '0.625' });
    expect(byKey['6']!.field).toMatchObject({ wire: 'fixed64', as: 'double' });
    // The bytes field holds a gzip: unpacked and shown as the JSON inside.
    expect(byKey['7']).toMatchObject({ type: 'object', via: ['gzip', 'json'] });
    expect(rows(bytes, ['7'])).toEqual({ inner: '"gzip inside protobuf"' });
    // sint32 -3 is zigzag 5 on the wire: the unsigned reading first, the zigzag one beside it.
    expect(byKey['8']!.preview).toBe('5');
    expect(byKey['8']!.field!.alt).toContain('sint -3');
    expect(byKey['9']).toMatchObject({ type: 'number', preview: '2.5' });
    expect(byKey['9']!.field).toMatchObject({ wire: 'fixed32', as: 'float' });
  });

  it('does not take the demo binary format or a cut message for protobuf', () => {
    expect(run(new Uint8Array([0x57, 0x4c, 0x44, 0x4d, 1, 0, 0, 1])).layers).toEqual([]);
    const bytes = batchBytes();
    // Cut inside field 2's varint (the first 12 bytes are field 1, "batch-0042").
    expect(run(bytes.subarray(0, 14)).layers).toEqual([]);
  });

  it('shows a message nested past the guessing work as bytes, quickly, and says so', () => {
    let m: Uint8Array = Batch.encode(Batch.create({ id: 'leaf' })).finish();
    const Cursor = protobuf.parse(`syntax = "proto3"; message N { bytes n = 1; }`).root.lookupType('N');
    for (let i = 0; i < 200; i++) m = Cursor.encode(Cursor.create({ n: m })).finish();
    const t0 = performance.now();
    const d = run(m);
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(d.layers).toEqual(['protobuf']);
    let node: unknown = d.value;
    let depth = 0;
    while (node instanceof PbMessage) {
      node = (node.fields[0] as PbField).value;
      depth++;
    }
    // Past the work cap the bytes are not tried as a message (they read as packed varints or
    // bytes), and a note says so.
    expect(depth).toBeGreaterThanOrEqual(10);
    expect(depth).toBeLessThan(MAX_PROTOBUF_DEPTH);
    expect(node instanceof Uint8Array || Array.isArray(node)).toBe(true);
    expect(d.notes.join()).toMatch(/nested fields were not tried as messages \(the work cap/);
  });
});

describe('compression', () => {
  const payloads: Record<string, Uint8Array> = {
    json: utf8(JSON.stringify({ order: 42, note: 'compressed' })),
    msgpack: msgpackEncode({ order: 42, note: 'compressed' }),
    cbor: cborEncode({ order: 42, note: 'compressed' }),
    protobuf: batchBytes(),
    text: utf8('step 3 of 7: 1,204 rows copied\n'),
  };
  const wrappers: Record<string, (b: Uint8Array) => Uint8Array> = {
    gzip: (b) => gzipSync(b),
    deflate: (b) => deflateSync(b),
    'deflate-raw': (b) => deflateRawSync(b),
    brotli: (b) => brotliCompressSync(b),
  };
  for (const [wrapper, wrap] of Object.entries(wrappers)) {
    for (const [format, bytes] of Object.entries(payloads)) {
      it(`unwraps ${wrapper} around ${format}`, () => {
        const d = run(wrap(bytes));
        expect(d.error).toBeUndefined();
        expect(d.layers).toEqual([wrapper, format]);
      });
    }
  }

  it('unwraps layers on layers: base64 text of gzip of msgpack', () => {
    const bytes = utf8(Buffer.from(gzipSync(payloads.msgpack!)).toString('base64'));
    expect(run(bytes).layers).toEqual(['base64', 'gzip', 'msgpack']);
  });

  it('stops a gzip bomb (1 GiB of zeros) at the cap and says so', () => {
    // 16 members of 64 MiB of zeros: one gzip file that expands to 1 GiB, about 1 MiB long.
    const member = gzipBomb(new Uint8Array(64 * 1024 * 1024), { level: 9 });
    const bomb = Buffer.concat(Array.from({ length: 16 }, () => member));
    expect(bomb.length).toBeLessThan(1.1 * 1024 * 1024);
    const budget = new Budget();
    const d = detect(bomb, budget);
    expect(d.layers).toEqual(['gzip']);
    expect(d.error).toMatch(/^gzip expands past 16 MiB, the most the console unpacks for one checkpoint/);
    expect(budget.remaining).toBe(MAX_OUTPUT_BYTES);
  }, 60_000);

  it('stops a brotli bomb, which has no magic bytes, at the cap too', () => {
    // 24 MiB of zeros (past the 16 MiB cap) in a few hundred bytes; quality 5 compresses it fast.
    const bomb = brotliCompressSync(new Uint8Array(24 * 1024 * 1024), {
      params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 5 },
    });
    expect(bomb.length).toBeLessThan(1024);
    const d = run(bomb);
    expect(d.layers).toEqual(['brotli']);
    expect(d.error).toMatch(/^brotli expands past 16 MiB/);
  }, 60_000);

  it('says a corrupt or cut gzip is corrupt', () => {
    const good = gzipSync(payloads.json!);
    const cut = good.subarray(0, good.length - 6);
    expect(run(cut)).toMatchObject({
      layers: ['gzip'],
      error: expect.stringMatching(/^gzip data is corrupt/),
    });
    const flipped = Uint8Array.from(good);
    flipped[12] = flipped[12]! ^ 0xff;
    expect(run(flipped)).toMatchObject({
      layers: ['gzip'],
      error: expect.stringMatching(/^gzip data is corrupt/),
    });
  });
});

describe('base64 inside JSON', () => {
  it('decodes base64 strings recursively and marks them; ordinary strings stay strings', () => {
    const innerMsgpack = Buffer.from(gzipSync(msgpackEncode({ deep: 'yes', n: 7 }))).toString('base64');
    const innerJson = Buffer.from(
      JSON.stringify({ again: Buffer.from('plain text, base64ed').toString('base64') }),
    ).toString('base64url');
    const bytes = utf8(
      JSON.stringify({
        packed: innerMsgpack,
        nested: innerJson,
        id: 'ProcessedItemsXY',
        hex: 'deadbeefdeadbeefdeadbeefdeadbeef',
        short: 'aGk=',
      }),
    );
    const d = doc(bytes);
    const page = treePage(d, [], 0, 100);
    const byKey = Object.fromEntries(page.children.map((c) => [c.key, c]));
    expect(byKey.packed).toMatchObject({ type: 'object', via: ['base64', 'gzip', 'msgpack'], count: 2 });
    expect(byKey.nested).toMatchObject({ type: 'object', via: ['base64', 'json'] });
    expect(byKey.id).toMatchObject({ type: 'string', preview: '"ProcessedItemsXY"' });
    expect(byKey.id!.via).toBeUndefined();
    expect(byKey.hex!.via).toBeUndefined();
    expect(byKey.short!.via).toBeUndefined();
    expect(rows(d, ['packed'])).toEqual({ deep: '"yes"', n: '7' });
    // Recursively: a base64 string inside the decoded JSON is decoded too.
    const again = treePage(d, ['nested'], 0, 10).children[0]!;
    expect(again).toMatchObject({ key: 'again', type: 'string', via: ['base64', 'text'] });
    expect(again.preview).toBe('"plain text, base64ed"');
    // Search reaches into decoded values, and export marks them.
    expect(searchDoc(d, 'deep').matches.map((m) => m.path)).toEqual([['packed', 'deep']]);
    const exported = JSON.parse(exportJson(d, []));
    expect(exported.packed).toEqual({ $decoded: 'base64 → gzip → msgpack', value: { deep: 'yes', n: 7 } });
  });

  it('marks a base64 string whose payload is a bomb with the reason, and goes on', () => {
    const member = gzipBomb(new Uint8Array(32 * 1024 * 1024), { level: 9 });
    const bytes = utf8(JSON.stringify({ bomb: Buffer.from(member).toString('base64'), ok: 1 }));
    const page = treePage(doc(bytes), [], 0, 10);
    expect(page.children[0]).toMatchObject({ key: 'bomb', via: ['base64', 'gzip'] });
    expect(page.children[0]!.error).toMatch(/^gzip expands past/);
    expect(page.children[1]).toMatchObject({ key: 'ok', preview: '1' });
  }, 60_000);
});

describe('deep nesting and garbage', () => {
  it('ends deep nesting in every format as a clear failure, not a stack overflow', () => {
    const n = 100_000;
    const json = utf8(`${'['.repeat(n)}${']'.repeat(n)}`);
    const msgpack = new Uint8Array(n + 1).fill(0x91);
    msgpack[n] = 0xc0;
    const cbor = new Uint8Array(n + 1).fill(0x81);
    cbor[n] = 0xf6;
    for (const [name, bytes] of [
      ['json', json],
      ['msgpack', msgpack],
    ] as const) {
      const d = run(bytes);
      expect(d.layers, name).toEqual([name]);
      expect(d.error, name).toBe(`it nests more than ${MAX_DEPTH} levels deep`);
    }
    // cborg recurses: past the native stack it fails, and the bytes are shown as binary.
    const c = run(cbor);
    expect(c.error === undefined ? c.layers : c.error).toSatisfy(
      (x: unknown) =>
        (Array.isArray(x) && x.length === 0) || x === `it nests more than ${MAX_DEPTH} levels deep`,
    );
    // Within the cap, deep is fine.
    const ok = utf8(`${'['.repeat(200)}1${']'.repeat(200)}`);
    expect(run(ok)).toMatchObject({ layers: ['json'] });
    expect(run(ok).error).toBeUndefined();
  });

  it('never throws on random bytes, and is done quickly', () => {
    let seed = 11;
    const t0 = performance.now();
    for (let n = 0; n < 2000; n++) {
      const len = 1 + (n % 300);
      const bytes = new Uint8Array(len).map(() => {
        seed = (seed * 1103515245 + 12345) & 0x7fffffff;
        return seed >> 16;
      });
      const d = run(bytes);
      expect(Array.isArray(d.layers)).toBe(true);
      if (d.value !== undefined) {
        const dd = new DecodedDoc(d, len);
        treePage(dd, [], 0, 50);
        exportJson(dd, []);
        searchDoc(dd, 'a');
      }
    }
    expect(performance.now() - t0).toBeLessThan(20_000);
  });

  it('shows text as text and binary as binary', () => {
    expect(run(utf8('step 3 of 7\nnext'))).toMatchObject({ layers: ['text'], value: 'step 3 of 7\nnext' });
    expect(run(new Uint8Array([0x57, 0x4c, 0x44, 0x4d, 0x00, 0x01, 0xff, 0xfe]))).toMatchObject({
      layers: [],
    });
    expect(run(new Uint8Array(0))).toMatchObject({ layers: [] });
  });
});

describe('the tree, by path', () => {
  const big = {
    orders: Array.from({ length: 5000 }, (_, i) => ({ id: i, sku: `SKU-${i}` })),
    'a/b': { '~x': 1 },
    meta: { when: 'now' },
  };
  const d = doc(utf8(JSON.stringify(big)));

  it('serves children a page at a time, with each key’s position on the way', () => {
    const root = treePage(d, [], 0, 200);
    expect(root.node).toMatchObject({ type: 'object', count: 3 });
    const orders = treePage(d, ['orders'], 4800, 200);
    expect(orders.node).toMatchObject({ key: 'orders', type: 'array', count: 5000 });
    expect(orders.children).toHaveLength(200);
    expect(orders.children[0]).toMatchObject({ key: '4800', type: 'object', count: 2, preview: '{2}' });
    expect(treePage(d, ['orders', '4999'], 0, 10).trail).toEqual([0, 4999]);
    expect(treePage(d, ['a/b', '~x'], 0, 10).node).toMatchObject({ key: '~x', preview: '1' });
    expect(() => treePage(d, ['orders', '5000'], 0, 10)).toThrow(/no node \/orders\/5000/);
    expect(() => treePage(d, ['meta', 'nope'], 0, 10)).toThrow(/no node \/meta\/nope/);
  });

  it('searches keys and values, and stops at the limit', () => {
    const r = searchDoc(d, 'sku-4999');
    expect(r.matches).toEqual([{ path: ['orders', '4999', 'sku'], type: 'string', preview: '"SKU-4999"' }]);
    const many = searchDoc(d, 'sku', 50);
    expect(many.matches).toHaveLength(50);
    expect(many.truncated).toBe(true);
    // A clock that jumps: the time cap stops the walk.
    let t = 0;
    const slow = searchDoc(d, 'zzz', 200, () => (t += 600));
    expect(slow.truncated).toBe(true);
  });

  it('exports plain JSON exactly as JSON.stringify indents it', () => {
    expect(exportJson(d, [])).toBe(JSON.stringify(big, null, 2));
    expect(exportJson(d, ['orders', '7'])).toBe(JSON.stringify(big.orders[7], null, 2));
  });
});
