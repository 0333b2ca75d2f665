/** Display helpers. Every input is milliseconds or bytes; outputs are short and stable in width. */

export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, '0')} s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${String(m % 60).padStart(2, '0')} min`;
  return `${Math.floor(h / 24)} d`;
}

/** A threshold: "1.5 s", "60 s", "5 min". */
export function formatSeconds(ms: number): string {
  const s = ms / 1000;
  return s >= 120 && s % 60 === 0 ? `${s / 60} min` : `${Number(s.toFixed(1))} s`;
}

export function formatAgo(ms: number): string {
  return `${formatDuration(ms)} ago`;
}

/** "in 12 s" / "expired 3 s ago" relative to the server's now. */
export function formatExpiresIn(expiresAt: number, serverNow: number): string {
  const d = expiresAt - serverNow;
  return d > 0 ? `in ${formatDuration(d)}` : `${formatDuration(-d)} ago`;
}

export function formatBytes(n: number | null): string {
  if (n === null) return '—';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** Local wall time of a backend timestamp (the offset only moves "now", not stored instants). */
export function formatTime(epochMs: number | null): string {
  if (epochMs === null) return '—';
  const d = new Date(epochMs);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
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
