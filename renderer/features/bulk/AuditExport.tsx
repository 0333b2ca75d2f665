/** Export buttons of the audit view: the entries its filter shows, per connection newest first. */
import { useState } from 'react';
import type { ExportFormat } from '../../../src/console/common/index.ts';
import { useServices } from '../../app/context.tsx';
import { ErrorNotice } from '../../app/ui.tsx';
import { download, exportAudit, exportName } from './download.ts';

export function AuditExport({ connectionIds, search }: { connectionIds: readonly string[]; search: string }) {
  const { client } = useServices();
  const [exporting, setExporting] = useState<ExportFormat | null>(null);
  const [error, setError] = useState<unknown>(null);
  const run = async (format: ExportFormat) => {
    setExporting(format);
    setError(null);
    try {
      download(exportName('audit', format), format, await exportAudit(client, connectionIds, format, search));
    } catch (err) {
      setError(err);
    } finally {
      setExporting(null);
    }
  };
  return (
    <fieldset className="fleet-actions">
      <legend className="sr-only">Export the audit log</legend>
      {(['csv', 'json'] as const).map((format) => (
        <button
          key={format}
          type="button"
          disabled={exporting !== null || connectionIds.length === 0}
          onClick={() => void run(format)}
          title={`Download the audit entries the filter shows as ${format.toUpperCase()}`}
        >
          {exporting === format ? 'Exporting…' : `Export ${format.toUpperCase()}`}
        </button>
      ))}
      {error !== null && <ErrorNotice error={error} title="The export failed" />}
    </fieldset>
  );
}
