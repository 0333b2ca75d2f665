/**
 * Copies text to the clipboard: the async Clipboard API where the page may use it (a secure
 * context: https, localhost, Electron's app protocol), else a hidden textarea and the older
 * `execCommand('copy')`, which works from a click in more places. Resolves to whether it copied.
 */
export async function copyText(text: string): Promise<boolean> {
  try {
    if (window.isSecureContext && navigator.clipboard !== undefined) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // Refused (permission, no focus): try the fallback.
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.className = 'copy-buffer';
  const active = document.activeElement as HTMLElement | null;
  // Inside an open modal dialog when there is one, or the selection cannot be made.
  (document.querySelector('dialog[open]') ?? document.body).appendChild(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  area.remove();
  active?.focus();
  return ok;
}
