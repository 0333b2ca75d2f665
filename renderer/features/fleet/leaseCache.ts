/**
 * What an action on one lease (force release, request release) does to the page's caches: the
 * row the backend returned replaces the cached one, and the connection's audit is read again.
 */
import type { QueryClient } from '@tanstack/react-query';
import type { LeaseRow } from '../../../src/console/api.ts';
import type { ConsoleClient } from '../../api/client.ts';
import { keys } from '../../api/queries.ts';
import { type FleetData, upsertRow } from './model.ts';

/** Puts the backend's row into the connection's fleet cache and refreshes its audit. */
export function applyLeaseRow(queryClient: QueryClient, connectionId: string, row: LeaseRow): void {
  queryClient.setQueryData<FleetData>(keys.fleet(connectionId), (data) =>
    data === undefined ? data : upsertRow(data, row),
  );
  void queryClient.invalidateQueries({ queryKey: ['connections', connectionId, 'audit'] });
}

/**
 * After a CONFLICT: reads the lease again and applies it, so the page shows what changed; returns
 * its token now, or null when it is gone or could not be read (the explanation stands without it).
 */
export async function refreshAfterConflict(
  client: ConsoleClient,
  queryClient: QueryClient,
  connectionId: string,
  workId: string,
): Promise<string | null> {
  try {
    const fresh = await client.call('lease.get', { connectionId, workId });
    if (fresh === null) return null;
    applyLeaseRow(queryClient, connectionId, fresh);
    return fresh.fencingToken;
  } catch {
    return null;
  }
}
