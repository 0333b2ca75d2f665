/**
 * Actions on what the fleet's filters match, run by the console server over one snapshot of the
 * matching leases (src/console/common/view.ts): force release of all of them, and export.
 *
 * Force release counts the unreleased leases the filters match on each connection and asks the
 * operator to type that count (the server refuses with CONFLICT when it moved since); the server
 * then releases each lease
 * by compare-and-set on the token it had in the snapshot, so a lease that changed hands
 * meanwhile is refused on its own while the others go on, with one shared audit batch id.
 * Connections that are read-only, not current, or where the caller's role does not allow it are
 * left out, and the dialog says how many that was.
 */
import { useEffect, useId, useRef, useState } from 'react';
import type {
  ConnectionInfo,
  ExportFormat,
  Job,
  LeaseStatus,
  ViewFilter,
} from '../../../src/console/common/index.ts';
import { visible } from '../../../src/console/common/index.ts';
import { useServices } from '../../app/context.tsx';
import { useInfo, useSession } from '../../app/hooks.ts';
import { ModalForm } from '../../app/ModalForm.tsx';
import { ErrorNotice } from '../../app/ui.tsx';
import { ReasonField } from '../fleet/LeaseActionParts.tsx';
import type { FleetFilter, Sort } from '../fleet/model.ts';
import { type Segment, toViewFilter } from '../fleet/window.ts';
import { download, exportFleet, exportName } from './download.ts';

export interface FleetActionsProps {
  segments: readonly Segment[];
  /** The numbers are for earlier filters (the new answer is on its way): nothing is offered. */
  pending: boolean;
  connections: Map<string, ConnectionInfo>;
  /** Stale connections (their rows are not current: no force release). */
  frozen: ReadonlySet<string>;
  filter: FleetFilter;
  sort: Sort;
}

/** One connection's share of a bulk force release: what the filters match there, unreleased. */
interface Part {
  connection: ConnectionInfo;
  count: number;
}

/** Statuses a force release can act on: a lease already ended has no holder to fence. */
const UNENDED: readonly LeaseStatus[] = ['live', 'expiring', 'expired', 'stuck'];

/** The filter of a bulk force release: the view's, narrowed to leases not ended. */
export function bulkFilter(filter: FleetFilter): ViewFilter {
  const f = toViewFilter(filter);
  const statuses = f.statuses === undefined ? UNENDED : f.statuses.filter((s) => UNENDED.includes(s));
  return { ...f, statuses: [...statuses] };
}

export function FleetActions({ segments, pending, connections, frozen, filter }: FleetActionsProps) {
  const session = useSession().data;
  const consoleReadOnly = useInfo().data?.readOnly !== false;
  const [open, setOpen] = useState<Part[] | null>(null);
  const [counting, setCounting] = useState(false);
  const [countError, setCountError] = useState<unknown>(null);
  const [exporting, setExporting] = useState<ExportFormat | null>(null);
  const [exportError, setExportError] = useState<unknown>(null);
  const { client } = useServices();

  const allowed = new Set(
    (session?.connections ?? []).filter((c) => c.forceRelease.allowed).map((c) => c.connectionId),
  );
  const eligible: ConnectionInfo[] = [];
  let loading = false;
  let shown = 0;
  if (!consoleReadOnly) {
    for (const seg of segments) {
      const connection = connections.get(seg.connectionId);
      if (connection === undefined || connection.readOnly || !allowed.has(seg.connectionId)) continue;
      if (frozen.has(seg.connectionId) || seg.view === null) continue;
      if (seg.view.loading !== null) loading = true;
      shown += seg.view.total;
      eligible.push(connection);
    }
  }
  // Absent where no connection in view allows it at all (read-only, role); the detail pane says why.
  const offered =
    !consoleReadOnly &&
    segments.some((s) => allowed.has(s.connectionId) && connections.get(s.connectionId)?.readOnly === false);
  const why = pending
    ? 'The filters changed: waiting for what they match'
    : loading
      ? 'The fleet is still being read: what the filters match is not final yet'
      : shown === 0
        ? 'No lease matched here can be force-released (read-only, not current, or not allowed for your role)'
        : 'Force release the unreleased leases the filters match';

  /** Asks each connection how many unreleased leases the filters match now: the count the operator confirms. */
  const openDialog = async () => {
    setCounting(true);
    setCountError(null);
    try {
      const parts: Part[] = [];
      for (const connection of eligible) {
        const v = await client.call('fleet.view', {
          connectionId: connection.id,
          filter: bulkFilter(filter),
          limit: 1,
        });
        if (v.total > 0) parts.push({ connection, count: v.total });
      }
      setOpen(parts);
    } catch (err) {
      setCountError(err);
    } finally {
      setCounting(false);
    }
  };

  const runExport = async (format: ExportFormat) => {
    setExporting(format);
    setExportError(null);
    try {
      const text = await exportFleet(
        client,
        segments.map((s) => s.connectionId),
        format,
        filter,
      );
      download(exportName('fleet', format), format, text);
    } catch (err) {
      setExportError(err);
    } finally {
      setExporting(null);
    }
  };

  return (
    <fieldset className="fleet-actions">
      <legend className="sr-only">Actions on the leases the filters match</legend>
      {offered && (
        <button
          type="button"
          className="danger"
          disabled={shown === 0 || pending || loading || counting}
          title={why}
          onClick={() => void openDialog()}
        >
          {counting ? 'Counting…' : 'Force release…'}
        </button>
      )}
      <button
        type="button"
        disabled={exporting !== null}
        onClick={() => void runExport('csv')}
        title="Download the leases the filters match as CSV"
      >
        {exporting === 'csv' ? 'Exporting…' : 'Export CSV'}
      </button>
      <button
        type="button"
        disabled={exporting !== null}
        onClick={() => void runExport('json')}
        title="Download the leases the filters match as JSON"
      >
        {exporting === 'json' ? 'Exporting…' : 'Export JSON'}
      </button>
      {countError !== null && (
        <ErrorNotice error={countError} title="Could not count the leases to release" />
      )}
      {exportError !== null && <ErrorNotice error={exportError} title="The export failed" />}
      {open !== null && <BulkForceReleaseDialog parts={open} filter={filter} onClose={() => setOpen(null)} />}
    </fieldset>
  );
}

/** Follows the jobs' `job` events (progress pushed by the server). */
function useJobs(initial: Job[]): Job[] {
  const { client } = useServices();
  const [jobs, setJobs] = useState(initial);
  const ids = initial.map((j) => j.jobId).join(',');
  const first = useRef(initial);
  first.current = initial;
  // The ids name exactly the jobs followed.
  useEffect(() => {
    setJobs(first.current);
    if (ids === '') return;
    return client.subscribe((event) => {
      if (event.type !== 'job') return;
      setJobs((list) =>
        list.map((j) => (j.jobId === event.job.jobId && event.job.done >= j.done ? event.job : j)),
      );
    });
  }, [client, ids]);
  return jobs;
}

function BulkForceReleaseDialog({
  parts,
  filter,
  onClose,
}: {
  parts: Part[];
  filter: FleetFilter;
  onClose: () => void;
}) {
  const { client } = useServices();
  const titleId = useId();
  const descId = useId();
  const countRef = useRef<HTMLInputElement>(null);
  const [count, setCount] = useState('');
  const [reason, setReason] = useState('');
  const [submitting, setSubmitting] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [started, setStarted] = useState<Job[]>([]);
  const jobs = useJobs(started);
  const total = parts.reduce((n, p) => n + p.count, 0);
  const ready = count.trim() === String(total) && reason.trim() !== '' && !submitting && started.length === 0;

  const submit = async () => {
    if (!ready) return;
    setSubmitting(true);
    setError(null);
    const out: Job[] = [];
    try {
      for (const p of parts) {
        out.push(
          await client.call('lease.forceReleaseMatching', {
            connectionId: p.connection.id,
            filter: bulkFilter(filter),
            expectCount: p.count,
            reason: reason.trim(),
          }),
        );
      }
    } catch (err) {
      setError(err);
    } finally {
      setSubmitting(false);
      if (out.length > 0) setStarted(out);
    }
  };

  const done = jobs.reduce((n, j) => n + j.ok, 0);
  const refused = jobs.reduce((n, j) => n + j.failed, 0);
  const finished = jobs.length > 0 && jobs.every((j) => j.finished);

  return (
    <ModalForm
      titleId={titleId}
      descId={descId}
      onClose={onClose}
      onSubmit={() => void submit()}
      initialFocus={countRef}
      className="bulk-dialog"
    >
      <h2 id={titleId}>
        {jobs.length === 0
          ? `Force release ${total.toLocaleString()} leases?`
          : `Force release${finished ? '' : ' (running)'}: ${done.toLocaleString()} released, ${refused.toLocaleString()} refused`}
      </h2>
      {jobs.length === 0 ? (
        <>
          <p id={descId}>
            Every unreleased lease the filters match when you confirm is released by the console server, each
            only if its fencing token is still the one it had then; a lease that changes hands meanwhile is
            refused on its own. The count must still match when you confirm. Every release is recorded in the
            audit log with your reason and one shared batch id.
          </p>
          <dl className="fields compact">
            {parts.map((p) => (
              <div key={p.connection.id} className="bulk-conn">
                <dt>{p.connection.name}</dt>
                <dd>
                  {p.count.toLocaleString()} lease{p.count === 1 ? '' : 's'} match
                </dd>
              </div>
            ))}
          </dl>
          <div className="field">
            <label htmlFor={`${titleId}-count`}>Number of leases</label>
            <span className="field-hint" id={`${titleId}-count-hint`}>
              Type {total} to confirm.
            </span>
            <input
              id={`${titleId}-count`}
              aria-describedby={`${titleId}-count-hint`}
              type="text"
              inputMode="numeric"
              autoComplete="off"
              value={count}
              onChange={(e) => setCount(e.target.value)}
              aria-invalid={count !== '' && count.trim() !== String(total)}
              ref={countRef}
            />
          </div>
          <ReasonField
            titleId={titleId}
            hint="Required; recorded in the audit log. Ctrl+Enter submits."
            value={reason}
            onChange={setReason}
          />
        </>
      ) : (
        <section className="bulk-results" aria-label="Result per connection">
          <p id={descId} className="sr-only">
            {done} released, {refused} refused
          </p>
          {jobs.map((j) => (
            <div key={j.jobId} className="bulk-job">
              <p>
                <strong>{parts.find((p) => p.connection.id === j.connectionId)?.connection.name}</strong>:{' '}
                <progress max={Math.max(1, j.total)} value={j.done} aria-label="Progress" />{' '}
                {j.done.toLocaleString()} of {j.total.toLocaleString()} · {j.ok.toLocaleString()} released ·{' '}
                {j.failed.toLocaleString()} refused
              </p>
              {j.failures.length > 0 && (
                <ul className="bulk-failures">
                  {j.failures.map((f) => (
                    <li key={f.workId}>
                      <span className="mono">{visible(f.workId)}</span> <strong>{f.code}</strong>{' '}
                      {visible(f.message)}
                    </li>
                  ))}
                </ul>
              )}
            </div>
          ))}
        </section>
      )}
      {error !== null && <ErrorNotice error={error} />}
      <div className="dialog-actions">
        <button type="button" onClick={onClose}>
          {jobs.length === 0 ? 'Cancel' : 'Close'}
        </button>
        {jobs.length === 0 && (
          <button type="submit" className="danger" disabled={!ready}>
            {submitting ? 'Starting…' : `Force release ${total.toLocaleString()}`}
          </button>
        )}
      </div>
    </ModalForm>
  );
}
