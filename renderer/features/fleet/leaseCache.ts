/**
 * What an action on one lease (force release, request release) does to the page's caches: the
 * row the backend returned replaces the cached one, and the connection's audit is read again.
 */
import type { QueryClient } from '@tanstack/react-query';
import type { LeaseRow } from '../../../src/console/common/index.ts';
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
 * the lease as it is now, or null when it is gone or could not be read (the explanation stands
 * without it). The dialogs word the refusal from it: a token that moved because the lease was
 * force-released or released since is said as such, not as a change of hands.
 */
export async function refreshAfterConflict(
  client: ConsoleClient,
  queryClient: QueryClient,
  connectionId: string,
  workId: string,
): Promise<LeaseRow | null> {
  try {
    const fresh = await client.call('lease.get', { connectionId, workId });
    if (fresh === null) return null;
    applyLeaseRow(queryClient, connectionId, fresh);
    return fresh;
  } catch {
    return null;
  }
}
