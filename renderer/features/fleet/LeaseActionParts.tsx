/**
 * The parts the lease action dialogs (force release, request release, the bulk force release)
 * share: the facts of the lease the operator decides on, the reason field, and what the backend
 * refused with. One definition, so the dialogs name and show things the same way.
 */
import type { Ref } from 'react';
import type { ConnectionInfo, LeaseRow, LeaseStatus } from '../../../src/console/common/index.ts';
import { visible } from '../../../src/console/common/index.ts';
import { ConsoleError } from '../../api/client.ts';
import { CopyButton } from '../../app/CopyButton.tsx';
import { Time, useTimeMode } from '../../app/Time.tsx';
import { EnvBadge, ErrorNotice, StatusBadge } from '../../app/ui.tsx';
import { formatBytes, formatTime } from '../../lib/format.ts';

export interface LeaseFactsProps {
  connection: ConnectionInfo;
  row: LeaseRow;
  status: LeaseStatus;
  serverNow: number;
  heartbeatsAsOf: number | null;
  /** Also show the last checkpoint and its size (force release: what the next holder resumes from). */
  withCheckpoint?: boolean;
  /** The token's label ("Token", "Token being fenced"). */
  tokenLabel: string;
}

export function LeaseFacts({
  connection,
  row,
  status,
  serverNow,
  heartbeatsAsOf,
  withCheckpoint = false,
  tokenLabel,
}: LeaseFactsProps) {
  const zone = useTimeMode() === 'utc' ? 'utc' : 'local';
  return (
    <dl className="fields compact">
      <dt>Connection</dt>
      <dd>
        {connection.name} <EnvBadge env={connection.environment} />
      </dd>
      <dt>Work ID</dt>
      <dd className="mono">
        {visible(row.workId)} <CopyButton text={row.workId} what="work id" />
      </dd>
      <dt>Status</dt>
      <dd>
        <StatusBadge status={status} />
      </dd>
      <dt>Holder</dt>
      <dd className="mono">
        {visible(row.holderId)} <CopyButton text={row.holderId} what="holder" />
      </dd>
      <dt>Last heartbeat</dt>
      <dd>{row.renewedAt === null ? 'never renewed' : <Time at={row.renewedAt} serverNow={serverNow} />}</dd>
      {withCheckpoint && (
        <>
          <dt>Last checkpoint</dt>
          <dd>
            {row.checkpointedAt === null ? (
              'none'
            ) : (
              <>
                <Time at={row.checkpointedAt} serverNow={serverNow} />{' '}
                <span className="muted">({formatBytes(row.checkpointSize)})</span>
              </>
            )}
          </dd>
        </>
      )}
      <dt>Expires</dt>
      <dd>
        {/* An ended lease (the dialogs show the lease as read again after a refusal) has no countdown. */}
        {row.ended === null ? (
          <Time at={row.expiresAt} serverNow={serverNow} checkedAt={heartbeatsAsOf} expiry />
        ) : (
          <>
            {formatTime(row.expiresAt, zone)} <span className="muted">(ended)</span>
          </>
        )}
      </dd>
      <dt>{tokenLabel}</dt>
      <dd className="mono">
        {row.fencingToken} <CopyButton text={row.fencingToken} what="token" />
      </dd>
    </dl>
  );
}

export interface ReasonFieldProps {
  /** The dialog's title id; the field's ids derive from it. */
  titleId: string;
  hint: string;
  value: string;
  onChange: (value: string) => void;
  inputRef?: Ref<HTMLTextAreaElement> | undefined;
}

/** The required reason of an audited action. */
export function ReasonField({ titleId, hint, value, onChange, inputRef }: ReasonFieldProps) {
  return (
    <div className="field">
      <label htmlFor={`${titleId}-reason`}>Reason</label>
      <span className="field-hint" id={`${titleId}-reason-hint`}>
        {hint}
      </span>
      <textarea
        id={`${titleId}-reason`}
        aria-describedby={`${titleId}-reason-hint`}
        rows={3}
        required
        value={value}
        onChange={(e) => onChange(e.target.value)}
        ref={inputRef}
      />
    </div>
  );
}

export interface ConfirmTypedFieldProps {
  /** The field's id (its hint's id is `${id}-hint`). */
  id: string;
  label: string;
  /** What to type, named for the hint: "the work id", "the key prefix". */
  what: string;
  /** The text that confirms. */
  expected: string;
  value: string;
  onChange: (value: string) => void;
  inputRef?: Ref<HTMLInputElement> | undefined;
}

/** An irreversible action confirmed by typing what it acts on. */
export function ConfirmTypedField({
  id,
  label,
  what,
  expected,
  value,
  onChange,
  inputRef,
}: ConfirmTypedFieldProps) {
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <span className="field-hint" id={`${id}-hint`}>
        Type {what} to confirm. Ctrl+Enter submits.
      </span>
      <input
        id={id}
        aria-describedby={`${id}-hint`}
        type="text"
        autoComplete="off"
        spellCheck={false}
        value={value}
        onChange={(e) => onChange(e.target.value)}
        aria-invalid={value !== '' && value !== expected}
        ref={inputRef}
      />
    </div>
  );
}

/** The CONFLICT explained in words, or any other error of the action as it came. */
export function RefusalNotice({ conflict, error }: { conflict: string | null; error: Error | null }) {
  if (conflict !== null) {
    return (
      <div className="error-notice" role="alert">
        {conflict}
      </div>
    );
  }
  if (error === null || (error instanceof ConsoleError && error.code === 'CONFLICT')) return null;
  return <ErrorNotice error={error} />;
}
