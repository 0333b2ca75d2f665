/**
 * The open lease, read from its connection's index through a view watch (fleet/useFleetWindow.ts
 * `useLeaseWatch`), so it stays current whether or not its row is among those fetched for the
 * table. A work id with no lease says exactly that: never "it was pruned" for a lease that this
 * page never saw, and "still reading the fleet" while the index has not reached it.
 */
import type { ConnectionInfo, LeaseRow, LeaseStatus, ViewResult } from '../../../src/console/common/index.ts';
import { visible } from '../../../src/console/common/index.ts';
import type { Freshness } from '../../app/freshness.ts';
import { formatClockSeconds } from '../../lib/format.ts';
import { type LeaseLookup, useLeaseWatch } from '../fleet/useFleetWindow.ts';
import { DetailPane } from './DetailPane.tsx';

/** The lease as the fleet table's window holds it, when it is there. */
export interface TableLease {
  row: LeaseRow;
  status: LeaseStatus;
  view: ViewResult;
}

export interface LeaseDetailProps {
  connection: ConnectionInfo;
  workId: string;
  /**
   * The lease's row in the table's fetched window, if it is in it: then the pane shows that very
   * row and status (judged with the chips beside it), so pane, row and chips never disagree; the
   * pane's own watch answers a push apart from the table's.
   */
  fromTable: TableLease | null;
  localNow: number;
  freshness: Freshness | undefined;
  onClose: () => void;
  onReturnFocus?: (() => void) | undefined;
}

/** Why there is no row, in words. */
export function missingText(lease: LeaseLookup, connection: ConnectionInfo, workId: string): string {
  const id = `“${visible(workId)}”`;
  switch (lease.state) {
    case 'loading':
      return lease.view?.loading != null
        ? `Looking for ${id}: ${connection.name} is still being read (${lease.view.loading.read.toLocaleString()} leases so far).`
        : `Looking for ${id}…`;
    case 'absent':
      return `No lease with the work id ${id} exists on ${connection.name}.`;
    case 'gone': {
      const at = lease.view?.asOf;
      return `The lease ${id} left the fleet of ${connection.name}${at == null ? '' : ` (by ${formatClockSeconds(at)})`}: it was released and pruned, or the backend lost it.`;
    }
    case 'error':
      return `${id} cannot be read: ${lease.error?.message ?? 'the watch failed'}`;
    case 'found':
      return '';
  }
}

export function LeaseDetail({
  connection,
  workId,
  fromTable,
  localNow,
  freshness,
  onClose,
  onReturnFocus,
}: LeaseDetailProps) {
  const watched = useLeaseWatch(connection.id, workId);
  const lease: LeaseLookup =
    fromTable === null
      ? watched
      : { state: 'found', row: fromTable.row, status: fromTable.status, view: fromTable.view, error: null };
  return (
    <DetailPane
      connection={connection}
      workId={workId}
      row={lease.row}
      status={lease.status}
      missing={lease.state === 'found' ? undefined : missingText(lease, connection, workId)}
      localNow={localNow}
      freshness={freshness}
      heartbeatsAsOf={lease.view?.heartbeatsAsOf ?? null}
      onClose={onClose}
      onReturnFocus={onReturnFocus}
    />
  );
}
