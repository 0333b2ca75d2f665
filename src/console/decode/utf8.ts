/**
 * Text tests shared by the page decoder and the format detector: strict UTF-8, and whether text
 * reads as text rather than binary that happens to be valid UTF-8.
 */

/**
 * Text with more than this fraction of control characters (other than tab, newline, carriage
 * return) is binary: a hex dump or a binary decoder says more about it.
 */
const MAX_CONTROL_FRACTION = 0.05;

/** Strict UTF-8 (a BOM kept visible, not eaten); null when the bytes are not UTF-8. */
export function strictUtf8(bytes: Uint8Array): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
}

export function isControl(code: number): boolean {
  return (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) || (code >= 0x7f && code <= 0x9f);
}

/** No NUL, and at most 5 % other control characters. */
export function mostlyPrintable(text: string): boolean {
  let controls = 0;
  let total = 0;
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (code === 0) return false;
    if (isControl(code)) controls++;
    total++;
  }
  return controls <= total * MAX_CONTROL_FRACTION;
}

/** No control character at all but tab, newline and carriage return: text beyond doubt. */
export function cleanText(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (isControl(text.charCodeAt(i))) return false;
  return true;
}

/** The JSON value of a text (surrounding white space ignored); undefined when it is not JSON. */
export function parseJson(text: string): { value: unknown } | undefined {
  const trimmed = text.trim();
  if (trimmed.length === 0) return undefined;
  try {
    return { value: JSON.parse(trimmed) as unknown };
  } catch {
    return undefined;
  }
}
