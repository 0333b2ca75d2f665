import { describe, expect, it } from 'vitest';
import { diffValues } from '../../renderer/features/detail/diff.ts';

describe('the diff of two decoded checkpoints', () => {
  it('lists what was added, removed and changed, by path, in document order', () => {
    const atHandoff = {
      processed: 40,
      cursor: { shard: 'eu-west/7', offset: 163840 },
      lastBatch: [38, 39, 40],
      worker: 'w-1',
    };
    const now = {
      processed: 43,
      cursor: { shard: 'eu-west/7', offset: 176128 },
      lastBatch: [41, 42],
      worker: 'w-2',
      retried: true,
    };
    expect(diffValues(atHandoff, now)).toEqual({
      truncated: false,
      changes: [
        { path: '/processed', kind: 'changed', before: '40', after: '43' },
        { path: '/cursor/offset', kind: 'changed', before: '163840', after: '176128' },
        { path: '/lastBatch/0', kind: 'changed', before: '38', after: '41' },
        { path: '/lastBatch/1', kind: 'changed', before: '39', after: '42' },
        { path: '/lastBatch/2', kind: 'removed', before: '40' },
        { path: '/worker', kind: 'changed', before: '"w-1"', after: '"w-2"' },
        { path: '/retried', kind: 'added', after: 'true' },
      ],
    });
  });

  it('says nothing changed for equal payloads, and caps a large diff', () => {
    const a = { rows: Array.from({ length: 1000 }, (_, i) => ({ i })) };
    expect(diffValues(a, structuredClone(a))).toEqual({ changes: [], truncated: false });
    const b = { rows: a.rows.map((r) => ({ i: r.i + 1 })) };
    const d = diffValues(a, b, 50);
    expect(d.truncated).toBe(true);
    expect(d.changes).toHaveLength(50);
    expect(d.changes[0]).toEqual({ path: '/rows/0/i', kind: 'changed', before: '0', after: '1' });
    // A type change is a change of the whole value.
    expect(diffValues({ a: [1] }, { a: { 0: 1 } }).changes).toEqual([
      { path: '/a', kind: 'changed', before: '[1]', after: '{"0":1}' },
    ]);
  });
});
