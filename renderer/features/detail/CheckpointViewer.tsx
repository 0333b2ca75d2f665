/**
 * Shows a lease's checkpoint bytes page by page (`checkpoint.read`), as a
 * JSON tree, pretty JSON, UTF-8 text or a hex dump. Large payloads load 64 KiB
 * at a time behind "Load more"; a newer checkpoint is offered, not swapped in
 * under the reader's eyes.
 */
import { useInfiniteQuery } from '@tanstack/react-query';
import { useId, useMemo, useState } from 'react';
import type { CheckpointPage, ConnectionInfo, LeaseRow } from '../../../src/console/api.ts';
import { visible } from '../../../src/console/text.ts';
import { keys } from '../../api/queries.ts';
import { CopyButton } from '../../app/CopyButton.tsx';
import { useServices } from '../../app/context.tsx';
import { ErrorNotice } from '../../app/ui.tsx';
import { base64ToBytes, bytesToBase64, bytesToHex, formatBytes, hexDump } from '../../lib/format.ts';

const PAGE = 64 * 1024;
type Mode = 'tree' | 'json' | 'text' | 'hex';

export function CheckpointViewer({ connection, row }: { connection: ConnectionInfo; row: LeaseRow }) {
  const { client } = useServices();
  const [loadedAt, setLoadedAt] = useState(row.checkpointedAt);
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
  const first = pages[0];
  const [mode, setMode] = useState<Mode | null>(null);
  const name = useId();

  const kind = first?.decoded.kind ?? 'empty';
  const isJson = kind === 'json' && pages.length === 1 && first?.decoded.json !== undefined;
  const effective: Mode = mode ?? (isJson ? 'tree' : kind === 'text' ? 'text' : 'hex');
  const bytes = useMemo(
    () => pages.map((p) => ({ offset: p.offset, bytes: base64ToBytes(p.base64) })),
    [pages],
  );

  if (q.error !== null) return <ErrorNotice error={q.error} />;
  if (q.isLoading) return <p className="muted">Loading the checkpoint…</p>;
  if (first === undefined || kind === 'empty' || first.size === 0 || first.size === null) {
    return <p className="muted">No checkpoint saved yet.</p>;
  }
  const shown = pages.reduce((n, p) => n + p.length, 0);
  const modes: Mode[] = isJson ? ['tree', 'json', 'text', 'hex'] : ['text', 'hex'];
  const labels: Record<Mode, string> = { tree: 'JSON tree', json: 'Pretty JSON', text: 'Text', hex: 'Hex' };
  const stale = row.checkpointedAt !== loadedAt;

  return (
    <div className="checkpoint">
      <div className="checkpoint-bar">
        <fieldset className="segmented">
          <legend className="sr-only">Show checkpoint as</legend>
          {modes.map((m) => (
            <label key={m} className={effective === m ? 'on' : ''}>
              <input
                type="radio"
                name={name}
                value={m}
                checked={effective === m}
                onChange={() => setMode(m)}
              />
              {labels[m]}
            </label>
          ))}
        </fieldset>
        <span className="muted">
          {kind} · token {first.fencingToken} · {formatBytes(shown)} of {formatBytes(first.size)}
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
      {stale && (
        <div className="notice">
          A newer checkpoint was saved.{' '}
          <button type="button" onClick={() => setLoadedAt(row.checkpointedAt)}>
            Reload checkpoint
          </button>
        </div>
      )}
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a region that scrolls takes focus, so the keyboard can scroll it */}
      <section className="checkpoint-body" aria-label="Checkpoint content" tabIndex={0}>
        {effective === 'tree' && <JsonTree value={first.decoded.json} label="root" depth={0} />}
        {effective === 'json' && <pre>{JSON.stringify(first.decoded.json, null, 2)}</pre>}
        {effective === 'text' && <pre className="wrap">{decodeText(bytes.map((b) => b.bytes))}</pre>}
        {effective === 'hex' && (
          <pre className="hex">{bytes.map((b) => hexDump(b.bytes, b.offset)).join('\n')}</pre>
        )}
      </section>
      {q.hasNextPage && (
        <button type="button" onClick={() => void q.fetchNextPage()} disabled={q.isFetchingNextPage}>
          {q.isFetchingNextPage ? 'Loading…' : 'Load more'}
        </button>
      )}
    </div>
  );
}

function decodeText(chunks: Uint8Array[]): string {
  const decoder = new TextDecoder('utf-8');
  let out = '';
  for (const c of chunks) out += decoder.decode(c, { stream: true });
  return out + decoder.decode();
}

function JsonTree({ value, label, depth }: { value: unknown; label: string; depth: number }) {
  if (value !== null && typeof value === 'object') {
    const entries = Array.isArray(value)
      ? value.map((v, i) => [String(i), v] as const)
      : Object.entries(value as Record<string, unknown>);
    const summary = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
    return (
      <details className="json-node" open={depth < 2}>
        <summary>
          <span className="json-key">{visible(label)}</span> <span className="muted">{summary}</span>
        </summary>
        <ul>
          {entries.slice(0, 1000).map(([k, v]) => (
            <li key={k}>
              <JsonTree value={v} label={k} depth={depth + 1} />
            </li>
          ))}
          {entries.length > 1000 && <li className="muted">… {entries.length - 1000} more</li>}
        </ul>
      </details>
    );
  }
  return (
    <div className="json-leaf">
      {/* Keys and strings are the holder's bytes: bidi and zero-width characters are shown escaped. */}
      <span className="json-key">{visible(label)}</span>:{' '}
      <span className={`json-${typeof value}`}>{visible(JSON.stringify(value))}</span>
    </div>
  );
}
