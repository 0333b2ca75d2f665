/**
 * Opt-in desktop notifications for leases that become stuck. Permission is
 * asked only when the operator clicks the toggle; the choice is remembered
 * for this browser profile.
 */
import { useEffect, useMemo, useRef, useState } from 'react';
import { useFreshness } from '../../app/freshness.ts';
import { type FleetEntry, toSources } from '../../app/hooks.ts';
import { useNow } from '../../lib/clock.ts';
import { runSliced } from '../../lib/slices.ts';
import { summarizeJob } from '../fleet/model.ts';

const PREF = 'worklease.notifyStuck';
const supported = typeof window !== 'undefined' && 'Notification' in window;

export function useStuckNotifications(fleets: FleetEntry[]) {
  const [enabled, setEnabled] = useState(() => supported && localStorage.getItem(PREF) === '1');
  const [denied, setDenied] = useState(() => supported && Notification.permission === 'denied');
  const seen = useRef<Set<string> | null>(null);
  const now = useNow();
  // Read through a ref: fleets change with every event batch, the check runs once a second.
  const fleetsRef = useRef(fleets);
  fleetsRef.current = fleets;
  // A stale connection is judged at its last confirmed time: losing the link must not make leases "stuck".
  const freshness = useFreshness(useMemo(() => fleets.map((f) => f.connection), [fleets]));
  const freshnessRef = useRef(freshness);
  freshnessRef.current = freshness;

  useEffect(() => {
    if (!enabled || !supported || Notification.permission !== 'granted') {
      seen.current = null;
      return;
    }
    const fleets = fleetsRef.current;
    const sources = toSources(fleets, freshnessRef.current);
    // A pass over every lease of every connection: sliced, so 100 000 leases never hold the page.
    function* job(): Generator<void, { key: string; label: string }[]> {
      const found: { key: string; label: string }[] = [];
      for (const src of sources) {
        const name =
          fleets.find((f) => f.connection.id === src.connectionId)?.connection.name ?? src.connectionId;
        const { stuck } = yield* summarizeJob(src, now);
        for (const workId of stuck)
          found.push({ key: `${src.connectionId}\u0000${workId}`, label: `${name}: ${workId}` });
      }
      return found;
    }
    return runSliced(job(), (found) => {
      const stuckNow = new Set<string>();
      const fresh: string[] = [];
      for (const { key, label } of found) {
        stuckNow.add(key);
        if (seen.current !== null && !seen.current.has(key)) fresh.push(label);
      }
      // The first pass only learns what is already stuck: notify about changes, not the backlog.
      seen.current = stuckNow;
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
  }, [enabled, now]);

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
