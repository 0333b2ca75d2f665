/**
 * React side of the fleet's windows (./fleet-window.ts, ./window.ts) and of the one-lease watch
 * the detail pane reads.
 */
import { useCallback, useEffect, useRef, useState, useSyncExternalStore } from 'react';
import type {
  LeaseRow,
  LeaseStatus,
  ViewFilter,
  ViewResult,
  ViewSort,
} from '../../../src/console/common/index.ts';
import type { WatchState } from '../../api/watches.ts';
import { useServices } from '../../app/context.tsx';
import { FleetWindow, type FleetWindowState, questionKey } from './fleet-window.ts';

/** Text typed into the filters reaches the server this long after the last keystroke. */
export const TYPING_DEBOUNCE_MS = 120;

/** The value, `ms` after it (named by `key`) last changed. */
export function useDebounced<T>(value: T, key: string, ms: number): T {
  const [held, setHeld] = useState({ value, key });
  const latest = useRef(value);
  latest.current = value;
  useEffect(() => {
    if (key === held.key) return;
    const t = setTimeout(() => setHeld({ value: latest.current, key }), ms);
    return () => clearTimeout(t);
  }, [key, held.key, ms]);
  return key === held.key ? value : held.value;
}

export interface FleetWindowHandle extends FleetWindowState {
  setRange(from: number, to: number): void;
}

/** One window per connection in `ids` (table order), under `filter` and `sort`, kept current by the server. */
export function useFleetWindow(
  ids: readonly string[],
  filter: ViewFilter,
  sort: ViewSort,
): FleetWindowHandle {
  const { watches } = useServices();
  const listeners = useRef(new Set<() => void>());
  const [fw] = useState(
    () =>
      new FleetWindow(watches, () => {
        for (const l of listeners.current) l();
      }),
  );
  useEffect(() => () => fw.close(), [fw]);
  const idsKey = ids.join('\u0000');
  const question = JSON.stringify([filter, sort]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: idsKey and question name exactly what ids, filter and sort hold
  useEffect(() => {
    fw.configure(ids, filter, sort);
  }, [fw, idsKey, question]);
  const state = useSyncExternalStore(
    (cb) => {
      listeners.current.add(cb);
      return () => listeners.current.delete(cb);
    },
    () => fw.state,
  );
  const setRange = useCallback((from: number, to: number) => fw.setRange(from, to), [fw]);
  // Pending from the render that asks: the windows are configured in an effect, after it.
  const pending = state.pending || state.question !== questionKey(ids, filter, sort);
  return { ...state, pending, setRange };
}

/** One lease as its connection's index holds it, kept current. */
export interface LeaseLookup {
  /**
   * `loading`: no answer yet, or the index is still being read and has not reached it.
   * `found`: `row` is the lease. `absent`: no lease with this work id exists on the connection
   * now, and this page never saw one. `gone`: this page showed it, and it left the fleet.
   * `error`: the watch failed (`error`; an unknown connection among others).
   */
  state: 'loading' | 'found' | 'absent' | 'gone' | 'error';
  row: LeaseRow | null;
  /** Its status, judged by the server with the counts and the table's rows. */
  status: LeaseStatus | null;
  view: ViewResult | null;
  error: WatchState['error'];
}

/**
 * Watches one lease: the view of its connection filtered to its work id as a prefix, sorted by
 * work id, one row — the lease itself comes first when it exists (a prefix sorts before every
 * longer id it starts).
 */
export function useLeaseWatch(connectionId: string, workId: string): LeaseLookup {
  const { watches } = useServices();
  const [state, setState] = useState<WatchState>({ view: null, error: null });
  const seen = useRef(false);
  useEffect(() => {
    seen.current = false;
    setState({ view: null, error: null });
    const w = watches.open(setState);
    w.set({
      connectionId,
      filter: { workIdPrefix: workId },
      sort: { column: 'workId', dir: 'asc' },
      offset: 0,
      limit: 1,
    });
    return () => w.close();
  }, [watches, connectionId, workId]);
  const { view, error } = state;
  const first = view?.rows[0];
  if (first !== undefined && first.workId === workId) {
    seen.current = true;
    return { state: 'found', row: first, status: view?.statuses[0] ?? null, view, error };
  }
  if (error !== null && view === null) return { state: 'error', row: null, status: null, view, error };
  if (view === null || view.loading !== null)
    return { state: 'loading', row: null, status: null, view, error };
  return { state: seen.current ? 'gone' : 'absent', row: null, status: null, view, error };
}
