/**
 * The live address: one store, read with {@link useRoute}, changed with
 * {@link navigate}. The grammar of routes is in ./routes.ts (no DOM there, so
 * it is tested in Node).
 *
 * Over http(s) the route is the path and query. Electron loads the page from
 * its own app protocol, where a path names a file, not a route: there the
 * same route lives in the fragment (`index.html#/c/…/lease/…`), which never
 * reaches a protocol handler. The choice is made from the page's protocol.
 */
import { useSyncExternalStore } from 'react';
import { formatRoute, parseFragment, parseRoute, type Route } from './routes.ts';

/** Pages from a file or the app's own protocol (Electron) route in the fragment. */
function hashMode(): boolean {
  return window.location.protocol !== 'http:' && window.location.protocol !== 'https:';
}

function readLocation(): Route {
  const loc = window.location;
  if (!hashMode()) return parseRoute(loc.pathname, loc.search);
  return parseFragment(loc.hash);
}

/** What goes to history.pushState for a route. */
export function routeHref(route: Route): string {
  return hashMode() ? `${window.location.pathname}#${formatRoute(route)}` : formatRoute(route);
}

let current: Route | null = null;
let currentHref = '';
const listeners = new Set<() => void>();

function refresh(): void {
  current = readLocation();
  currentHref = formatRoute(current);
  for (const l of listeners) l();
}

function subscribe(listener: () => void): () => void {
  if (listeners.size === 0) {
    window.addEventListener('popstate', refresh);
    window.addEventListener('hashchange', refresh);
  }
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0) {
      window.removeEventListener('popstate', refresh);
      window.removeEventListener('hashchange', refresh);
    }
  };
}

function snapshot(): Route {
  if (current === null) {
    current = readLocation();
    currentHref = formatRoute(current);
  }
  return current;
}

export function useRoute(): Route {
  return useSyncExternalStore(subscribe, snapshot);
}

export function getRoute(): Route {
  return snapshot();
}

/**
 * Goes to a route: a new history entry (`push`, the default: views, leases,
 * filters chosen by a click), or the same entry updated (`replace`: typing in
 * a search box, so Back does not replay every keystroke).
 */
export function navigate(route: Route, mode: 'push' | 'replace' = 'push'): void {
  const href = formatRoute(route);
  snapshot();
  if (href === currentHref) return;
  if (mode === 'push') window.history.pushState(null, '', routeHref(route));
  else window.history.replaceState(null, '', routeHref(route));
  refresh();
}
