/**
 * One shared one-second ticker for every countdown on the page: components
 * re-render together once a second instead of each running its own timer.
 */
import { useSyncExternalStore } from 'react';

const listeners = new Set<() => void>();
let now = Date.now();
let timer: ReturnType<typeof setInterval> | null = null;

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  if (timer === null) {
    timer = setInterval(() => {
      now = Date.now();
      for (const l of listeners) l();
    }, 1000);
  }
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0 && timer !== null) {
      clearInterval(timer);
      timer = null;
    }
  };
}

/** This machine's clock, refreshed every second. Add a connection's clockOffsetMs for the server's. */
export function useNow(): number {
  return useSyncExternalStore(subscribe, () => now);
}
