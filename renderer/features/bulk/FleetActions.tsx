/**
 * Actions on the fleet view's filtered selection (the rows the current
 * filters show): force release of all of them at once, and export.
 *
 * Bulk force release pins each lease's token as shown when the dialog opens
 * and sends it as that lease's `expectedToken`: a lease that changed hands
 * meanwhile is refused on its own row (CONFLICT) while the others go on. The
 * operator types the count; one call per connection (`lease.forceReleaseMany`),
 * whose audit entries share a batch id. Leases already ended, on read-only or
 * not-current connections, or where the caller's role does not allow it are
 * not part of the selection.
 */
import { useQueryClient } from '@tanstack/react-query';
import { useId, useRef, useState } from 'react';
import type { ExportFormat } from '../../../src/console/common/index.ts';
import {
  type BulkResult,
  type ConnectionInfo,
  type LeaseRow,
  MAX_BULK_ITEMS,
  visible,
} from '../../../src/console/common/index.ts';
import { keys } from '../../api/queries.ts';
import { useServices } from '../../app/context.tsx';
import { useInfo, useSession } from '../../app/hooks.ts';
import { ModalForm } from '../../app/ModalForm.tsx';
import { ErrorNotice } from '../../app/ui.tsx';
import { ReasonField } from '../fleet/LeaseActionParts.tsx';
import type { FleetData, FleetFilter, FleetView } from '../fleet/model.ts';
import { upsertRow } from '../fleet/model.ts';
import { download, exportFleet, exportName } from './download.ts';

export interface FleetActionsProps {
  view: FleetView;
  fleets: Map<string, FleetData>;
  connections: Map<string, ConnectionInfo>;
  /** Stale connections (their rows are not current: no force release). */
  frozen: Map<string, number>;
  filter: FleetFilter;
  /** The connections the view shows. */
  scopeIds: readonly string[];
}

interface Picked {
  connection: ConnectionInfo;
  row: LeaseRow;
}

export function FleetActions({ view, fleets, connections, frozen, filter, scopeIds }: FleetActionsProps) {
  const session = useSession().data;
  const consoleReadOnly = useInfo().data?.readOnly !== false;
  const [open, setOpen] = useState<Picked[] | null>(null);
  const [exporting, setExporting] = useState<ExportFormat | null>(null);
  const [exportError, setExportError] = useState<unknown>(null);
  const { client } = useServices();

  const allowed = new Set(
    (session?.connections ?? []).filter((c) => c.forceRelease.allowed).map((c) => c.connectionId),
  );
  const picked: Picked[] = [];
  if (!consoleReadOnly) {
    for (let i = 0; i < view.workIds.length; i++) {
      const connectionId = view.connIds[i]!;
      const connection = connections.get(connectionId);
      if (connection === undefined || connection.readOnly || !allowed.has(connectionId)) continue;
      if (frozen.has(connectionId)) continue;
      const row = fleets.get(connectionId)?.rows.get(view.workIds[i]!);
      if (row !== undefined && row.ended === null) picked.push({ connection, row });
    }
  }
  // Absent where no connection in view allows it at all (read-only, role); the detail pane says why.
  const offered =
    !consoleReadOnly && scopeIds.some((id) => allowed.has(id) && connections.get(id)?.readOnly === false);
  const tooMany = picked.length > MAX_BULK_ITEMS;
  const why =
    picked.length === 0
      ? 'No lease shown can be force-released here (ended, read-only, not current, or not allowed for your role)'
      : tooMany
        ? `At most ${MAX_BULK_ITEMS.toLocaleString()} leases at once: narrow the filter`
        : `Force release the ${picked.length.toLocaleString()} unreleased leases the filters show`;

  const runExport = async (format: ExportFormat) => {
    setExporting(format);
    setExportError(null);
    try {
      const text = await exportFleet(client, scopeIds, format, filter);
      download(exportName('fleet', format), format, text);
    } catch (err) {
      setExportError(err);
    } finally {
      setExporting(null);
    }
  };

  return (
    <fieldset className="fleet-actions">
      <legend className="sr-only">Actions on the leases shown</legend>
      {offered && (
        <button
          type="button"
          className="danger"
          disabled={picked.length === 0 || tooMany}
          title={why}
          onClick={() => setOpen(picked)}
        >
          Force release {picked.length.toLocaleString()}…
        </button>
      )}
      <button
        type="button"
        disabled={exporting !== null}
        onClick={() => void runExport('csv')}
        title="Download the leases the filters show as CSV"
      >
        {exporting === 'csv' ? 'Exporting…' : 'Export CSV'}
      </button>
      <button
        type="button"
        disabled={exporting !== null}
        onClick={() => void runExport('json')}
        title="Download the leases the filters show as JSON"
      >
        {exporting === 'json' ? 'Exporting…' : 'Export JSON'}
      </button>
      {exportError !== null && <ErrorNotice error={exportError} title="The export failed" />}
      {open !== null && <BulkForceReleaseDialog picked={open} onClose={() => setOpen(null)} />}
    </fieldset>
  );
}

interface RowOutcome extends BulkResult {
  connection: ConnectionInfo;
  oldToken: string;
}

function BulkForceReleaseDialog({ picked, onClose }: { picked: Picked[]; onClose: () => void }) {
  const { client } = useServices();
  const queryClient = useQueryClient();
  const titleId = useId();
  const descId = useId();
  const countRef = useRef<HTMLInputElement>(null);
  const [count, setCount] = useState('');
  const [reason, setReason] = useState('');
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [outcome, setOutcome] = useState<RowOutcome[] | null>(null);

  const byConnection = new Map<string, Picked[]>();
  for (const p of picked) {
    const list = byConnection.get(p.connection.id) ?? [];
    list.push(p);
    byConnection.set(p.connection.id, list);
  }
  const ready =
    count.trim() === String(picked.length) && reason.trim() !== '' && !pending && outcome === null;

  const submit = async () => {
    if (!ready) return;
    setPending(true);
    setError(null);
    const rows: RowOutcome[] = [];
    try {
      for (const list of byConnection.values()) {
        const connection = list[0]!.connection;
        const out = await client.call('lease.forceReleaseMany', {
          connectionId: connection.id,
          items: list.map((p) => ({ workId: p.row.workId, expectedToken: p.row.fencingToken })),
          reason: reason.trim(),
          confirmCount: list.length,
        });
        out.results.forEach((r, i) => {
          rows.push({ ...r, connection, oldToken: list[i]!.row.fencingToken });
          if (r.row !== undefined) {
            const released = r.row;
            queryClient.setQueryData<FleetData>(keys.fleet(connection.id), (data) =>
              data === undefined ? data : upsertRow(data, released),
            );
          }
        });
        void queryClient.invalidateQueries({ queryKey: ['connections', connection.id, 'audit'] });
      }
    } catch (err) {
      setError(err);
    } finally {
      setPending(false);
      if (rows.length > 0) setOutcome(rows);
    }
  };

  const done = outcome?.filter((r) => r.ok).length ?? 0;
  const refused = (outcome?.length ?? 0) - done;

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
        {outcome === null
          ? `Force release ${picked.length.toLocaleString()} leases?`
          : `Force release: ${done.toLocaleString()} released, ${refused.toLocaleString()} refused`}
      </h2>
      {outcome === null ? (
        <>
          <p id={descId}>
            Each lease's fencing token is bumped, so its holder is fenced out. Each one is released only if
            its token is still the one shown now; a lease that changed hands since is refused on its own row.
            Every release is recorded in the audit log with your reason and one shared batch id.
          </p>
          <dl className="fields compact">
            {[...byConnection.values()].map((list) => (
              <div key={list[0]!.connection.id} className="bulk-conn">
                <dt>{list[0]!.connection.name}</dt>
                <dd>
                  {list.length.toLocaleString()} lease{list.length === 1 ? '' : 's'}, e.g.{' '}
                  <span className="mono">{visible(list[0]!.row.workId)}</span>
                </dd>
              </div>
            ))}
          </dl>
          <div className="field">
            <label htmlFor={`${titleId}-count`}>Number of leases</label>
            <span className="field-hint" id={`${titleId}-count-hint`}>
              Type {picked.length} to confirm.
            </span>
            <input
              id={`${titleId}-count`}
              aria-describedby={`${titleId}-count-hint`}
              type="text"
              inputMode="numeric"
              autoComplete="off"
              value={count}
              onChange={(e) => setCount(e.target.value)}
              aria-invalid={count !== '' && count.trim() !== String(picked.length)}
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
        <section
          className="bulk-results"
          aria-label="Result per lease"
          // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard (axe scrollable-region-focusable)
          tabIndex={0}
        >
          <p id={descId} className="sr-only">
            {done} released, {refused} refused
          </p>
          <table className="bulk-table">
            <thead>
              <tr>
                <th scope="col" className="bulk-cell bulk-w-id">
                  Work ID
                </th>
                <th scope="col" className="bulk-cell bulk-w-conn">
                  Connection
                </th>
                <th scope="col" className="bulk-cell">
                  Result
                </th>
              </tr>
            </thead>
            <tbody>
              {outcome.map((r) => (
                <tr key={`${r.connection.id}\u0000${r.workId}`}>
                  <td className="bulk-cell mono">{visible(r.workId)}</td>
                  <td className="bulk-cell">{r.connection.name}</td>
                  <td className={`bulk-cell ${r.ok ? 'bulk-ok' : 'bulk-refused'}`}>
                    {r.ok ? (
                      <>
                        released · token {r.oldToken} → <span className="mono">{r.row?.fencingToken}</span>
                      </>
                    ) : (
                      <>
                        <strong>{r.error?.code}</strong> {visible(r.error?.message ?? '')}
                      </>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
      {error !== null && <ErrorNotice error={error} />}
      <div className="dialog-actions">
        <button type="button" onClick={onClose}>
          {outcome === null ? 'Cancel' : 'Close'}
        </button>
        {outcome === null && (
          <button type="submit" className="danger" disabled={!ready}>
            {pending ? 'Releasing…' : `Force release ${picked.length.toLocaleString()}`}
          </button>
        )}
      </div>
    </ModalForm>
  );
}
