/**
 * The demo fleet's checkpoints in the binary formats the console decodes, each written by a real
 * encoder: msgpack (@msgpack/msgpack), CBOR (cborg), protobuf (@bufbuild/protobuf's wire writer)
 * wrapped in gzip, a JSON envelope carrying base64 of gzip'd msgpack, and a 2 MiB JSON export.
 * Every one of them carries the worker's progress, read back by {@link readProgress} when another
 * worker takes the item over.
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { decode as msgpackDecode, encode as msgpackEncode } from '@msgpack/msgpack';
import { decode as cborDecode, encode as cborEncode } from 'cborg';

export type BinaryFormat = 'msgpack' | 'cbor' | 'protobuf-gzip' | 'envelope' | 'export';

export interface Progress {
  processed: number;
  target: number;
  run: number;
}

/** Size of the `export` checkpoint: past 2 MiB, what the console must still show as a tree. */
export const EXPORT_BYTES = Math.round(2.2 * 1024 * 1024);

function progressRecord(p: Progress, holderId: string, batch: number) {
  return {
    processed: p.processed,
    target: p.target,
    run: p.run,
    cursor: { shard: `eu-west/${p.run % 8}`, offset: p.processed * 4096 },
    lastBatch: Array.from({ length: batch }, (_, i) => p.processed - batch + i + 1),
    worker: holderId,
    savedAt: new Date(),
  };
}

/**
 * Protobuf, schema `Progress { uint32 processed = 1; uint32 target = 2; uint32 run = 3;
 * Cursor cursor = 4; repeated uint32 last_batch = 5 [packed]; string worker = 6;
 * double saved_at = 7; }` with `Cursor { string shard = 1; uint64 offset = 2; }`.
 */
function protobufProgress(p: Progress, holderId: string, batch: number): Uint8Array {
  const w = new BinaryWriter();
  w.tag(1, WireType.Varint).uint32(p.processed);
  w.tag(2, WireType.Varint).uint32(p.target);
  w.tag(3, WireType.Varint).uint32(p.run);
  w.tag(4, WireType.LengthDelimited)
    .fork()
    .tag(1, WireType.LengthDelimited)
    .string(`eu-west/${p.run % 8}`)
    .tag(2, WireType.Varint)
    .uint64(p.processed * 4096)
    .join();
  w.tag(5, WireType.LengthDelimited).fork();
  for (let i = 0; i < batch; i++) w.uint32(p.processed - batch + i + 1);
  w.join();
  w.tag(6, WireType.LengthDelimited).string(holderId);
  w.tag(7, WireType.Bit64).double(Date.now() / 1000);
  return w.finish();
}

/** The rows of the export, made once: each save rewrites only the fields around them. */
let exportRows: unknown[] | null = null;

function exportDoc(p: Progress, holderId: string): Uint8Array {
  if (exportRows === null) {
    const rows: unknown[] = [];
    let size = 0;
    for (let i = 0; size < EXPORT_BYTES; i++) {
      const row = {
        id: i,
        sku: `SKU-${String(i).padStart(6, '0')}`,
        qty: (i * 7) % 13,
        region: ['eu-west', 'us-east', 'ap-south'][i % 3],
        note: i % 50 === 0 ? `checked by ${['alice', 'bob', 'carol'][i % 3]}` : null,
      };
      size += JSON.stringify(row).length + 1;
      rows.push(row);
    }
    exportRows = rows;
  }
  const doc = {
    processed: p.processed,
    target: p.target,
    run: p.run,
    worker: holderId,
    savedAt: new Date().toISOString(),
    rows: exportRows,
  };
  return new TextEncoder().encode(JSON.stringify(doc));
}

export function encodeBinary(format: BinaryFormat, p: Progress, holderId: string, batch: number): Uint8Array {
  switch (format) {
    case 'msgpack':
      return msgpackEncode(progressRecord(p, holderId, batch));
    case 'cbor': {
      const { savedAt, ...rest } = progressRecord(p, holderId, batch);
      return cborEncode({ ...rest, savedAt: savedAt.toISOString() });
    }
    case 'protobuf-gzip':
      return new Uint8Array(gzipSync(protobufProgress(p, holderId, batch)));
    case 'envelope': {
      const body = gzipSync(msgpackEncode(progressRecord(p, holderId, batch)));
      const envelope = {
        type: 'progress',
        encoding: 'msgpack+gzip',
        processed: p.processed,
        target: p.target,
        run: p.run,
        body: body.toString('base64'),
      };
      return new TextEncoder().encode(JSON.stringify(envelope));
    }
    case 'export':
      return exportDoc(p, holderId);
  }
}

function asProgress(v: unknown): Progress | null {
  if (v === null || typeof v !== 'object') return null;
  const o = v as Record<string, unknown>;
  const n = (k: string) => (typeof o[k] === 'number' ? (o[k] as number) : null);
  const processed = n('processed');
  const target = n('target');
  const run = n('run');
  return processed === null || target === null || run === null ? null : { processed, target, run };
}

/** The progress a checkpoint of `format` carries; null when it is not one. */
export function readProgress(format: BinaryFormat, state: Uint8Array): Progress | null {
  try {
    switch (format) {
      case 'msgpack':
        return asProgress(msgpackDecode(state));
      case 'cbor':
        return asProgress(cborDecode(state));
      case 'envelope':
      case 'export':
        return asProgress(JSON.parse(new TextDecoder().decode(state)));
      case 'protobuf-gzip': {
        const r = new BinaryReader(gunzipSync(state));
        const p: Partial<Progress> = {};
        while (r.pos < r.len) {
          const [no, wire] = r.tag();
          if (wire === WireType.Varint && no >= 1 && no <= 3) {
            const v = r.uint32();
            if (no === 1) p.processed = v;
            else if (no === 2) p.target = v;
            else p.run = v;
          } else {
            r.skip(wire);
          }
        }
        return asProgress(p);
      }
    }
  } catch {
    return null;
  }
}
