/**
 * Opt-in desktop notifications for leases that become stuck. Permission is
 * asked only when the operator clicks the toggle; the choice is remembered
 * for this browser profile.
 */
import { useEffect, useRef, useState } from 'react';
import { useServices } from '../../app/context.tsx';
import { useConnections } from '../../app/hooks.ts';

const PREF = 'worklease.notifyStuck';
const supported = typeof window !== 'undefined' && 'Notification' in window;
/** Stuck leases looked at per connection: the first this many by work id (a notification names a few). */
const STUCK_WINDOW = 200;

/**
 * Watches each connection's stuck leases (a view filtered to status stuck, judged by the console
 * server with its counts: a connection whose link is lost makes nothing stuck) and notifies of
 * leases that turn stuck. Nothing is watched while notifications are off.
 */
export function useStuckNotifications() {
  const [enabled, setEnabled] = useState(() => supported && localStorage.getItem(PREF) === '1');
  const [denied, setDenied] = useState(() => supported && Notification.permission === 'denied');
  const { watches } = useServices();
  const connections = useConnections().data ?? [];
  const names = useRef(new Map<string, string>());
  names.current = new Map(connections.map((c) => [c.id, c.name]));
  const idsKey = connections.map((c) => c.id).join('\u0000');

  // biome-ignore lint/correctness/useExhaustiveDependencies: idsKey names exactly the connections watched
  useEffect(() => {
    if (!enabled || !supported || Notification.permission !== 'granted') return;
    /** Per connection, the stuck work ids last seen; absent until its first answer (the backlog is not news). */
    const seen = new Map<string, Set<string>>();
    const opened = connections.map((c) => {
      const w = watches.open(({ view }) => {
        if (view === null || view.loading !== null) return;
        const now = new Set(view.rows.map((r) => r.workId));
        const before = seen.get(c.id);
        seen.set(c.id, now);
        if (before === undefined) return;
        const name = names.current.get(c.id) ?? c.id;
        const fresh = [...now].filter((id) => !before.has(id)).map((id) => `${name}: ${id}`);
        if (fresh.length === 1) {
          new Notification('Lease stuck', {
            body: `${fresh[0]} renews but makes no progress.`,
            tag: 'worklease-stuck',
          });
        } else if (fresh.length > 1) {
          new Notification(`${fresh.length} leases stuck`, {
            body: `${fresh.slice(0, 3).join(', ')}${fresh.length > 3 ? ', …' : ''}`,
            tag: 'worklease-stuck',
          });
        }
      });
      w.set({
        connectionId: c.id,
        filter: { statuses: ['stuck'] },
        sort: { column: 'workId', dir: 'asc' },
        offset: 0,
        limit: STUCK_WINDOW,
      });
      return w;
    });
    return () => {
      for (const w of opened) w.close();
    };
  }, [enabled, idsKey, watches]);

  const toggle = async () => {
    if (!supported) return;
    if (enabled) {
      setEnabled(false);
      localStorage.setItem(PREF, '0');
      return;
    }
    const permission =
      Notification.permission === 'default'
        ? await Notification.requestPermission()
        : Notification.permission;
    setDenied(permission === 'denied');
    if (permission === 'granted') {
      setEnabled(true);
      localStorage.setItem(PREF, '1');
    }
  };
  return { supported, enabled, denied, toggle };
}

export function NotificationToggle({ state }: { state: ReturnType<typeof useStuckNotifications> }) {
  if (!state.supported) return null;
  return (
    <button
      type="button"
      className="toggle-btn"
      aria-pressed={state.enabled}
      onClick={() => void state.toggle()}
      title={state.denied ? 'Notifications are blocked for this page in the browser settings' : undefined}
    >
      Notify on stuck leases{state.denied ? ' (blocked)' : ''}
    </button>
  );
}
