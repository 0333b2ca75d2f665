import { describe, expect, it } from 'vitest';
import { revealSteps, type TreeRow, treeRows, widen } from '../../renderer/features/detail/tree-rows.ts';
import type { DecodedNode } from '../../src/console/api.ts';

const node = (key: string, count = 0): DecodedNode => ({
  key,
  type: count > 0 ? 'array' : 'number',
  count,
  preview: count > 0 ? `[${count}]` : key,
  truncated: count > 0,
  size: null,
  guessed: false,
});
/** A root with one array `items` of `n` numbers; pages are answered from it. */
function fleet(n: number) {
  const root = node('', 1);
  const data = (pointer: string, page: number): DecodedNode[] | undefined => {
    if (pointer === '') return page === 0 ? [node('items', n)] : [];
    if (pointer === '/items') {
      const from = page * 200;
      return Array.from({ length: Math.max(0, Math.min(200, n - from)) }, (_, i) => node(String(from + i)));
    }
    return undefined;
  };
  return { root, data };
}
const inSet = (open: string[]) => (pointer: string) => new Set(open).has(pointer);
const ids = (rows: TreeRow[]) =>
  rows.map((r) => (r.kind === 'node' ? r.id : `${r.kind}:${r.id.split('\u0000')[1]}`));

describe('decoded tree rows', () => {
  it('shows the root, and a node’s children a page at a time with a "more" row', () => {
    const { root, data } = fleet(450);
    const collapsed = treeRows(root, inSet(['']), new Map(), data);
    expect(ids(collapsed.rows)).toEqual(['', '/items']);
    const open = treeRows(root, inSet(['', '/items']), new Map(), data);
    expect(open.rows).toHaveLength(2 + 200 + 1);
    expect(open.rows[2]).toMatchObject({ kind: 'node', id: '/items/0', level: 3, posinset: 1, setsize: 450 });
    expect(open.rows.at(-1)).toMatchObject({ kind: 'more', direction: 'later', left: 250 });
    expect(open.pages).toEqual([
      { pointer: '', page: 0 },
      { pointer: '/items', page: 0 },
    ]);
    const wider = treeRows(
      root,
      inSet(['', '/items']),
      new Map([['/items', widen(undefined, 'later')]]),
      data,
    );
    expect(wider.rows.at(-1)).toMatchObject({ kind: 'more', left: 50 });
    const all = treeRows(root, inSet(['', '/items']), new Map([['/items', { first: 0, last: 2 }]]), data);
    expect(all.rows.filter((r) => r.kind === 'more')).toEqual([]);
    expect(all.rows.at(-1)).toMatchObject({ id: '/items/449', posinset: 450 });
  });

  it('reveals a deep node: the page that holds it, with "earlier" above', () => {
    const { root, data } = fleet(5000);
    const steps = revealSteps(['items', '4321'], [0, 4321]);
    expect(steps).toEqual([
      { pointer: '', page: 0 },
      { pointer: '/items', page: 21 },
    ]);
    const windows = new Map(steps.map((s) => [s.pointer, { first: s.page, last: s.page }]));
    const { rows } = treeRows(root, inSet(['', '/items']), windows, data);
    expect(rows[2]).toMatchObject({ kind: 'more', direction: 'earlier', left: 4200 });
    expect(rows.some((r) => r.id === '/items/4321')).toBe(true);
    expect(rows.at(-1)).toMatchObject({ kind: 'more', direction: 'later', left: 5000 - 4400 });
  });

  it('marks pages still loading', () => {
    const { root } = fleet(10);
    const { rows, pages } = treeRows(root, inSet(['']), new Map(), () => undefined);
    expect(rows.map((r) => r.kind)).toEqual(['node', 'loading']);
    expect(pages).toEqual([{ pointer: '', page: 0 }]);
  });
});
