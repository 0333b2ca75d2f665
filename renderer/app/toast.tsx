/**
 * Confirmations after an action ("Force-released job-17 · new token 43 · audit entry"): one live
 * region at the bottom of the page, read out by screen readers, each toast closed by its button
 * (or replaced by the next after a while; nothing depends on it staying).
 */
import { useSyncExternalStore } from 'react';
import { navigate, routeHref } from './router.ts';
import type { Route } from './routes.ts';

export interface ToastInput {
  text: string;
  /** A link to where the action is recorded. */
  link?: { label: string; route: Route } | undefined;
}
interface Toast extends ToastInput {
  id: number;
}

const SHOWN_MS = 20_000;
let toasts: readonly Toast[] = [];
let nextId = 1;
const listeners = new Set<() => void>();

function set(next: readonly Toast[]): void {
  toasts = next;
  for (const l of listeners) l();
}

export function showToast(input: ToastInput): void {
  const id = nextId++;
  set([...toasts.slice(-2), { ...input, id }]);
  setTimeout(() => dismiss(id), SHOWN_MS);
}

function dismiss(id: number): void {
  if (toasts.some((t) => t.id === id)) set(toasts.filter((t) => t.id !== id));
}

export function Toasts() {
  const shown = useSyncExternalStore(
    (cb) => {
      listeners.add(cb);
      return () => listeners.delete(cb);
    },
    () => toasts,
  );
  return (
    <section className="toasts" aria-label="Notifications">
      <div role="status" aria-live="polite">
        {shown.map((t) => (
          <div key={t.id} className="toast">
            <span>{t.text}</span>
            {t.link !== undefined && (
              <a
                href={routeHref(t.link.route)}
                onClick={(e) => {
                  e.preventDefault();
                  if (t.link !== undefined) navigate(t.link.route);
                  dismiss(t.id);
                }}
              >
                {t.link.label}
              </a>
            )}
            <button type="button" className="icon" aria-label="Dismiss" onClick={() => dismiss(t.id)}>
              ✕
            </button>
          </div>
        ))}
      </div>
    </section>
  );
}
