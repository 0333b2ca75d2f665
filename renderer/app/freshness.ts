/**
 * How current each connection's picture is, as the operator must read it.
 *
 * A connection is stale when the renderer cannot vouch for its rows: the link to the
 * console server is down, the server has been silent for {@link SILENT_MS} (it announces
 * every live connection about once a second), or the service itself says the connection
 * is not live (its backend stopped confirming the feed, fails, or errs). While stale,
 * statuses are computed at the last confirmed backend time (`frozenAt`), never by the
 * local clock running on: a lease its backend still holds must not turn "expired" on
 * screen because the console lost its link.
 */
import { useMemo, useSyncExternalStore } from 'react';
import type { ConnectionInfo } from '../../src/console/common/index.ts';
import type { TransportState } from '../api/client.ts';
import { SILENT_MS } from '../api/silence.ts';
import { useNow } from '../lib/clock.ts';
import { formatAgo, formatDuration } from '../lib/format.ts';
import { useServices } from './context.tsx';

export { SILENT_MS };

export interface Freshness {
  stale: boolean;
  /** The backend time the rows were last confirmed at (`syncedAt`); null before the first sync. */
  asOf: number | null;
  /** Why the rows are not current, in words; null while live. */
  reason: string | null;
}

export function freshnessOf(
  conn: ConnectionInfo,
  localNow: number,
  transport: TransportState,
  heardAt: number,
  syncedAt: number | null = conn.syncedAt,
): Freshness {
  const asOf = syncedAt;
  const silentMs = localNow - heardAt;
  let reason: string | null = null;
  if (transport !== 'open') reason = 'the console server cannot be reached';
  else if (silentMs > SILENT_MS)
    reason = `the console server has sent nothing for ${formatDuration(silentMs)}`;
  else {
    switch (conn.state) {
      case 'live':
        break;
      case 'stale':
        reason = 'the backend is not answering';
        break;
      case 'reconnecting':
        reason = 'the backend cannot be reached; retrying';
        break;
      case 'connecting':
        reason = 'connecting';
        break;
      case 'error':
        reason = 'the connection has an error';
        break;
      case 'closed':
        reason = 'the connection is closed';
        break;
    }
  }
  return { stale: reason !== null, asOf, reason };
}

/**
 * The backend's clock now, as far as this page can tell: this machine's clock (the shared ticker,
 * lib/clock.ts) plus the connection's measured offset. Every age of a freshness value on the page
 * (the stale note's "as of … ago", "heartbeats checked … ago" in the detail pane and on the
 * connections screen, the connection's "as of") counts from it, so they never disagree: the
 * detail pane once read "checked 1 s ago" at the frozen view time while the note said 11 s.
 */
export function backendNow(conn: Pick<ConnectionInfo, 'clockOffsetMs'>, localNow: number): number {
  return localNow + conn.clockOffsetMs;
}

/** How long ago (backend time) a freshness value was taken, in words: "12 s ago". */
export function ageOf(at: number, conn: Pick<ConnectionInfo, 'clockOffsetMs'>, localNow: number): string {
  return formatAgo(backendNow(conn, localNow) - at);
}

/** "live", "the backend is not answering · as of 12 s ago", …: a connection's freshness in words. */
export function freshnessText(conn: ConnectionInfo, f: Freshness, localNow: number): string {
  if (!f.stale) return 'live';
  const asOf = f.asOf === null ? 'never synced' : `as of ${ageOf(f.asOf, conn, localNow)}`;
  return `${f.reason ?? 'not current'} · ${asOf}`;
}

export function useTransportState(): TransportState {
  const { client } = useServices();
  return useSyncExternalStore(
    (cb) => client.onTransportState(cb),
    () => client.transportState,
  );
}

/**
 * Freshness of every given connection, re-evaluated every second, on every connection event, and
 * the moment a connection turns silent (api/silence.ts: not at the next tick, up to a second late).
 */
export function useFreshness(connections: readonly ConnectionInfo[]): Map<string, Freshness> {
  const { sync } = useServices();
  const transport = useTransportState();
  const tick = useNow();
  const silenceRev = useSyncExternalStore(sync.silence.subscribe, () => sync.silence.rev);
  // biome-ignore lint/correctness/useExhaustiveDependencies: tick and silenceRev are when to look again; the time read is the current one
  return useMemo(() => {
    // The current time, not the tick's: the silence watch fires between ticks.
    const now = Math.max(tick, Date.now());
    const m = new Map<string, Freshness>();
    for (const c of connections) {
      m.set(
        c.id,
        freshnessOf(c, now, transport, sync.silence.lastHeard(c.id), sync.syncedAt.get(c.id) ?? c.syncedAt),
      );
    }
    return m;
  }, [connections, tick, silenceRev, transport, sync]);
}
