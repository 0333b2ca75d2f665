import { useEffect, useState } from 'react';
import { copyText } from '../lib/copy.ts';

/** A small "Copy" button beside a value; says "Copied" (or that it could not) for a moment. */
export function CopyButton({
  text,
  what,
  label = 'Copy',
}: {
  text: string | (() => string);
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
        void copyText(typeof text === 'function' ? text() : text).then((ok) =>
          setState(ok ? 'copied' : 'failed'),
        );
      }}
    >
      {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed' : label}
      <span className="sr-only"> {what}</span>
    </button>
  );
}
