/**
 * The shell of the console's action dialogs (force release, request release, bulk force
 * release): a modal <dialog> opened on mount and closed on unmount, Escape closes through
 * `onClose`, and the form submits on Enter in a field or on Ctrl+Enter (⌘+Enter) from anywhere,
 * the reason's textarea included.
 */
import { type ReactNode, type RefObject, useEffect, useRef } from 'react';

export interface ModalFormProps {
  className?: string;
  titleId: string;
  descId: string;
  onClose: () => void;
  /** Called on submit; it decides itself whether the form is ready. */
  onSubmit: () => void;
  /** Focused once open: showModal focuses the first control (often a copy button), not where typing goes. */
  initialFocus?: RefObject<HTMLElement | null>;
  children: ReactNode;
}

export function ModalForm({
  className,
  titleId,
  descId,
  onClose,
  onSubmit,
  initialFocus,
  children,
}: ModalFormProps) {
  const ref = useRef<HTMLDialogElement>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: opened once, on mount; the focus target is a ref
  useEffect(() => {
    const dialog = ref.current;
    if (dialog !== null && !dialog.open) dialog.showModal();
    initialFocus?.current?.focus();
    return () => dialog?.close();
  }, []);
  return (
    <dialog
      ref={ref}
      className={className === undefined ? 'modal' : `modal ${className}`}
      aria-modal="true"
      aria-labelledby={titleId}
      aria-describedby={descId}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
    >
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          onSubmit();
        }}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
            e.preventDefault();
            onSubmit();
          }
        }}
      >
        {children}
      </form>
    </dialog>
  );
}
