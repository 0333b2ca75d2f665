/** The `?` list: every keyboard shortcut of the console, in one modal dialog. */
import { useEffect, useId, useRef } from 'react';

export const SHORTCUTS: readonly { keys: string[]; what: string }[] = [
  { keys: ['/'], what: 'Search the fleet' },
  { keys: ['Enter'], what: 'In the search box: open the lease that matches (the first one when several do)' },
  { keys: ['↑', '↓', 'PgUp', 'PgDn', 'Home', 'End'], what: 'Move through the lease table' },
  { keys: ['Enter'], what: 'In the table: open the lease' },
  { keys: ['←', '→'], what: 'In the table header: move between columns (Enter sorts)' },
  { keys: ['f'], what: 'Force release the open lease (says why when it is not offered)' },
  {
    keys: ['r'],
    what: 'Request release of the open lease: the holder hands over cleanly (says why when it is not offered)',
  },
  { keys: ['Ctrl', 'Enter'], what: 'In the force-release and request-release dialogs: submit' },
  { keys: ['Esc'], what: 'Close the dialog, then the lease details' },
  { keys: ['?'], what: 'This list' },
];

export function ShortcutsDialog({ onClose }: { onClose: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (dialog !== null && !dialog.open) dialog.showModal();
    return () => dialog?.close();
  }, []);
  return (
    <dialog
      ref={ref}
      className="modal shortcuts"
      aria-labelledby={titleId}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
    >
      <h2 id={titleId}>Keyboard shortcuts</h2>
      <table className="plain">
        <caption className="sr-only">Keys and what they do</caption>
        <thead>
          <tr>
            <th scope="col">Keys</th>
            <th scope="col">Does</th>
          </tr>
        </thead>
        <tbody>
          {SHORTCUTS.map((s) => (
            <tr key={`${s.keys.join('+')} ${s.what}`}>
              <td className="nowrap">
                {s.keys.map((k, i) => (
                  <span key={k}>
                    {i > 0 && (s.keys[0] === 'Ctrl' ? ' + ' : ' ')}
                    <kbd>{k}</kbd>
                  </span>
                ))}
              </td>
              <td>{s.what}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <div className="dialog-actions">
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
    </dialog>
  );
}
