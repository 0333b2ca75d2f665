/**
 * The fleet table's columns: their order, default widths, which may be hidden, and what this
 * browser chose (hidden columns, widths), remembered in localStorage. Work ID and Status are
 * always shown and stay on the left (sticky), so identity and status never scroll away.
 */
import { useSyncExternalStore } from 'react';
import type { SortKey } from './model.ts';

export interface Column {
  key: SortKey;
  label: string;
  className: string;
  width: number;
  /** Work ID and Status cannot be hidden. */
  fixed?: boolean;
  /** Takes the spare width of a wide window. */
  grow?: boolean;
}

export const COLUMNS: readonly Column[] = [
  { key: 'workId', label: 'Work ID', className: 'c-work', width: 260, fixed: true },
  { key: 'status', label: 'Status', className: 'c-status', width: 116, fixed: true },
  { key: 'expiresAt', label: 'Expires', className: 'c-expires', width: 136 },
  { key: 'connection', label: 'Connection', className: 'c-conn', width: 160 },
  { key: 'holderId', label: 'Holder', className: 'c-holder', width: 160, grow: true },
  { key: 'fencingToken', label: 'Token', className: 'c-token', width: 124 },
  { key: 'renewedAt', label: 'Last heartbeat', className: 'c-heartbeat', width: 130 },
  { key: 'checkpointedAt', label: 'Last checkpoint', className: 'c-checkpoint', width: 136 },
  { key: 'checkpointSize', label: 'Checkpoint size', className: 'c-size', width: 124 },
];

export const MIN_WIDTH = 64;
export const MAX_WIDTH = 900;

export interface ColumnPrefs {
  hidden: readonly SortKey[];
  widths: Readonly<Partial<Record<SortKey, number>>>;
}

const STORAGE_KEY = 'worklease.fleetColumns';
const EMPTY: ColumnPrefs = { hidden: [], widths: {} };

/** What was stored, checked: unknown keys, fixed columns and odd widths are dropped. */
export function parsePrefs(raw: string | null): ColumnPrefs {
  if (raw === null) return EMPTY;
  try {
    const v = JSON.parse(raw) as { hidden?: unknown; widths?: unknown };
    const known = new Map(COLUMNS.map((c) => [c.key as string, c]));
    const hidden = Array.isArray(v.hidden)
      ? v.hidden.filter(
          (k): k is SortKey => typeof k === 'string' && known.get(k)?.fixed !== true && known.has(k),
        )
      : [];
    const widths: Partial<Record<SortKey, number>> = {};
    if (typeof v.widths === 'object' && v.widths !== null) {
      for (const [k, w] of Object.entries(v.widths as Record<string, unknown>)) {
        if (known.has(k) && typeof w === 'number' && Number.isFinite(w)) {
          widths[k as SortKey] = Math.round(Math.min(MAX_WIDTH, Math.max(MIN_WIDTH, w)));
        }
      }
    }
    return { hidden, widths };
  } catch {
    return EMPTY;
  }
}

/** This browser's localStorage (typed structurally: the model is also tested in Node, without it). */
function storage(): { getItem(k: string): string | null; setItem(k: string, v: string): void } | undefined {
  return (globalThis as { localStorage?: ReturnType<typeof storage> }).localStorage;
}

let prefs: ColumnPrefs | null = null;
const listeners = new Set<() => void>();

function current(): ColumnPrefs {
  if (prefs === null) {
    let raw: string | null = null;
    try {
      raw = storage()?.getItem(STORAGE_KEY) ?? null;
    } catch {
      // Storage refused: defaults.
    }
    prefs = parsePrefs(raw);
  }
  return prefs;
}

export function setColumnPrefs(next: ColumnPrefs): void {
  prefs = next;
  try {
    storage()?.setItem(STORAGE_KEY, JSON.stringify(next));
  } catch {
    // Not remembered, still applied.
  }
  for (const l of listeners) l();
}

export function useColumnPrefs(): ColumnPrefs {
  return useSyncExternalStore((cb) => {
    listeners.add(cb);
    return () => listeners.delete(cb);
  }, current);
}

export function widthOf(c: Column, p: ColumnPrefs): number {
  return p.widths[c.key] ?? c.width;
}

export function toggleColumn(key: SortKey): void {
  const p = current();
  const hidden = p.hidden.includes(key) ? p.hidden.filter((k) => k !== key) : [...p.hidden, key];
  setColumnPrefs({ ...p, hidden });
}

export function resizeColumn(key: SortKey, width: number): void {
  const p = current();
  setColumnPrefs({
    ...p,
    widths: { ...p.widths, [key]: Math.round(Math.min(MAX_WIDTH, Math.max(MIN_WIDTH, width))) },
  });
}

export function resetColumns(): void {
  setColumnPrefs(EMPTY);
}
