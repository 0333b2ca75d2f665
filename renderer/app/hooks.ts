import { useQueries, useQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import type { ConnectionInfo } from '../../src/console/common/index.ts';
import { connectionsQuery, fleetQuery, infoQuery, sessionQuery } from '../api/queries.ts';
import type { FleetData, FleetSource } from '../features/fleet/model.ts';
import { useServices } from './context.tsx';
import type { Freshness } from './freshness.ts';

export function useConnections() {
  const { client } = useServices();
  return useQuery(connectionsQuery(client));
}

/** The signed-in identity and its permissions (see `console.session`). */
export function useSession() {
  const { client } = useServices();
  const ids = (useConnections().data ?? []).map((c) => c.id);
  return useQuery(sessionQuery(client, ids));
}

/** What the caller may do on one connection; undefined while the session loads. */
export function usePermissions(connectionId: string) {
  return useSession().data?.connections.find((c) => c.connectionId === connectionId);
}

export function useInfo() {
  const { client } = useServices();
  return useQuery(infoQuery(client));
}

export interface FleetEntry {
  connection: ConnectionInfo;
  data: FleetData | undefined;
  error: unknown;
  isLoading: boolean;
}

/** Every connection's fleet model (one snapshot each, then pushed events). */
export function useFleets(): FleetEntry[] {
  const { sync } = useServices();
  const connections = useConnections().data ?? [];
  const results = useQueries({ queries: connections.map((c) => fleetQuery(c.id, sync.load)) });
  return connections.map((connection, i) => {
    const r = results[i];
    return { connection, data: r?.data, error: r?.error ?? null, isLoading: r?.isLoading ?? true };
  });
}

/**
 * The fleets as the view passes see them. With `freshness`, a stale connection's statuses are
 * computed at its last confirmed backend time (see app/freshness.ts).
 */
export function toSources(entries: FleetEntry[], freshness?: Map<string, Freshness>): FleetSource[] {
  const out: FleetSource[] = [];
  for (const e of entries) {
    if (e.data === undefined) continue;
    const f = freshness?.get(e.connection.id);
    out.push({
      connectionId: e.connection.id,
      data: e.data,
      thresholds: e.connection.thresholds,
      clockOffsetMs: e.connection.clockOffsetMs,
      frozenAt: f?.stale === true ? (f.asOf ?? e.data.serverTime) : null,
    });
  }
  return out;
}

export function useConnectionMap(): Map<string, ConnectionInfo> {
  const connections = useConnections().data;
  return useMemo(() => new Map((connections ?? []).map((c) => [c.id, c])), [connections]);
}
