/**
 * `worklease show`: everything stored about one work item and its checkpoint,
 * decoded (JSON pretty, UTF-8 text, or a hex dump for binary), one page at a
 * time so a large payload is never fetched whole.
 */
import { decodeCheckpoint } from '../../console/decode/page.ts';
import { connectionIdFor, leaseUrl } from '../../console/links.ts';
import { leaseStatus } from '../../console/status.ts';
import { NotFoundError } from '../../lease/errors.ts';
import type { LeaseBackend } from '../../lease/types.ts';
import { type GlobalOptions, out, resolveConsoleUrl, resolveUrl, withBackend } from '../context.ts';
import { bytes, fields, leaseJson, relative } from '../format.ts';
import { rowTimes, type ThresholdOptions, thresholdsFrom } from './ls.ts';

export interface ShowOptions extends ThresholdOptions {
  json?: boolean;
  offset?: number;
  length?: number;
  raw?: boolean;
  /** The console to link to (`--console-url`; else WORKLEASE_CONSOLE_URL). */
  consoleUrl?: string;
}

/** `show <url> <workId>`, or `show <workId>` with WORKLEASE_URL. */
export function splitUrlAndId(first: string, second: string | undefined): { url: string; workId: string } {
  return second === undefined
    ? { url: resolveUrl(undefined), workId: first }
    : { url: resolveUrl(first), workId: second };
}

export async function showCommand(
  first: string,
  second: string | undefined,
  options: ShowOptions,
  globals: GlobalOptions,
): Promise<void> {
  const { url, workId } = splitUrlAndId(first, second);
  const thresholds = thresholdsFrom(options);
  const offset = options.offset ?? 0;
  const length = options.length ?? 64 * 1024;
  const consoleUrl = resolveConsoleUrl(options.consoleUrl);
  await withBackend(url, globals, async (backend) => {
    const link = consoleUrl === null ? null : leaseUrl(consoleUrl, connectionIdFor(backend.url), workId);
    if (options.raw) {
      await writeRaw(backend, workId);
      return;
    }
    const info = await backend.admin.get(workId);
    if (info === null) throw new NotFoundError(`no work item '${workId}' on ${backend.url}`);
    const serverNow = (await backend.admin.serverTime()).getTime();
    const status = leaseStatus(rowTimes(info), serverNow, thresholds);
    const page = await backend.admin.readState(workId, { offset, length });
    const size = page?.size ?? null;
    const pageBytes = page?.bytes ?? new Uint8Array(0);
    const decoded = decodeCheckpoint(pageBytes, size, offset);
    if (options.json) {
      await out(
        JSON.stringify(
          {
            lease: leaseJson(info, status),
            ...(link === null ? {} : { consoleUrl: link }),
            serverTime: new Date(serverNow).toISOString(),
            checkpoint: {
              size,
              offset,
              length: pageBytes.length,
              fencingToken: page?.fencingToken.toString() ?? null,
              base64: Buffer.from(pageBytes).toString('base64'),
              decoded,
            },
          },
          null,
          2,
        ),
      );
      return;
    }
    const handoff = info.cleanHandoff ? 'clean' : `not clean (previous lease ${info.predecessorEnd})`;
    const lines = fields([
      ['work id', info.workId],
      ['status', status],
      ['holder', info.holderId],
      ['fencing token', info.fencingToken.toString()],
      ['expires at', `${info.expiresAt.toISOString()} (${relative(info.expiresAt, serverNow)})`],
      ['ttl', `${info.ttlMs} ms`],
      ['step', info.stepId ?? '-'],
      ['acquired at', at(info.acquiredAt, serverNow)],
      ['renewed at', at(info.renewedAt, serverNow)],
      ['checkpointed at', at(info.checkpointedAt, serverNow)],
      ['released at', at(info.releasedAt, serverNow)],
      ['ended', info.ended ?? '-'],
      [
        'release requested',
        info.releaseRequest === null
          ? '-'
          : `${at(info.releaseRequest.at, serverNow)} by ${info.releaseRequest.operator}: ${info.releaseRequest.reason}`,
      ],
      [
        'on hold',
        info.hold === undefined || info.hold === null
          ? '-'
          : `${at(info.hold.at, serverNow)} by ${info.hold.operator}: ${info.hold.reason} (acquire fails ON_HOLD)`,
      ],
      ['handoff', handoff],
      ['version', info.version.toString()],
      ['checkpoint', size === null ? 'none saved' : `${bytes(size)} (${size} bytes)`],
      ['server time', new Date(serverNow).toISOString()],
      ...(link === null ? [] : ([['console', link]] as Array<[string, string]>)),
    ]);
    let checkpoint = '';
    if (size !== null) {
      const end = offset + pageBytes.length;
      const range =
        size === 0
          ? 'empty'
          : pageBytes.length === 0
            ? `offset ${offset} is past the end (${size} bytes)`
            : `bytes ${offset}-${end - 1} of ${size}, shown as ${decoded.kind}`;
      const more = end < size ? `\n… ${size - end} more bytes: use --offset ${end}` : '';
      checkpoint = `\n\n--- checkpoint (${range}) ---\n${decoded.text}${decoded.text === '' || decoded.text.endsWith('\n') ? '' : '\n'}---${more}`;
    }
    await out(lines + checkpoint);
  });
}

/** Writes the whole checkpoint's bytes to stdout, page by page, for piping into other tools. */
async function writeRaw(backend: LeaseBackend, workId: string): Promise<void> {
  let offset = 0;
  for (;;) {
    const page = await backend.admin.readState(workId, { offset, length: 1024 * 1024 });
    if (page === null) throw new NotFoundError(`no work item '${workId}' on ${backend.url}`);
    if (page.bytes.length > 0) {
      await new Promise<void>((resolve) => process.stdout.write(page.bytes, () => resolve()));
    }
    offset += page.bytes.length;
    if (page.bytes.length === 0 || page.size === null || offset >= page.size) return;
  }
}

function at(d: Date | null, serverNow: number): string {
  return d === null ? '-' : `${d.toISOString()} (${relative(d, serverNow)})`;
}
