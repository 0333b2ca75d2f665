/**
 * Query keys and factories, general to specific, so one invalidation reaches
 * everything below it (`['connections', id]` covers that connection's fleet,
 * audit and checkpoints).
 */
import { queryOptions } from '@tanstack/react-query';
import { type FleetData, fromSnapshot } from '../features/fleet/model.ts';
import type { ConsoleClient } from './client.ts';

export const keys = {
  info: () => ['console', 'info'] as const,
  connections: () => ['connections'] as const,
  connection: (id: string) => ['connections', id] as const,
  fleet: (id: string) => ['connections', id, 'fleet'] as const,
  counts: (id: string) => ['connections', id, 'counts'] as const,
  audit: (id: string, workId: string | null) => ['connections', id, 'audit', workId] as const,
  checkpoint: (id: string, workId: string, token: string) =>
    ['connections', id, 'checkpoint', workId, token] as const,
};

export function infoQuery(client: ConsoleClient) {
  return queryOptions({
    queryKey: keys.info(),
    queryFn: () => client.call('console.info', {}),
    staleTime: Number.POSITIVE_INFINITY,
  });
}

/**
 * Who this page is signed in as and what they may do per connection. Keyed by
 * the connection ids, so a new connection set asks again.
 */
export function sessionQuery(client: ConsoleClient, connectionIds: string[]) {
  return queryOptions({
    queryKey: ['console', 'session', connectionIds.join(',')] as const,
    queryFn: () => client.call('console.session', {}),
    staleTime: Number.POSITIVE_INFINITY,
  });
}

/** Kept current by `connections` / `connection` events; fetched again only after a reconnect. */
export function connectionsQuery(client: ConsoleClient) {
  return queryOptions({
    queryKey: keys.connections(),
    queryFn: () => client.call('connections.list', {}),
    staleTime: Number.POSITIVE_INFINITY,
  });
}

/**
 * The fleet model of one connection. `load` is the sync layer's snapshot
 * loader (it merges events that arrived while the snapshot was in flight);
 * after that, pushed events keep the cache current and nothing polls.
 */
export function fleetQuery(connectionId: string, load: (id: string) => Promise<FleetData>) {
  return queryOptions({
    queryKey: keys.fleet(connectionId),
    queryFn: () => load(connectionId),
    staleTime: Number.POSITIVE_INFINITY,
    gcTime: 60_000,
    structuralSharing: false,
  });
}

export function plainSnapshotLoader(client: ConsoleClient) {
  return async (id: string) => fromSnapshot(await client.call('fleet.snapshot', { connectionId: id }));
}

/** Rates are per-minute buckets: polling every 10 s is plenty and cheap. `minutes`: the chart's window. */
export function countsQuery(client: ConsoleClient, connectionId: string, minutes: 15 | 60 | 1440 = 60) {
  return queryOptions({
    queryKey: [...keys.counts(connectionId), minutes] as const,
    queryFn: () => client.call('fleet.counts', { connectionId, minutes }),
    refetchInterval: 10_000,
  });
}

export function auditQuery(client: ConsoleClient, connectionId: string, workId: string | null) {
  return queryOptions({
    queryKey: keys.audit(connectionId, workId),
    queryFn: () =>
      client.call(
        'audit.list',
        workId === null ? { connectionId, limit: 500 } : { connectionId, workId, limit: 100 },
      ),
    refetchInterval: 15_000,
  });
}
