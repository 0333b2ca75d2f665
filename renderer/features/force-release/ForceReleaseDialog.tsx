/**
 * Force release with a typed confirmation. The dialog pins the token the
 * operator saw when opening it and sends it as `expectedToken`, so a lease
 * that changed hands meanwhile is refused (CONFLICT) instead of fencing a
 * holder nobody looked at.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useId, useRef, useState } from 'react';
import type { ConnectionInfo, LeaseRow } from '../../../src/console/common/index.ts';
import { judgedAt, leaseStatus } from '../../../src/console/common/index.ts';
import { ConsoleError } from '../../api/client.ts';
import { useServices } from '../../app/context.tsx';
import { ModalForm } from '../../app/ModalForm.tsx';
import { useNow } from '../../lib/clock.ts';
import { forceReleaseConflict } from '../fleet/conflict.ts';
import { ConfirmTypedField, LeaseFacts, ReasonField, RefusalNotice } from '../fleet/LeaseActionParts.tsx';
import { applyLeaseRow, refreshAfterConflict } from '../fleet/leaseCache.ts';

export interface ForceReleaseDialogProps {
  connection: ConnectionInfo;
  /** The row as the operator saw it when opening the dialog. */
  row: LeaseRow;
  /** What the reason field starts with (escalating a release request cites it); empty by default. */
  initialReason?: string | undefined;
  /** When the connection's heartbeats were last checked: the status is judged no later (status.ts `judgedAt`). */
  heartbeatsAsOf?: number | null | undefined;
  /** Cancelled or closed after a refusal. */
  onClose: () => void;
  /** Done: the lease as the backend returned it (its new token). */
  onReleased: (released: LeaseRow) => void;
}

export function ForceReleaseDialog({
  connection,
  row,
  initialReason,
  heartbeatsAsOf = null,
  onClose,
  onReleased,
}: ForceReleaseDialogProps) {
  const { client } = useServices();
  const queryClient = useQueryClient();
  const titleId = useId();
  const descId = useId();
  const [typed, setTyped] = useState('');
  const [reason, setReason] = useState(initialReason ?? '');
  const [conflict, setConflict] = useState<string | null>(null);
  // After a refusal, the lease as read again: the facts below show it, not the one the dialog opened on.
  const [fresh, setFresh] = useState<LeaseRow | null>(null);

  const workRef = useRef<HTMLInputElement>(null);
  const mutation = useMutation({
    mutationFn: () =>
      client.call('lease.forceRelease', {
        connectionId: connection.id,
        workId: row.workId,
        expectedToken: row.fencingToken,
        reason: reason.trim(),
      }),
    onSuccess: (released) => {
      applyLeaseRow(queryClient, connection.id, released);
      onReleased(released);
    },
    onError: async (err) => {
      if (err instanceof ConsoleError && err.code === 'CONFLICT') {
        const now = await refreshAfterConflict(client, queryClient, connection.id, row.workId);
        setFresh(now);
        setConflict(forceReleaseConflict(row.fencingToken, now));
      }
    },
  });

  const ready = typed === row.workId && reason.trim() !== '' && !mutation.isPending && conflict === null;
  // What the operator decides on, by the server's clock: is the holder alive?
  const serverNow = useNow() + connection.clockOffsetMs;
  const shown = fresh ?? row;
  const status = leaseStatus(shown, judgedAt(serverNow, heartbeatsAsOf), connection.thresholds);

  return (
    <ModalForm
      titleId={titleId}
      descId={descId}
      onClose={onClose}
      onSubmit={() => ready && mutation.mutate()}
      initialFocus={workRef}
    >
      <h2 id={titleId}>Force release this lease?</h2>
      <p id={descId}>
        The fencing token is bumped, so the holder below is fenced out: its next renew or checkpoint fails
        with FENCED. The action is recorded in the audit log with your reason.
      </p>
      <LeaseFacts
        connection={connection}
        row={shown}
        status={status}
        serverNow={serverNow}
        heartbeatsAsOf={heartbeatsAsOf}
        withCheckpoint
        tokenLabel={fresh === null ? 'Token being fenced' : 'Token now'}
      />
      <ConfirmTypedField
        id={`${titleId}-work`}
        label="Work ID"
        what="the work id"
        expected={row.workId}
        value={typed}
        onChange={setTyped}
        inputRef={workRef}
      />
      <ReasonField
        titleId={titleId}
        hint="Required; recorded in the audit log."
        value={reason}
        onChange={setReason}
      />
      <RefusalNotice conflict={conflict} error={mutation.error} />
      <div className="dialog-actions">
        <button type="button" onClick={onClose}>
          {conflict === null ? 'Cancel' : 'Close'}
        </button>
        <button type="submit" className="danger" disabled={!ready} aria-keyshortcuts="Control+Enter">
          Force release
        </button>
      </div>
    </ModalForm>
  );
}
