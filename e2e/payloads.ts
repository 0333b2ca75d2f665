/**
 * Checkpoints for the decoded views, each made by its format's own encoder: shared by the
 * end-to-end test of the viewer and the accessibility table's screens.
 */
import protobuf from 'protobufjs';

const Batch = protobuf
  .parse(`syntax = "proto3";
    message Cursor { string shard = 1; int64 offset = 2; }
    message Batch { string id = 1; uint64 processed = 2; repeated int32 counts = 3; Cursor cursor = 4; double ratio = 6; }`)
  .root.lookupType('Batch');

/** A protobuf message with a nested message and a packed field, as protobufjs writes it. */
export function protoBatch(): Uint8Array {
  const value = {
    id: 'batch-0042',
    processed: 1234567,
    counts: [1, 2, 300],
    cursor: { shard: 'eu-west/7', offset: 98765 },
    ratio: 0.625,
  };
  return Batch.encode(Batch.create(value)).finish();
}

/** 2.2 MiB of JSON: past the 2 MiB the console must show as a tree without loading it all. */
export function bigExport(): { tag: string; rows: Array<{ id: number; sku: string; qty: number }> } {
  return {
    tag: 'export',
    rows: Array.from({ length: 52_000 }, (_, i) => ({
      id: i,
      sku: `SKU-${String(i).padStart(6, '0')}`,
      qty: i % 13,
    })),
  };
}
