import { COLUMNS, resetColumns, toggleColumn, useColumnPrefs } from './columns.ts';

/** Which columns the table shows (Work ID and Status always), and a reset of hidden columns and widths. */
export function ColumnsMenu({ showConnection }: { showConnection: boolean }) {
  const prefs = useColumnPrefs();
  const hideable = COLUMNS.filter((c) => c.fixed !== true && (c.key !== 'connection' || showConnection));
  return (
    <details className="columns-menu">
      <summary>Columns</summary>
      <fieldset>
        <legend className="sr-only">Columns shown</legend>
        {hideable.map((c) => (
          <label key={c.key}>
            <input
              type="checkbox"
              checked={!prefs.hidden.includes(c.key)}
              onChange={() => toggleColumn(c.key)}
            />{' '}
            {c.label}
          </label>
        ))}
        <p className="hint">Work ID and Status are always shown. Drag a header's right edge to resize.</p>
        <button type="button" onClick={resetColumns}>
          Reset columns
        </button>
      </fieldset>
    </details>
  );
}
