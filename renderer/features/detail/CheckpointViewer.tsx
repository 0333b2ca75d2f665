/**
 * A lease's checkpoint, decoded on the console server (`checkpoint.decode`): JSON, msgpack, CBOR
 * and protobuf (guessed, and marked so) as a tree loaded by path, gzip / deflate / brotli and
 * base64 unwrapped, also inside strings; as pretty JSON; as the decoded text; or as the stored
 * bytes in text and hex pages (`checkpoint.read`, 64 KiB at a time behind "Load more"). What the
 * console could not decode says why, and its hex is still there. The view and the selected node
 * are in the address (`cv`, `cp`), so a decoded view is a link; the decoded JSON and the raw
 * bytes download. A newer checkpoint is offered, not swapped in under the reader's eyes.
 */
import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { useId, useMemo, useState } from 'react';
import type {
  CheckpointPage,
  ConnectionInfo,
  DecodedTree as Decoded,
  LeaseRow,
} from '../../../src/console/common/index.ts';
import { visible } from '../../../src/console/common/index.ts';
import { keys } from '../../api/queries.ts';
import { CopyButton } from '../../app/CopyButton.tsx';
import { useServices } from '../../app/context.tsx';
import { navigate, useRoute } from '../../app/router.ts';
import { withQuery } from '../../app/routes.ts';
import { ErrorNotice } from '../../app/ui.tsx';
import { base64ToBytes, bytesToBase64, bytesToHex, formatBytes, hexDump } from '../../lib/format.ts';
import { downloadDecoded, downloadRaw } from './checkpoint-export.ts';
import { DecodedTree, type TreeSource } from './DecodedTree.tsx';
import { fromPointer, toPointer } from './pointer.ts';

const PAGE = 64 * 1024;
type Mode = 'tree' | 'json' | 'decoded' | 'text' | 'hex';
const LABELS: Record<Mode, string> = {
  tree: 'Tree',
  json: 'Pretty JSON',
  decoded: 'Decoded text',
  text: 'Text',
  hex: 'Hex',
};
const MODES = Object.keys(LABELS) as Mode[];

/** Which views a decoding offers, the first being the one shown by default. */
export function modesFor(d: Decoded | null | undefined): Mode[] {
  if (d === null || d === undefined || d.node === null) return ['hex', 'text'];
  if (d.node.type === 'string') return d.layers.length > 1 ? ['decoded', 'hex'] : ['text', 'hex'];
  return d.layers.length === 1 && d.layers[0] === 'json'
    ? ['tree', 'json', 'text', 'hex']
    : ['tree', 'json', 'hex'];
}

/** "gzip → protobuf (guessed)", "JSON", "binary". */
export function formatLine(d: Decoded): string {
  if (d.layers.length === 0) return d.size === 0 || d.size === null ? 'empty' : 'binary';
  const names = d.layers.map((l) => (l === 'json' ? 'JSON' : l === 'cbor' ? 'CBOR' : l));
  return `${names.join(' → ')}${d.guessed ? ' (guessed)' : ''}`;
}

export function CheckpointViewer({ connection, row }: { connection: ConnectionInfo; row: LeaseRow }) {
  const { client } = useServices();
  const route = useRoute();
  const [loadedAt, setLoadedAt] = useState(row.checkpointedAt);
  const base = [...keys.checkpoint(connection.id, row.workId, row.fencingToken), loadedAt] as const;
  const decoded = useQuery({
    queryKey: [...base, 'decoded'],
    queryFn: () => client.call('checkpoint.decode', { connectionId: connection.id, workId: row.workId }),
    staleTime: Number.POSITIVE_INFINITY,
  });
  const d = decoded.data;
  const modes = modesFor(d);
  const asked = route.query.cv as Mode | undefined;
  const mode: Mode = asked !== undefined && modes.includes(asked) ? asked : modes[0]!;
  const raw = mode === 'text' || mode === 'hex';
  const name = useId();
  const src: TreeSource | null =
    d == null ? null : { connectionId: connection.id, workId: row.workId, id: d.id };
  const selected = route.query.cp ?? '';
  // The address's node is brought into view once, when the tree first shows; search results later.
  const [reveal, setReveal] = useState<string[] | null>(() => {
    const path = fromPointer(selected);
    return path !== null && path.length > 0 ? path : null;
  });
  const setQuery = (changes: Record<string, string | undefined>) =>
    navigate(withQuery(route, changes), 'replace');

  if (decoded.error !== null) return <ErrorNotice error={decoded.error} />;
  if (decoded.isLoading) return <p className="muted">Decoding the checkpoint…</p>;
  if (d == null || d.size === null || d.size === 0) return <p className="muted">No checkpoint saved yet.</p>;
  const stale = row.checkpointedAt !== loadedAt;

  return (
    <div className="checkpoint">
      <div className="checkpoint-bar">
        <fieldset className="segmented">
          <legend className="sr-only">Show checkpoint as</legend>
          {MODES.filter((m) => modes.includes(m)).map((m) => (
            <label key={m} className={mode === m ? 'on' : ''}>
              <input
                type="radio"
                name={name}
                value={m}
                checked={mode === m}
                onChange={() => setQuery({ cv: m === modes[0] ? undefined : m })}
              />
              {LABELS[m]}
            </label>
          ))}
        </fieldset>
        {!raw && (
          <span className="muted" data-testid="checkpoint-format">
            {formatLine(d)} · token {d.fencingToken} · {formatBytes(d.size)}
          </span>
        )}
        <span className="copy-group">
          {src !== null && d.node !== null && (
            <button
              type="button"
              className="copy"
              onClick={() => void downloadDecoded(client, src, d.fencingToken, d.node?.type === 'string')}
            >
              Download decoded
              <span className="sr-only"> {d.node.type === 'string' ? 'text' : 'JSON'} of the checkpoint</span>
            </button>
          )}
          {src !== null && (
            <button
              type="button"
              className="copy"
              onClick={() => void downloadRaw(client, src, d.fencingToken)}
            >
              Download raw<span className="sr-only"> bytes of the checkpoint</span>
            </button>
          )}
        </span>
      </div>
      {stale && (
        <div className="notice">
          A newer checkpoint was saved.{' '}
          <button type="button" onClick={() => setLoadedAt(row.checkpointedAt)}>
            Reload checkpoint
          </button>
        </div>
      )}
      {d.error !== null && (
        <p className="notice" role="status">
          {capitalise(visible(d.error))}. The stored bytes are shown as they are.
        </p>
      )}
      {d.notes.length > 0 && <p className="muted">{d.notes.map((n) => visible(n)).join('; ')}.</p>}
      {mode === 'tree' && src !== null && d.node !== null && (
        <>
          <Search
            src={src}
            onPick={(path) => {
              setReveal(path);
            }}
          />
          {/* The tree's rows take focus (one at a time): the region needs none of its own. */}
          <section className="checkpoint-body" aria-label="Checkpoint content">
            <DecodedTree
              key={src.id}
              src={src}
              root={d}
              selected={selected}
              onSelect={(pointer) => setQuery({ cp: pointer === '' ? undefined : pointer })}
              reveal={reveal}
            />
          </section>
        </>
      )}
      {(mode === 'json' || mode === 'decoded') && src !== null && (
        <ExportText src={src} text={mode === 'decoded'} />
      )}
      {raw && <RawPages connection={connection} row={row} loadedAt={loadedAt} mode={mode} />}
    </div>
  );
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** Search in the decoded checkpoint; a result opens the tree down to it. */
function Search({ src, onPick }: { src: TreeSource; onPick: (path: string[]) => void }) {
  const { client } = useServices();
  const [query, setQuery] = useState('');
  const [asked, setAsked] = useState<string | null>(null);
  const inputId = useId();
  const q = useQuery({
    queryKey: [...keys.checkpoint(src.connectionId, src.workId, 'decoded'), src.id, 'search', asked],
    queryFn: () => client.call('checkpoint.search', { ...src, query: asked ?? '' }),
    enabled: asked !== null,
    staleTime: Number.POSITIVE_INFINITY,
  });
  return (
    <div className="dsearch">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setAsked(query.trim() === '' ? null : query.trim());
        }}
      >
        <label htmlFor={inputId} className="sr-only">
          Search in checkpoint
        </label>
        <input
          id={inputId}
          type="search"
          placeholder="Search keys and values"
          value={query}
          maxLength={200}
          onChange={(e) => setQuery(e.target.value)}
        />{' '}
        <button type="submit">Search</button>
      </form>
      {q.error !== null && <ErrorNotice error={q.error} />}
      {q.data !== undefined && (
        <div className="dsearch-results">
          <p className="muted" role="status">
            {q.data.matches.length === 0
              ? q.data.truncated
                ? `No match in the first ${q.data.searched.toLocaleString()} nodes (the search stops there).`
                : 'No match.'
              : `${q.data.matches.length}${q.data.truncated ? '+' : ''} ${q.data.matches.length === 1 ? 'match' : 'matches'}${q.data.truncated ? ' (the first ones)' : ''}.`}
          </p>
          <ul aria-label="Search results">
            {q.data.matches.map((m) => {
              const pointer = toPointer(m.path) || '/';
              return (
                <li key={pointer}>
                  <button type="button" className="link" onClick={() => onPick(m.path)}>
                    <code className="mono">{visible(pointer)}</code>
                  </button>{' '}
                  <span className="muted">{visible(m.preview)}</span>
                </li>
              );
            })}
          </ul>
        </div>
      )}
    </div>
  );
}

/** Pretty JSON of the decoded value, or its decoded text, 1 MiB at a time. */
function ExportText({ src, text }: { src: TreeSource; text: boolean }) {
  const { client } = useServices();
  const q = useInfiniteQuery({
    queryKey: [...keys.checkpoint(src.connectionId, src.workId, 'decoded'), src.id, text ? 'text' : 'json'],
    queryFn: ({ pageParam }) =>
      client.call('checkpoint.export', { ...src, format: text ? 'text' : 'json', offset: pageParam }),
    initialPageParam: 0,
    getNextPageParam: (last) => last.nextOffset ?? undefined,
    staleTime: Number.POSITIVE_INFINITY,
  });
  if (q.error !== null) return <ErrorNotice error={q.error} />;
  if (q.data === undefined) return <p className="muted">Loading…</p>;
  const body = q.data.pages.map((p) => p.data).join('');
  const total = q.data.pages[0]?.total ?? 0;
  return (
    <>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a region that scrolls takes focus, so the keyboard can scroll it */}
      <section className="checkpoint-body" aria-label="Checkpoint content" tabIndex={0}>
        <pre className={text ? 'wrap' : ''}>{visible(body, text ? '\n\t' : '\n')}</pre>
      </section>
      {q.hasNextPage && (
        <button type="button" onClick={() => void q.fetchNextPage()} disabled={q.isFetchingNextPage}>
          {q.isFetchingNextPage
            ? 'Loading…'
            : `Load more (${Math.round((body.length / total) * 100)} % shown)`}
        </button>
      )}
    </>
  );
}

/** The stored bytes, 64 KiB pages at a time: as UTF-8 text or a hex dump. */
function RawPages({
  connection,
  row,
  loadedAt,
  mode,
}: {
  connection: ConnectionInfo;
  row: LeaseRow;
  loadedAt: number | null;
  mode: 'text' | 'hex';
}) {
  const { client } = useServices();
  const q = useInfiniteQuery({
    queryKey: [...keys.checkpoint(connection.id, row.workId, row.fencingToken), loadedAt],
    queryFn: ({ pageParam }) =>
      client.call('checkpoint.read', {
        connectionId: connection.id,
        workId: row.workId,
        offset: pageParam,
        length: PAGE,
      }),
    initialPageParam: 0,
    getNextPageParam: (last: CheckpointPage | null) =>
      last !== null && last.size !== null && last.offset + last.length < last.size
        ? last.offset + last.length
        : undefined,
    staleTime: Number.POSITIVE_INFINITY,
  });
  const pages = (q.data?.pages ?? []).filter((p): p is CheckpointPage => p !== null);
  const bytes = useMemo(
    () => pages.map((p) => ({ offset: p.offset, bytes: base64ToBytes(p.base64) })),
    [pages],
  );
  if (q.error !== null) return <ErrorNotice error={q.error} />;
  const first = pages[0];
  if (first === undefined || first.size === null) return <p className="muted">Loading the checkpoint…</p>;
  const shown = pages.reduce((n, p) => n + p.length, 0);
  return (
    <>
      <div className="checkpoint-bar">
        <span className="muted">
          {first.decoded.kind} · token {first.fencingToken} · {formatBytes(shown)} of{' '}
          {formatBytes(first.size)}
        </span>
        <span className="copy-group">
          <CopyButton
            label="Copy hex"
            text={() => bytesToHex(bytes.map((b) => b.bytes))}
            what={`of the checkpoint${shown < first.size ? ' (the bytes loaded)' : ''}`}
          />
          <CopyButton
            label="Copy base64"
            text={() => bytesToBase64(bytes.map((b) => b.bytes))}
            what={`of the checkpoint${shown < first.size ? ' (the bytes loaded)' : ''}`}
          />
        </span>
      </div>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a region that scrolls takes focus, so the keyboard can scroll it */}
      <section className="checkpoint-body" aria-label="Checkpoint content" tabIndex={0}>
        {mode === 'text' && (
          <pre className="wrap">{visible(decodeText(bytes.map((b) => b.bytes)), '\n\t')}</pre>
        )}
        {mode === 'hex' && (
          <pre className="hex">{bytes.map((b) => hexDump(b.bytes, b.offset)).join('\n')}</pre>
        )}
      </section>
      {q.hasNextPage && (
        <button type="button" onClick={() => void q.fetchNextPage()} disabled={q.isFetchingNextPage}>
          {q.isFetchingNextPage ? 'Loading…' : 'Load more'}
        </button>
      )}
    </>
  );
}

function decodeText(chunks: Uint8Array[]): string {
  const decoder = new TextDecoder('utf-8');
  let out = '';
  for (const c of chunks) out += decoder.decode(c, { stream: true });
  return out + decoder.decode();
}
