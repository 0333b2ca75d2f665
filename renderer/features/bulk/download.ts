/**
 * Exports through the console API (so the same code runs over HTTP and over
 * Electron IPC), assembled into one file in the page and handed to the
 * browser as a download. The fleet is read in pages of at most 5000 snapshot
 * rows (`fleet.export`), all from the same snapshot; when the server says the
 * snapshot moved on, the export starts again (a few times at most).
 */

import type { LeaseStatus, Result } from '../../../src/console/common/index.ts';
import {
  AUDIT_COLUMNS,
  assembleExport,
  type ExportFormat,
  FLEET_COLUMNS,
} from '../../../src/console/common/index.ts';
import type { ConsoleClient } from '../../api/client.ts';

export interface FleetExportFilter {
  search: string;
  holder: string;
  workIdPrefix: string;
  statuses: ReadonlySet<LeaseStatus>;
}

const RESTARTS = 3;

async function fleetRecords(
  client: ConsoleClient,
  connectionId: string,
  format: ExportFormat,
  filter: FleetExportFilter,
): Promise<string[]> {
  const wire = {
    search: filter.search,
    holder: filter.holder,
    workIdPrefix: filter.workIdPrefix,
    statuses: [...filter.statuses],
  };
  for (let attempt = 0; ; attempt++) {
    const records: string[] = [];
    let offset: number | null = 0;
    let seq: number | undefined;
    let statusAt: number | undefined;
    let moved = false;
    while (offset !== null) {
      const page: Result<'fleet.export'> = await client.call('fleet.export', {
        connectionId,
        format,
        filter: wire,
        offset,
        ...(seq === undefined ? {} : { seq }),
        ...(statusAt === undefined ? {} : { statusAt }),
      });
      if (seq !== undefined && page.seq !== seq) {
        moved = true;
        break;
      }
      seq = page.seq;
      statusAt = page.statusAt;
      records.push(...page.records);
      offset = page.nextOffset;
    }
    if (!moved || attempt >= RESTARTS) return records;
  }
}

/** The filtered fleet of these connections as one file's text. */
export async function exportFleet(
  client: ConsoleClient,
  connectionIds: readonly string[],
  format: ExportFormat,
  filter: FleetExportFilter,
): Promise<string> {
  const records: string[] = [];
  for (const id of connectionIds) records.push(...(await fleetRecords(client, id, format, filter)));
  return assembleExport(format, FLEET_COLUMNS, records);
}

/** The audit log of these connections (newest first per connection) as one file's text. */
export async function exportAudit(
  client: ConsoleClient,
  connectionIds: readonly string[],
  format: ExportFormat,
  search: string,
): Promise<string> {
  const records: string[] = [];
  for (const id of connectionIds) {
    const out = await client.call('audit.export', { connectionId: id, format, search });
    records.push(...out.records);
  }
  return assembleExport(format, AUDIT_COLUMNS, records);
}

/** Hands `text` to the browser as a file download. */
export function download(name: string, format: ExportFormat, text: string): void {
  const type = format === 'csv' ? 'text/csv;charset=utf-8' : 'application/json;charset=utf-8';
  saveBlob(name, new Blob([text], { type }));
}

/** Hands a file's content to the browser as a download named `name`. */
export function saveBlob(name: string, blob: Blob): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** `worklease-fleet-2026-12-01T09-30-46Z.csv` */
export function exportName(what: 'fleet' | 'audit', format: ExportFormat, at = new Date()): string {
  return `worklease-${what}-${at.toISOString().slice(0, 19).replaceAll(':', '-')}Z.${format}`;
}
