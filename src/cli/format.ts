/**
 * Text and JSON renderings of leases for the terminal. JSON output carries
 * tokens and versions as decimal strings and times as ISO 8601 (UTC), so it
 * round-trips through any JSON tool without losing precision.
 */
import type { LeaseStatus } from '../console/api.ts';
import { formatDuration, formatRelative } from '../console/format.ts';
import { visible } from '../console/text.ts';
import type { LeaseInfo } from '../lease/types.ts';

/**
 * What reaches the terminal: control, format (bidi, zero-width) and separator
 * characters escaped as `\uXXXX`, except the newlines and tabs the CLI's own
 * layout uses. Ids cannot contain newlines (the library refuses control
 * characters), so no stored value can forge an output line; an operator's
 * reason or a checkpoint's text cannot send ESC sequences to the terminal.
 * JSON output stays valid and parses to the same value (`\uXXXX` is a JSON
 * escape, and these characters only occur inside strings).
 */
export function terminalText(text: string): string {
  return visible(text, '\n\t');
}

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

export interface LeaseJson {
  workId: string;
  status: LeaseStatus;
  holderId: string;
  fencingToken: string;
  expiresAt: string;
  ttlMs: number;
  stepId: string | null;
  acquiredAt: string;
  renewedAt: string | null;
  checkpointedAt: string | null;
  releasedAt: string | null;
  checkpointSize: number | null;
  cleanHandoff: boolean;
  predecessorEnd: LeaseInfo['predecessorEnd'];
  ended: LeaseInfo['ended'];
  version: string;
  /** The pending release request (time ISO 8601, backend clock), or null. */
  releaseRequest: { at: string; operator: string; reason: string } | null;
  /** The hold on the work item (time ISO 8601, backend clock), or null (docs/history.md). */
  hold: { at: string; operator: string; reason: string } | null;
}

export function leaseJson(info: LeaseInfo, status: LeaseStatus): LeaseJson {
  return {
    workId: info.workId,
    status,
    holderId: info.holderId,
    fencingToken: info.fencingToken.toString(),
    expiresAt: info.expiresAt.toISOString(),
    ttlMs: info.ttlMs,
    stepId: info.stepId,
    acquiredAt: info.acquiredAt.toISOString(),
    renewedAt: iso(info.renewedAt),
    checkpointedAt: iso(info.checkpointedAt),
    releasedAt: iso(info.releasedAt),
    checkpointSize: info.checkpointSize,
    cleanHandoff: info.cleanHandoff,
    predecessorEnd: info.predecessorEnd,
    ended: info.ended,
    version: info.version.toString(),
    releaseRequest:
      info.releaseRequest === null
        ? null
        : {
            at: info.releaseRequest.at.toISOString(),
            operator: info.releaseRequest.operator,
            reason: info.releaseRequest.reason,
          },
    hold:
      info.hold === undefined || info.hold === null
        ? null
        : { at: info.hold.at.toISOString(), operator: info.hold.operator, reason: info.hold.reason },
  };
}

/** "850 ms", "4 min 10 s", "1 h 59 min", "3 d 04 h": the console's format (src/console/format.ts). */
export function duration(ms: number): string {
  return formatDuration(ms);
}

/** `in 12 s` / `3 min 04 s ago`, relative to the server's clock. */
export function relative(at: Date | null, serverNow: number): string {
  if (at === null) return '-';
  return formatRelative(at.getTime(), serverNow);
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** Key/value lines with aligned values. */
export function fields(pairs: [string, string][]): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n');
}
