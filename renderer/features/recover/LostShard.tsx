/**
 * A Redis connection in error with DATASET_LOST: which buckets its key prefix lost and which of the
 * work items the console showed live in them (`connection.datasetLoss`, read from the server when
 * shown and on demand), and the recover action (`connection.recover`: admin role, refused
 * read-only; the button says why when it is not allowed). Recovery asks for the key prefix typed
 * and a reason, like force-release asks for the work id.
 */
import { useMutation, useQuery } from '@tanstack/react-query';
import { useId, useRef, useState } from 'react';
import type { ConnectionInfo, DatasetLossWire } from '../../../src/console/common/index.ts';
import { keys } from '../../api/queries.ts';
import { useServices } from '../../app/context.tsx';
import { usePermissions } from '../../app/hooks.ts';
import { ModalForm } from '../../app/ModalForm.tsx';
import { ErrorNotice } from '../../app/ui.tsx';
import { ConfirmTypedField, ReasonField } from '../fleet/LeaseActionParts.tsx';

const SHOWN_ITEMS = 20;

function buckets(list: readonly number[]): string {
  return list.map((b) => `b${b}`).join(' ');
}

/** True for the error this panel is about. */
export function isLostShard(conn: ConnectionInfo): boolean {
  return (conn.kind === 'redis' || conn.kind === 'redis-cluster') && conn.error?.code === 'DATASET_LOST';
}

export function LostShardPanel({ conn }: { conn: ConnectionInfo }) {
  const { client } = useServices();
  const headId = useId();
  const [open, setOpen] = useState(false);
  const loss = useQuery({
    queryKey: [...keys.connection(conn.id), 'datasetLoss'] as const,
    queryFn: () => client.call('connection.datasetLoss', { connectionId: conn.id }),
    staleTime: 0,
  });
  const perm = usePermissions(conn.id);
  const allowed = perm?.recover.allowed === true;
  const refusal = perm?.recover.allowed === false ? perm.recover.reason : null;
  const data = loss.data;
  return (
    <section className="lost-shard" aria-labelledby={headId}>
      <h3 id={headId}>{conn.name}: part of the data is lost</h3>
      {loss.error !== null && <ErrorNotice error={loss.error} />}
      {data !== undefined && <LossFacts loss={data} />}
      <p className="hint">
        Read from the server {loss.isFetching ? '…' : 'when shown'}.{' '}
        <button type="button" onClick={() => void loss.refetch()} disabled={loss.isFetching}>
          Check again
        </button>
      </p>
      <button
        type="button"
        className="danger"
        disabled={!allowed || data === undefined || (data.lost.length === 0 && !data.metaLost)}
        title={refusal ?? undefined}
        onClick={() => setOpen(true)}
      >
        Recover lost buckets…
      </button>
      {refusal !== null && <span className="hint"> {refusal}.</span>}
      {open && data !== undefined && (
        <RecoverDialog
          conn={conn}
          loss={data}
          onClose={() => {
            setOpen(false);
            void loss.refetch();
          }}
        />
      )}
    </section>
  );
}

function LossFacts({ loss }: { loss: DatasetLossWire }) {
  if (loss.lost.length === 0 && !loss.metaLost && loss.foreign.length === 0) {
    return <p>No bucket of key prefix {loss.keyPrefix} is lost now.</p>;
  }
  const more = loss.affectedTotal - Math.min(loss.affected.length, SHOWN_ITEMS);
  return (
    <dl className="fields compact">
      <dt>Key prefix</dt>
      <dd className="mono">{loss.keyPrefix}</dd>
      <dt>Lost</dt>
      <dd>
        {loss.lost.length} of {loss.buckets} buckets{' '}
        {loss.lost.length > 0 && <span className="mono">({buckets(loss.lost)})</span>}
        {loss.metaLost && ', and the meta key (no process can open the prefix until it is recovered)'}
      </dd>
      {loss.foreign.length > 0 && (
        <>
          <dt>Another dataset</dt>
          <dd className="mono">{buckets(loss.foreign)} (recover refuses: two datasets are never mixed)</dd>
        </>
      )}
      <dt>Affected work items</dt>
      <dd>
        {loss.affectedTotal === 0
          ? 'none of the rows shown (work items in the lost buckets fail DATASET_LOST)'
          : `${loss.affectedTotal} of the rows shown fail DATASET_LOST; the other work items work on`}
        {loss.affected.length > 0 && (
          <ul className="mono affected">
            {loss.affected.slice(0, SHOWN_ITEMS).map((w) => (
              <li key={w}>{w}</li>
            ))}
            {more > 0 && <li>… and {more} more</li>}
          </ul>
        )}
      </dd>
    </dl>
  );
}

function RecoverDialog({
  conn,
  loss,
  onClose,
}: {
  conn: ConnectionInfo;
  loss: DatasetLossWire;
  onClose: () => void;
}) {
  const { client } = useServices();
  const titleId = useId();
  const descId = useId();
  const [typed, setTyped] = useState('');
  const [reason, setReason] = useState('');
  const prefixRef = useRef<HTMLInputElement>(null);
  const mutation = useMutation({
    mutationFn: () =>
      client.call('connection.recover', {
        connectionId: conn.id,
        reason: reason.trim(),
        confirmKeyPrefix: typed,
      }),
  });
  const done = mutation.data;
  const ready = typed === loss.keyPrefix && reason.trim() !== '' && !mutation.isPending && done === undefined;
  return (
    <ModalForm
      titleId={titleId}
      descId={descId}
      onClose={onClose}
      onSubmit={() => ready && mutation.mutate()}
      initialFocus={prefixRef}
    >
      <h2 id={titleId}>Recover the lost buckets?</h2>
      <p id={descId}>
        The {loss.lost.length} lost bucket(s) {loss.metaLost ? 'and the meta key ' : ''}of key prefix{' '}
        <span className="mono">{loss.keyPrefix}</span> are written again, empty. Their work items start over
        without leases or checkpoints, with larger fencing tokens; a holder still running on one is fenced.
        Each bucket gets an audit entry with your reason.
      </p>
      {done === undefined ? (
        <>
          <ConfirmTypedField
            id={`${titleId}-prefix`}
            label="Key prefix"
            what="the key prefix"
            expected={loss.keyPrefix}
            value={typed}
            onChange={setTyped}
            inputRef={prefixRef}
          />
          <ReasonField
            titleId={titleId}
            hint="Required; recorded in the audit log."
            value={reason}
            onChange={setReason}
          />
        </>
      ) : (
        <p role="status">
          Recovered {done.recovered.length} bucket(s){done.metaRecreated ? ' and the meta key' : ''}
          {done.recovered.length > 0 && <span className="mono"> ({buckets(done.recovered)})</span>}.
        </p>
      )}
      {mutation.error !== null && <ErrorNotice error={mutation.error} />}
      <div className="dialog-actions">
        <button type="button" onClick={onClose}>
          {done === undefined ? 'Cancel' : 'Close'}
        </button>
        {done === undefined && (
          <button type="submit" className="danger" disabled={!ready} aria-keyshortcuts="Control+Enter">
            Recover
          </button>
        )}
      </div>
    </ModalForm>
  );
}
