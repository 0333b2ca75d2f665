/**
 * The decoded checkpoint tree as the rows on screen: the server sends a node's children 200 at
 * a time (`checkpoint.decode`), and this turns the expanded nodes, the pages each shows (its
 * window) and the pages loaded so far into one flat list of rows with their ARIA level, position
 * and set size, plus the pages those rows need. No DOM here: tested in Node.
 */
import { DECODED_PAGE, type DecodedNode } from '../../../src/console/common/index.ts';
import { childPointer } from './pointer.ts';

/** A node's shown pages, by index (page p holds children p·200 … p·200+199). */
export interface PageWindow {
  first: number;
  last: number;
}

export type TreeRow =
  | {
      kind: 'node';
      /** The node's JSON Pointer ('' for the root). */
      id: string;
      node: DecodedNode;
      level: number;
      posinset: number;
      setsize: number;
      parent: string | null;
      expanded: boolean;
    }
  | {
      /** "Show 200 earlier / more": widens the parent's window. */
      kind: 'more';
      id: string;
      parent: string;
      level: number;
      direction: 'earlier' | 'later';
      /** Children on that side not shown yet. */
      left: number;
    }
  | { kind: 'loading'; id: string; parent: string; level: number };

export interface PageRef {
  pointer: string;
  page: number;
}

export function pageOf(index: number): number {
  return Math.floor(index / DECODED_PAGE);
}

/**
 * The rows of the tree under `root`. `pageData(pointer, page)` gives a loaded page's children
 * (undefined while it loads). Returns the rows and every page they show or wait for.
 */
export function treeRows(
  root: DecodedNode,
  /** Whether a node shows its children (`level` 1 is the root; `siblings`, its parent's child count). */
  isOpen: (pointer: string, node: DecodedNode, level: number, siblings: number) => boolean,
  windows: ReadonlyMap<string, PageWindow>,
  pageData: (pointer: string, page: number) => DecodedNode[] | undefined,
): { rows: TreeRow[]; pages: PageRef[] } {
  const rows: TreeRow[] = [];
  const pages: PageRef[] = [];
  const open = (pointer: string, node: DecodedNode, level: number, siblings: number) =>
    node.count > 0 && isOpen(pointer, node, level, siblings);
  const children = (parent: string, count: number, level: number): void => {
    const w = windows.get(parent) ?? { first: 0, last: 0 };
    const lastPage = Math.max(0, pageOf(count - 1));
    const first = Math.min(w.first, lastPage);
    const last = Math.min(Math.max(w.last, first), lastPage);
    if (first > 0) {
      rows.push({
        kind: 'more',
        id: `${parent}\u0000earlier`,
        parent,
        level,
        direction: 'earlier',
        left: first * DECODED_PAGE,
      });
    }
    for (let page = first; page <= last; page++) {
      pages.push({ pointer: parent, page });
      const data = pageData(parent, page);
      if (data === undefined) {
        rows.push({ kind: 'loading', id: `${parent}\u0000loading${page}`, parent, level });
        continue;
      }
      data.forEach((node, i) => {
        const id = childPointer(parent, node.key);
        const expandedHere = open(id, node, level, count);
        rows.push({
          kind: 'node',
          id,
          node,
          level,
          posinset: page * DECODED_PAGE + i + 1,
          setsize: count,
          parent,
          expanded: expandedHere,
        });
        if (expandedHere) children(id, node.count, level + 1);
      });
    }
    const shown = (last + 1) * DECODED_PAGE;
    if (shown < count) {
      rows.push({
        kind: 'more',
        id: `${parent}\u0000later`,
        parent,
        level,
        direction: 'later',
        left: count - shown,
      });
    }
  };
  const rootOpen = open('', root, 1, 1);
  rows.push({
    kind: 'node',
    id: '',
    node: root,
    level: 1,
    posinset: 1,
    setsize: 1,
    parent: null,
    expanded: rootOpen,
  });
  if (rootOpen) children('', root.count, 2);
  return { rows, pages };
}

/** The window after a "show more" row: one page wider on its side. */
export function widen(w: PageWindow | undefined, direction: 'earlier' | 'later'): PageWindow {
  const cur = w ?? { first: 0, last: 0 };
  return direction === 'earlier'
    ? { first: Math.max(0, cur.first - 1), last: cur.last }
    : { first: cur.first, last: cur.last + 1 };
}

/**
 * What to expand, and which page of each ancestor to show, so that the node at `path` is a row:
 * `trail[i]` is the position of `path[i]` among its parent's children (from `checkpoint.decode`).
 */
export function revealSteps(
  path: readonly string[],
  trail: readonly number[],
): Array<{ pointer: string; page: number }> {
  const steps: Array<{ pointer: string; page: number }> = [];
  let pointer = '';
  path.forEach((key, i) => {
    steps.push({ pointer, page: pageOf(trail[i] ?? 0) });
    pointer = childPointer(pointer, key);
  });
  return steps;
}
