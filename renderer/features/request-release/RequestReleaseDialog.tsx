/**
 * Request release: asks the holder to hand the lease over (docs/request-release.md). Nothing is
 * taken away: the holder hears of it from its next renew or checkpoint, saves and releases, and
 * the next holder starts with a clean handoff. Like force-release, the dialog pins the token the
 * operator saw and sends it as `expectedToken`, so a lease that changed hands meanwhile is
 * refused (CONFLICT) instead of asking a holder nobody looked at.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useId, useRef, useState } from 'react';
import type { ConnectionInfo, LeaseRow } from '../../../src/console/common/index.ts';
import { judgedAt, leaseStatus } from '../../../src/console/common/index.ts';
import { ConsoleError } from '../../api/client.ts';
import { useServices } from '../../app/context.tsx';
import { ModalForm } from '../../app/ModalForm.tsx';
import { requestReleaseConflict } from '../fleet/conflict.ts';
import { LeaseFacts, ReasonField, RefusalNotice } from '../fleet/LeaseActionParts.tsx';
import { applyLeaseRow, refreshAfterConflict } from '../fleet/leaseCache.ts';

export interface RequestReleaseDialogProps {
  connection: ConnectionInfo;
  /** The row as the operator saw it when opening the dialog. */
  row: LeaseRow;
  /** The backend's now: the local clock plus the connection's offset (frozen while stale). */
  serverNow: number;
  /** When the connection's heartbeats were last checked: the status is judged no later (status.ts `judgedAt`). */
  heartbeatsAsOf?: number | null | undefined;
  onClose: () => void;
  /** Done: the lease as the backend returned it (it carries the request). */
  onRequested: (requested: LeaseRow) => void;
}

export function RequestReleaseDialog({
  connection,
  row,
  serverNow,
  heartbeatsAsOf = null,
  onClose,
  onRequested,
}: RequestReleaseDialogProps) {
  const { client } = useServices();
  const queryClient = useQueryClient();
  const reasonRef = useRef<HTMLTextAreaElement>(null);
  const titleId = useId();
  const descId = useId();
  const [reason, setReason] = useState('');
  const [conflict, setConflict] = useState<string | null>(null);
  // After a refusal, the lease as read again: the facts below show it, not the one the dialog opened on.
  const [fresh, setFresh] = useState<LeaseRow | null>(null);

  const mutation = useMutation({
    mutationFn: () =>
      client.call('lease.requestRelease', {
        connectionId: connection.id,
        workId: row.workId,
        expectedToken: row.fencingToken,
        reason: reason.trim(),
      }),
    onSuccess: (requested) => {
      applyLeaseRow(queryClient, connection.id, requested);
      onRequested(requested);
    },
    onError: async (err) => {
      if (!(err instanceof ConsoleError && err.code === 'CONFLICT')) return;
      const now = await refreshAfterConflict(client, queryClient, connection.id, row.workId);
      setFresh(now);
      setConflict(requestReleaseConflict(err.details?.why, row.fencingToken, now));
    },
  });

  const ready = reason.trim() !== '' && !mutation.isPending && conflict === null;
  const shown = fresh ?? row;
  const status = leaseStatus(shown, judgedAt(serverNow, heartbeatsAsOf), connection.thresholds);
  const submit = () => {
    if (ready) mutation.mutate();
  };

  return (
    <ModalForm titleId={titleId} descId={descId} onClose={onClose} onSubmit={submit} initialFocus={reasonRef}>
      <h2 id={titleId}>Request release of this lease?</h2>
      <p id={descId}>
        The holder below is asked to hand the lease over: it hears of it on its next renew or checkpoint,
        saves its progress and releases, so the next holder starts with a clean handoff. Nothing is taken
        away; the token stays. Recorded in the audit log with your reason.
      </p>
      <LeaseFacts
        connection={connection}
        row={shown}
        status={status}
        serverNow={serverNow}
        heartbeatsAsOf={heartbeatsAsOf}
        tokenLabel="Token"
      />
      <ReasonField
        titleId={titleId}
        hint="Required; the holder and the audit log see it. Ctrl+Enter submits."
        value={reason}
        onChange={setReason}
        inputRef={reasonRef}
      />
      <RefusalNotice conflict={conflict} error={mutation.error} />
      <div className="dialog-actions">
        <button type="button" onClick={onClose}>
          {conflict === null ? 'Cancel' : 'Close'}
        </button>
        <button type="submit" className="primary" disabled={!ready} aria-keyshortcuts="Control+Enter">
          Request release
        </button>
      </div>
    </ModalForm>
  );
}
