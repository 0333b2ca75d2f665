/** Display helpers. Every input is milliseconds or bytes; outputs are short and stable in width. */

import { formatDuration, formatExpiry, formatRelative } from '../../src/console/common/index.ts';

/** The one duration format, shared with the CLI: "42 s", "4 min 10 s", "1 h 59 min". */
export { formatDuration, formatExpiry, formatRelative };

/** A threshold: "1.5 s", "60 s", "5 min". */
export function formatSeconds(ms: number): string {
  const s = ms / 1000;
  return s >= 120 && s % 60 === 0 ? `${s / 60} min` : `${Number(s.toFixed(1))} s`;
}

export function formatAgo(ms: number): string {
  return `${formatDuration(Math.max(0, ms))} ago`;
}

/** "in 12 s" / "expired 3 s ago" relative to the server's now. */
export function formatExpiresIn(expiresAt: number, serverNow: number): string {
  return formatExpiry(expiresAt, serverNow);
}

export function formatBytes(n: number | null): string {
  if (n === null) return '—';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** Which clock absolute times are shown in: this machine's zone or UTC. */
export type Zone = 'local' | 'utc';

/** "UTC+1", "UTC+5:30", "UTC-3", "UTC": the zone an absolute time is written in, at that instant. */
export function zoneLabel(epochMs: number, zone: Zone = 'local'): string {
  const off = zone === 'utc' ? 0 : -new Date(epochMs).getTimezoneOffset();
  if (off === 0) return 'UTC';
  const a = Math.abs(off);
  return `UTC${off > 0 ? '+' : '-'}${Math.floor(a / 60)}${a % 60 === 0 ? '' : `:${pad(a % 60)}`}`;
}

function parts(epochMs: number, zone: Zone) {
  const d = new Date(epochMs);
  return zone === 'utc'
    ? [
        d.getUTCFullYear(),
        d.getUTCMonth() + 1,
        d.getUTCDate(),
        d.getUTCHours(),
        d.getUTCMinutes(),
        d.getUTCSeconds(),
      ]
    : [d.getFullYear(), d.getMonth() + 1, d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds()];
}

/**
 * "2026-12-01 09:30:46 UTC+1": a backend timestamp with the zone it is written in (the clock
 * offset only moves "now", not stored instants).
 */
export function formatTime(epochMs: number | null, zone: Zone = 'local'): string {
  if (epochMs === null) return '—';
  const [y, mo, da, h, mi, se] = parts(epochMs, zone) as number[];
  return `${y}-${pad(mo as number)}-${pad(da as number)} ${pad(h as number)}:${pad(mi as number)}:${pad(se as number)} ${zoneLabel(epochMs, zone)}`;
}

/** "09:30:46 UTC+1" on the day of `now`, else the date too: for table cells. */
export function formatTimeShort(epochMs: number, now: number, zone: Zone = 'local'): string {
  const [y, mo, da, h, mi, se] = parts(epochMs, zone) as number[];
  const [ny, nmo, nda] = parts(now, zone) as number[];
  const day = y === ny && mo === nmo && da === nda ? '' : `${y}-${pad(mo as number)}-${pad(da as number)} `;
  return `${day}${pad(h as number)}:${pad(mi as number)}:${pad(se as number)} ${zoneLabel(epochMs, zone)}`;
}

export function formatClock(epochMs: number): string {
  const d = new Date(epochMs);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** "09:31:02": local wall time of a backend timestamp, to the second. */
export function formatClockSeconds(epochMs: number): string {
  const d = new Date(epochMs);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** One line of a classic hex dump: offset, 16 bytes in hex, printable ASCII. */
export function hexDump(bytes: Uint8Array, baseOffset: number): string {
  const lines: string[] = [];
  for (let i = 0; i < bytes.length; i += 16) {
    const chunk = bytes.subarray(i, i + 16);
    let hex = '';
    let ascii = '';
    for (let j = 0; j < 16; j++) {
      if (j < chunk.length) {
        const b = chunk[j] as number;
        hex += `${b.toString(16).padStart(2, '0')} `;
        ascii += b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.';
      } else {
        hex += '   ';
      }
      if (j === 7) hex += ' ';
    }
    lines.push(`${(baseOffset + i).toString(16).padStart(8, '0')}  ${hex} |${ascii}|`);
  }
  return lines.join('\n');
}

export function base64ToBytes(b64: string): Uint8Array {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** The bytes as one lowercase hex string ("00254a…"), for copying. */
export function bytesToHex(chunks: readonly Uint8Array[]): string {
  let out = '';
  for (const c of chunks) for (const b of c) out += b.toString(16).padStart(2, '0');
  return out;
}

/** The bytes as standard base64 (the pages re-encoded together: a page need not end on 3 bytes). */
export function bytesToBase64(chunks: readonly Uint8Array[]): string {
  let bin = '';
  for (const c of chunks) {
    for (let i = 0; i < c.length; i += 0x8000) bin += String.fromCharCode(...c.subarray(i, i + 0x8000));
  }
  return btoa(bin);
}
