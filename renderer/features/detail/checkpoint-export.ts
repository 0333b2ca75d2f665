/**
 * A decoded checkpoint out of the console: the decoded JSON (or text), or the raw bytes, read a
 * page of 1 MiB at a time (`checkpoint.export`) from the decoding the viewer shows, and handed to
 * the browser as a file.
 */
import type { Result } from '../../../src/console/common/index.ts';
import type { ConsoleClient } from '../../api/client.ts';
import { saveBlob } from '../bulk/download.ts';
import type { TreeSource } from './DecodedTree.tsx';

/** Most text a "Copy value" puts on the clipboard: past it, the download is the way. */
const MAX_COPY_CHARS = 8 * 1024 * 1024;

/** The whole export of `path`: text (json, text) or bytes (raw). */
export async function exportAll(
  client: ConsoleClient,
  src: TreeSource,
  format: 'json' | 'text' | 'raw',
  path: string[] = [],
  maxChars = format === 'raw' ? Number.POSITIVE_INFINITY : MAX_COPY_CHARS * 4,
): Promise<string | Uint8Array> {
  const parts: string[] = [];
  let length = 0;
  for (let offset: number | null = 0; offset !== null; ) {
    const page: Result<'checkpoint.export'> = await client.call('checkpoint.export', {
      ...src,
      format,
      path,
      offset,
    });
    parts.push(page.data);
    length += page.data.length;
    if (length > maxChars)
      throw new Error(`too large to copy (${page.total.toLocaleString()} characters): download it instead`);
    offset = page.nextOffset;
  }
  if (format !== 'raw') return parts.join('');
  const chunks = parts.map((b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** `worklease-checkpoint-orders_json-1-token-42.json`: the work id made safe for a file name. */
export function exportFileName(workId: string, token: string, ext: string): string {
  const safe = workId.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 80);
  return `worklease-checkpoint-${safe}-token-${token}.${ext}`;
}

export async function downloadDecoded(
  client: ConsoleClient,
  src: TreeSource,
  token: string,
  text: boolean,
): Promise<void> {
  const data = await exportAll(client, src, text ? 'text' : 'json', [], Number.POSITIVE_INFINITY);
  saveBlob(
    exportFileName(src.workId, token, text ? 'txt' : 'json'),
    new Blob([data as string], {
      type: text ? 'text/plain;charset=utf-8' : 'application/json;charset=utf-8',
    }),
  );
}

export async function downloadRaw(client: ConsoleClient, src: TreeSource, token: string): Promise<void> {
  const data = (await exportAll(client, src, 'raw')) as Uint8Array<ArrayBuffer>;
  saveBlob(exportFileName(src.workId, token, 'bin'), new Blob([data], { type: 'application/octet-stream' }));
}
