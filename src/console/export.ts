/**
 * Export of the fleet and of the audit log as CSV or JSON, for `fleet.export`
 * and `audit.export`. Plain TypeScript (no Node, no DOM): the service encodes
 * records with it and the page assembles the pages it received into one file.
 *
 * Every text value goes through {@link visible} first, as on the page: a work
 * id cannot carry a bidi override or a control character into a spreadsheet or
 * a terminal. JSON records are `visible()` of the JSON text, which still parses
 * to the stored values (its escapes are JSON escapes). CSV follows RFC 4180
 * (quotes doubled, CRLF between records) and OWASP's advice on CSV injection:
 * a field starting with `=`, `+`, `-`, `@`, a tab or a carriage return gets a
 * leading `'` so a spreadsheet never runs it as a formula, and a field holding
 * either delimiter (`,`, or `;`, which spreadsheets in many European locales
 * split on), a quote or a line break is quoted — so `x;=cmd…` stays one field
 * instead of becoming `x` and a formula.
 */
import type { AuditEntryWire, LeaseRow, LeaseStatus } from './api.ts';
import { visible } from './text.ts';

export type ExportFormat = 'csv' | 'json';

/** The fleet filter of the page (the same rules as the fleet view's, renderer/features/fleet/model.ts). */
export interface ExportFilter {
  /** Substring of work id or holder, case-insensitive. */
  search?: string | undefined;
  /** Holder id prefix. */
  holder?: string | undefined;
  /** Work id prefix. */
  workIdPrefix?: string | undefined;
  /** Only these statuses; none or empty: every status. */
  statuses?: readonly LeaseStatus[] | undefined;
}

/** Whether a row passes the text filters of `filter` (statuses are checked by the caller). */
export function textMatches(filter: ExportFilter, row: Pick<LeaseRow, 'workId' | 'holderId'>): boolean {
  const search = (filter.search ?? '').trim().toLowerCase();
  const holder = (filter.holder ?? '').trim();
  const prefix = (filter.workIdPrefix ?? '').trim();
  return (
    (prefix === '' || row.workId.startsWith(prefix)) &&
    (holder === '' || row.holderId.startsWith(holder)) &&
    (search === '' ||
      row.workId.toLowerCase().includes(search) ||
      row.holderId.toLowerCase().includes(search))
  );
}

/** One CSV field: shown safely, neutralised against formula injection, quoted when needed. */
export function csvField(value: string | number | boolean | null): string {
  if (value === null) return '';
  let text = typeof value === 'string' ? visible(value) : String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",;\t\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function csvRecord(values: ReadonlyArray<string | number | boolean | null>): string {
  return values.map(csvField).join(',');
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export const FLEET_COLUMNS = [
  'connection',
  'workId',
  'status',
  'holderId',
  'fencingToken',
  'expiresAt',
  'ttlMs',
  'stepId',
  'acquiredAt',
  'renewedAt',
  'checkpointedAt',
  'checkpointSize',
  'releasedAt',
  'ended',
  'cleanHandoff',
  'predecessorEnd',
] as const;

/** One lease as an export record (times ISO 8601 UTC, by the backend's clock). */
export function fleetRecord(
  format: ExportFormat,
  connection: string,
  row: LeaseRow,
  status: LeaseStatus,
): string {
  const values: Record<(typeof FLEET_COLUMNS)[number], string | number | boolean | null> = {
    connection,
    workId: row.workId,
    status,
    holderId: row.holderId,
    fencingToken: row.fencingToken,
    expiresAt: iso(row.expiresAt),
    ttlMs: row.ttlMs,
    stepId: row.stepId,
    acquiredAt: iso(row.acquiredAt),
    renewedAt: iso(row.renewedAt),
    checkpointedAt: iso(row.checkpointedAt),
    checkpointSize: row.checkpointSize,
    releasedAt: iso(row.releasedAt),
    ended: row.ended,
    cleanHandoff: row.cleanHandoff,
    predecessorEnd: row.predecessorEnd,
  };
  return format === 'csv' ? csvRecord(FLEET_COLUMNS.map((c) => values[c])) : visible(JSON.stringify(values));
}

export const AUDIT_COLUMNS = [
  'connection',
  'at',
  'action',
  'workId',
  'operator',
  'reason',
  'oldHolderId',
  'oldToken',
  'newToken',
  'batchId',
  'id',
] as const;

export function auditRecord(format: ExportFormat, connection: string, e: AuditEntryWire): string {
  const values: Record<(typeof AUDIT_COLUMNS)[number], string | null> = {
    connection,
    at: iso(e.at),
    action: e.action,
    workId: e.workId,
    operator: e.operator,
    reason: e.reason,
    oldHolderId: e.oldHolderId,
    oldToken: e.oldToken,
    newToken: e.newToken,
    batchId: e.batchId,
    id: e.id,
  };
  return format === 'csv' ? csvRecord(AUDIT_COLUMNS.map((c) => values[c])) : visible(JSON.stringify(values));
}

/** Whether an audit entry matches the audit view's text filter. */
export function auditMatches(search: string | undefined, e: AuditEntryWire): boolean {
  const q = (search ?? '').trim().toLowerCase();
  return (
    q === '' ||
    [e.workId, e.operator, e.reason, e.oldHolderId, e.batchId ?? ''].some((s) => s.toLowerCase().includes(q))
  );
}

/** The header line of a CSV export. */
export function csvHeader(columns: readonly string[]): string {
  return columns.join(',');
}

/** The file from the records of every page: CSV with a header, or one JSON array. */
export function assembleExport(
  format: ExportFormat,
  columns: readonly string[],
  records: readonly string[],
): string {
  if (format === 'csv') return `${[csvHeader(columns), ...records].join('\r\n')}\r\n`;
  return records.length === 0 ? '[]\n' : `[\n${records.join(',\n')}\n]\n`;
}
