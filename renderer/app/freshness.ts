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
import type { ConnectionInfo } from '../../src/console/api.ts';
import type { TransportState } from '../api/client.ts';
import { useNow } from '../lib/clock.ts';
import { formatDuration } from '../lib/format.ts';
import { useServices } from './context.tsx';

/** No event about a connection for this long, with the link up: the console server is not keeping us current. */
export const SILENT_MS = 3000;

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

export function useTransportState(): TransportState {
  const { client } = useServices();
  return useSyncExternalStore(
    (cb) => client.onTransportState(cb),
    () => client.transportState,
  );
}

/** Freshness of every given connection, re-evaluated every second and on every connection event. */
export function useFreshness(connections: readonly ConnectionInfo[]): Map<string, Freshness> {
  const { sync } = useServices();
  const transport = useTransportState();
  const now = useNow();
  return useMemo(() => {
    const m = new Map<string, Freshness>();
    for (const c of connections) {
      m.set(
        c.id,
        freshnessOf(
          c,
          now,
          transport,
          sync.heardAt.get(c.id) ?? sync.startedAt,
          sync.syncedAt.get(c.id) ?? c.syncedAt,
        ),
      );
    }
    return m;
  }, [connections, now, transport, sync]);
}
