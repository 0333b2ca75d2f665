/**
 * The one duration format of worklease, shared by the CLI (src/cli/format.ts) and the console page
 * (renderer/lib/format.ts): "850 ms", "42 s", "4 min 10 s", "1 h 59 min", "3 d 04 h". Whole units,
 * rounded down, so a countdown never shows more time than is left. No Node or DOM imports: the
 * renderer bundles this file.
 */

export function formatDuration(ms: number): string {
  const abs = Math.abs(ms);
  if (!Number.isFinite(abs)) return '—';
  if (abs < 1000) return `${Math.floor(abs)} ms`;
  const s = Math.floor(abs / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, '0')} s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${String(m % 60).padStart(2, '0')} min`;
  return `${Math.floor(h / 24)} d ${String(h % 24).padStart(2, '0')} h`;
}

/** "in 12 s" / "3 min 04 s ago": an instant relative to a now (the server's). */
export function formatRelative(at: number, now: number): string {
  const d = at - now;
  return d > 0 ? `in ${formatDuration(d)}` : `${formatDuration(d)} ago`;
}

/** An expiry: "in 12 s" while it runs, "expired 44 s ago" after (never a negative "in"). */
export function formatExpiry(expiresAt: number, now: number): string {
  const d = expiresAt - now;
  return d > 0 ? `in ${formatDuration(d)}` : `expired ${formatDuration(d)} ago`;
}
