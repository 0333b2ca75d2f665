/**
 * How times are shown, chosen once for the whole page and remembered in this browser: absolute in
 * this machine's zone (`Local`), absolute in `UTC`, or `Relative` to the server's clock. Absolute
 * times always carry their zone ("2026-12-01 09:30:46 UTC+1"); the other forms are in the title.
 */
import { useId, useSyncExternalStore } from 'react';
import { formatAgo, formatExpiry, formatTime, formatTimeShort } from '../lib/format.ts';

export type TimeMode = 'local' | 'utc' | 'relative';
const MODES: readonly { id: TimeMode; label: string }[] = [
  { id: 'local', label: 'Local' },
  { id: 'utc', label: 'UTC' },
  { id: 'relative', label: 'Relative' },
];
const STORAGE_KEY = 'worklease.timeMode';

function load(): TimeMode {
  try {
    const v = window.localStorage.getItem(STORAGE_KEY);
    if (v === 'local' || v === 'utc' || v === 'relative') return v;
  } catch {
    // Storage refused (private mode, a file page): the default.
  }
  return 'relative';
}

let mode: TimeMode | null = null;
const listeners = new Set<() => void>();

export function setTimeMode(next: TimeMode): void {
  mode = next;
  try {
    window.localStorage.setItem(STORAGE_KEY, next);
  } catch {
    // Not remembered, still applied.
  }
  for (const l of listeners) l();
}

export function useTimeMode(): TimeMode {
  return useSyncExternalStore(
    (cb) => {
      listeners.add(cb);
      return () => listeners.delete(cb);
    },
    () => {
      mode ??= load();
      return mode;
    },
  );
}

/**
 * One instant. `serverNow` is the backend's now (local clock plus the connection's offset, or its
 * last confirmed time while stale): relative forms never come from the local clock alone.
 * `expiry` words a passed instant as "expired … ago" (others are events: "… ago"); `compact`
 * (table cells) shows one form only. `checkedAt` (with `expiry`): when the lease's heartbeats were
 * last checked; an expiry that has passed by the clock but not by that check is not called
 * expired: a renew since the check may have moved it ("due … ago · awaiting heartbeat check").
 */
export function Time({
  at,
  serverNow,
  expiry = false,
  compact = false,
  mode: forced,
  checkedAt = null,
}: {
  at: number;
  serverNow: number;
  expiry?: boolean;
  compact?: boolean;
  mode?: TimeMode;
  checkedAt?: number | null | undefined;
}) {
  const chosen = useTimeMode();
  const m = forced ?? chosen;
  const unconfirmed = expiry && at <= serverNow && checkedAt !== null && at > checkedAt;
  // An event (acquired, renewed, released…) is in the past: a few ms of clock-offset error never
  // makes it read "in 163 ms".
  const rel = unconfirmed
    ? compact
      ? 'awaiting check'
      : `due ${formatAgo(serverNow - at)} · awaiting heartbeat check`
    : expiry
      ? formatExpiry(at, serverNow)
      : formatAgo(serverNow - at);
  const local = formatTime(at, 'local');
  const utc = formatTime(at, 'utc');
  const title = `${local} · ${utc} · ${rel}`;
  if (m === 'relative') {
    return (
      <time dateTime={new Date(at).toISOString()} title={title}>
        {rel}
        {!compact && <span className="muted"> ({local})</span>}
      </time>
    );
  }
  const zone = m === 'utc' ? 'utc' : 'local';
  return (
    <time dateTime={new Date(at).toISOString()} title={title}>
      {compact ? formatTimeShort(at, serverNow, zone) : formatTime(at, zone)}
      {!compact && <span className="muted"> ({rel})</span>}
    </time>
  );
}

/** The Local / UTC / Relative switch of the top bar. */
export function TimeModeToggle() {
  const current = useTimeMode();
  const name = useId();
  return (
    <fieldset className="segmented time-toggle">
      <legend className="sr-only">Show times as</legend>
      {MODES.map((m) => (
        <label key={m.id} className={current === m.id ? 'on' : ''}>
          <input
            type="radio"
            name={name}
            value={m.id}
            checked={current === m.id}
            onChange={() => setTimeMode(m.id)}
          />
          {m.label}
        </label>
      ))}
    </fieldset>
  );
}
