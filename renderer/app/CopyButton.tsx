import { useEffect, useState } from 'react';
import { copyText } from '../lib/copy.ts';

/** A small "Copy" button beside a value; says "Copied" (or that it could not) for a moment. */
export function CopyButton({
  text,
  what,
  label = 'Copy',
}: {
  /** The text, or how to get it (a promise: fetched on click, e.g. a large value from the server). */
  text: string | (() => string | Promise<string>);
  /** Said to screen readers after the label: "Copy work id". */
  what: string;
  label?: string;
}) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  useEffect(() => {
    if (state === 'idle') return;
    const t = setTimeout(() => setState('idle'), 2000);
    return () => clearTimeout(t);
  }, [state]);
  return (
    <button
      type="button"
      className="copy"
      onClick={() => {
        void Promise.resolve(typeof text === 'function' ? text() : text)
          .then(copyText)
          .then(
            (ok) => setState(ok ? 'copied' : 'failed'),
            () => setState('failed'),
          );
      }}
    >
      {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed' : label}
      <span className="sr-only"> {what}</span>
    </button>
  );
}
