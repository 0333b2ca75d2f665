/**
 * A decoded checkpoint as a tree (the WAI-ARIA tree pattern), loaded from the server 200
 * children at a time: nothing is loaded before a node is opened, so a 2 MiB JSON shows its first
 * level as fast as a small one. Keys: ↑ ↓ move, → opens (then goes to the first child), ← closes
 * (then goes to the parent), Home / End, Enter or Space open and close (or show more); the
 * selected node's path is in the address (`cp`), and its path and value can be copied.
 */
import { useQueries, useQueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import {
  DECODED_PAGE,
  type DecodedNode,
  type DecodedTree as Tree,
  visible,
} from '../../../src/console/common/index.ts';
import { keys } from '../../api/queries.ts';
import { CopyButton } from '../../app/CopyButton.tsx';
import { useServices } from '../../app/context.tsx';
import { ErrorNotice } from '../../app/ui.tsx';
import { exportAll } from './checkpoint-export.ts';
import { childPointer, fromPointer } from './pointer.ts';
import { type PageWindow, revealSteps, type TreeRow, treeRows, widen } from './tree-rows.ts';

export interface TreeSource {
  connectionId: string;
  workId: string;
  /** The decoding's id (`checkpoint.decode`). */
  id: string;
}

/** The query key of one page of a node's children. */
export function pageKey(src: TreeSource, pointer: string, page: number) {
  return [...keys.checkpoint(src.connectionId, src.workId, 'decoded'), src.id, pointer, page] as const;
}

/** Under a root of at most this many children, containers this small, among as few siblings, open down to level 3. */
const OPEN_SMALL_UNDER = 10;

export function DecodedTree({
  src,
  root,
  selected,
  onSelect,
  reveal,
}: {
  src: TreeSource;
  /** The first answer: the root and its first page of children. */
  root: Tree;
  /** The selected node's pointer (from the address). */
  selected: string;
  onSelect: (pointer: string) => void;
  /** A path to bring into view and select (a search result, or the address on load); a new array each time. */
  reveal: string[] | null;
}) {
  const { client } = useServices();
  const queryClient = useQueryClient();
  const rootNode = root.node!;
  // What the operator opened or closed; the rest follows the default (isOpen below).
  const [toggled, setToggled] = useState<ReadonlyMap<string, boolean>>(new Map());
  // A small checkpoint reads like a record: its first levels open by themselves (never the
  // items of a long list).
  const small = rootNode.count <= OPEN_SMALL_UNDER;
  const isOpen = (pointer: string, node: DecodedNode, level: number, siblings: number) =>
    toggled.get(pointer) ??
    (level === 1 || (small && level <= 3 && node.count <= OPEN_SMALL_UNDER && siblings <= OPEN_SMALL_UNDER));
  const [windows, setWindows] = useState<ReadonlyMap<string, PageWindow>>(new Map());
  const [focused, setFocused] = useState<string>(selected);
  const rowEls = useRef(new Map<string, HTMLDivElement>());
  const focusPending = useRef(false);

  const pageData = (pointer: string, page: number) =>
    queryClient.getQueryData<DecodedNode[]>(pageKey(src, pointer, page));
  const { rows, pages } = treeRows(rootNode, isOpen, windows, (p, n) =>
    p === '' && n === 0 ? root.children : pageData(p, n),
  );
  // Subscribes to every page the rows show, and loads the missing ones (page 0 of the root came
  // with the first answer).
  const loaded = useQueries({
    queries: pages.map(({ pointer, page }) => ({
      queryKey: pageKey(src, pointer, page),
      ...(pointer === '' && page === 0 ? { initialData: root.children } : {}),
      queryFn: async () => {
        const res = await client.call('checkpoint.decode', {
          connectionId: src.connectionId,
          workId: src.workId,
          id: src.id,
          path: fromPointer(pointer) ?? [],
          offset: page * DECODED_PAGE,
          limit: DECODED_PAGE,
        });
        return res?.children ?? [];
      },
      staleTime: Number.POSITIVE_INFINITY,
    })),
  });
  const index = useMemo(() => new Map(rows.map((r, i) => [r.id, i])), [rows]);
  const failed = loaded.find((q) => q.error !== null)?.error ?? null;

  const onSelectRef = useRef(onSelect);
  onSelectRef.current = onSelect;
  const focusRow = useCallback((id: string, select = true) => {
    setFocused(id);
    focusPending.current = true;
    if (select && !id.includes('\u0000')) onSelectRef.current(id);
  }, []);
  useEffect(() => {
    if (!focusPending.current) return;
    const el = rowEls.current.get(focused);
    if (el === undefined) return;
    focusPending.current = false;
    el.focus({ preventScroll: true });
    el.scrollIntoView({ block: 'nearest' });
  });

  // Bring a path into view: its ancestors open, each on the page that holds it. Only a new path
  // runs this again (a new array each time).
  // biome-ignore lint/correctness/useExhaustiveDependencies: client and src stay for the tree's life (it is keyed by the decoding); focusRow is stable
  useEffect(() => {
    if (reveal === null) return;
    let cancelled = false;
    void (async () => {
      const res = await client
        .call('checkpoint.decode', {
          connectionId: src.connectionId,
          workId: src.workId,
          id: src.id,
          path: reveal,
          limit: 1,
        })
        .catch(() => null);
      if (cancelled || res === null) return;
      const steps = revealSteps(reveal, res.trail);
      setToggled((prev) => {
        const next = new Map(prev);
        for (const s of steps) next.set(s.pointer, true);
        return next;
      });
      setWindows((prev) => {
        const next = new Map(prev);
        for (const s of steps) {
          const w = next.get(s.pointer) ?? { first: 0, last: 0 };
          if (s.page < w.first || s.page > w.last) next.set(s.pointer, { first: s.page, last: s.page });
        }
        return next;
      });
      focusRow(steps.length === 0 ? '' : childPointer(steps.at(-1)!.pointer, reveal.at(-1)!));
    })();
    return () => {
      cancelled = true;
    };
  }, [reveal]);

  const toggle = (row: Extract<TreeRow, { kind: 'node' }>, open: boolean) => {
    setToggled((prev) => new Map(prev).set(row.id, open));
  };
  const showMore = (row: Extract<TreeRow, { kind: 'more' }>) => {
    setWindows((prev) => new Map(prev).set(row.parent, widen(prev.get(row.parent), row.direction)));
  };
  const activate = (row: TreeRow) => {
    if (row.kind === 'node' && row.node.count > 0) toggle(row, !row.expanded);
    else if (row.kind === 'more') showMore(row);
  };

  const onKeyDown = (e: React.KeyboardEvent<HTMLDivElement>) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const at = index.get(focused) ?? 0;
    const row = rows[at];
    if (row === undefined) return;
    const go = (i: number) => {
      const target = rows[Math.max(0, Math.min(rows.length - 1, i))];
      if (target !== undefined) focusRow(target.id);
    };
    switch (e.key) {
      case 'ArrowDown':
        go(at + 1);
        break;
      case 'ArrowUp':
        go(at - 1);
        break;
      case 'Home':
        go(0);
        break;
      case 'End':
        go(rows.length - 1);
        break;
      case 'ArrowRight':
        if (row.kind === 'node' && row.node.count > 0) {
          if (!row.expanded) toggle(row, true);
          else go(at + 1);
        }
        break;
      case 'ArrowLeft':
        if (row.kind === 'node' && row.expanded) toggle(row, false);
        else if (row.parent !== null) focusRow(row.parent);
        break;
      case 'Enter':
      case ' ':
        activate(row);
        break;
      default:
        return;
    }
    e.preventDefault();
    e.stopPropagation();
  };

  // The focused row may have gone (its parent closed): the nearest existing ancestor takes over.
  const focusedRow = index.has(focused) ? focused : nearest(focused, index);

  const chosen = rows.find((r) => r.kind === 'node' && r.id === selected);
  return (
    <>
      <SelectedBar src={src} pointer={selected} row={chosen?.kind === 'node' ? chosen : undefined} />
      {failed !== null && <ErrorNotice error={failed} />}
      <div className="dtree" role="tree" aria-label="Decoded checkpoint">
        {rows.map((row) => (
          <div
            key={row.id}
            ref={(el) => {
              if (el === null) rowEls.current.delete(row.id);
              else rowEls.current.set(row.id, el);
            }}
            role="treeitem"
            tabIndex={row.id === focusedRow ? 0 : -1}
            aria-level={row.level}
            aria-selected={row.kind === 'node' ? row.id === selected : undefined}
            aria-expanded={row.kind === 'node' && row.node.count > 0 ? row.expanded : undefined}
            aria-posinset={row.kind === 'node' ? row.posinset : undefined}
            aria-setsize={row.kind === 'node' ? row.setsize : undefined}
            className={`dtree-row${row.kind === 'node' && row.id === selected ? ' on' : ''}${row.kind === 'node' ? '' : ' dtree-more'}`}
            style={{ paddingLeft: `${(row.level - 1) * 14 + 4}px` }}
            onClick={() => {
              focusRow(row.id);
              if (row.kind === 'more') showMore(row);
            }}
            onDoubleClick={() => activate(row)}
            onKeyDown={onKeyDown}
          >
            {row.kind === 'node' ? (
              <NodeLine row={row} onToggle={() => toggle(row, !row.expanded)} />
            ) : row.kind === 'more' ? (
              <span>
                {row.direction === 'earlier' ? 'Show earlier' : 'Show more'}{' '}
                <span className="muted">
                  ({row.left.toLocaleString()} {row.direction === 'earlier' ? 'before' : 'left'})
                </span>
              </span>
            ) : (
              <span className="muted">Loading…</span>
            )}
          </div>
        ))}
      </div>
    </>
  );
}

/** The selected node: its path, how it was read, and copy buttons for its path and its value. */
function SelectedBar({
  src,
  pointer,
  row,
}: {
  src: TreeSource;
  pointer: string;
  row: Extract<TreeRow, { kind: 'node' }> | undefined;
}) {
  const { client } = useServices();
  const n = row?.node;
  const whole = n !== undefined && n.count === 0 && !n.truncated && n.via === undefined;
  return (
    <div className="dtree-bar">
      <span className="muted">Path</span>{' '}
      <code className="mono">{visible(pointer === '' ? '/' : pointer)}</code>{' '}
      {n?.field !== undefined && (
        <span className="muted">
          field {n.field.no}, {n.field.wire} read as {n.field.as}
          {n.field.alt === '' ? '' : ` · also reads as ${n.field.alt}`}
        </span>
      )}
      <span className="copy-group">
        <CopyButton
          text={pointer === '' ? '/' : pointer}
          what="path of the selected node (JSON Pointer)"
          label="Copy path"
        />
        <CopyButton
          label="Copy value"
          what="of the selected node"
          text={async () => {
            // A whole scalar is in its preview; anything else comes from the server as JSON.
            if (whole && n !== undefined)
              return n.type === 'string' ? (JSON.parse(n.preview) as string) : n.preview;
            return (await exportAll(client, src, 'json', fromPointer(pointer) ?? [])) as string;
          }}
        />
      </span>
    </div>
  );
}

function nearest(pointer: string, index: ReadonlyMap<string, number>): string {
  let p = pointer;
  while (p !== '' && !index.has(p)) p = p.slice(0, p.lastIndexOf('/'));
  return p;
}

function NodeLine({ row, onToggle }: { row: Extract<TreeRow, { kind: 'node' }>; onToggle: () => void }) {
  const n = row.node;
  const container = n.count > 0;
  return (
    <>
      <span
        className="dtree-twisty"
        aria-hidden="true"
        onClick={(e) => {
          e.stopPropagation();
          if (container) onToggle();
        }}
      >
        {container ? (row.expanded ? '▾' : '▸') : ''}
      </span>
      {/* Keys and strings are the holder's bytes: bidi and zero-width characters are shown escaped. */}
      <span className="json-key">{row.id === '' ? 'root' : visible(n.key)}</span>
      <span className="muted">: </span>
      <span className={`dtree-value t-${n.type}`}>{visible(n.preview)}</span>
      {/* The spaces keep the row's accessible name readable ("4: {2} len message guessed"). */}
      {n.field !== undefined && (
        <>
          {' '}
          <span
            className="dtree-tag"
            title={`protobuf field ${n.field.no}: ${n.field.wire} read as ${n.field.as}`}
          >
            {n.field.wire} {n.field.as}
          </span>
        </>
      )}
      {n.via !== undefined && (
        <>
          {' '}
          <span className="dtree-tag decoded" title={`decoded from ${n.via.join(' → ')}`}>
            {n.via.join(' → ')}
          </span>
        </>
      )}
      {n.guessed && (
        <>
          {' '}
          <span className="dtree-tag guessed" title="protobuf without a schema: field types are a guess">
            guessed
          </span>
        </>
      )}
      {n.error !== undefined && <span className="dtree-error"> could not decode: {visible(n.error)}</span>}
    </>
  );
}
