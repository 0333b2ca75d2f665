/**
 * Text from the fleet (work ids, holder ids, operator names, reasons) shown
 * to a person: every character that could act instead of being seen is
 * replaced by its escape, so a name cannot move the terminal's cursor, clear
 * the screen, forge an output line, or reorder what is shown (bidi
 * overrides), and two different ids never look the same because of an
 * invisible character. Only the display changes; the stored bytes stay as
 * they were (lookups use the raw string).
 *
 * Escaped: control characters (C0, DEL, C1: `\p{Cc}`), format characters
 * (`\p{Cf}`: bidi embeddings/overrides/isolates U+202A–E, U+2066–9, marks
 * U+200E/F, U+061C, zero-width U+200B–D, U+2060, BOM U+FEFF, soft hyphen,
 * tags), line/paragraph separators (U+2028/9), and lone surrogates. The form
 * is `\uXXXX` per UTF-16 code unit, which is also a valid JSON escape: JSON
 * text passed through {@link visible} still parses to the same value.
 *
 * Plain TypeScript (no Node, no DOM): the renderer and the CLI share it.
 */

const UNSAFE =
  /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/gu;
const UNSAFE_TEST = new RegExp(UNSAFE.source, 'u');

function escapeUnits(ch: string): string {
  let out = '';
  for (let i = 0; i < ch.length; i++) {
    out += `\\u${ch.charCodeAt(i).toString(16).toUpperCase().padStart(4, '0')}`;
  }
  return out;
}

/**
 * `text` with every unsafe character escaped, except the characters in
 * `keep` (e.g. `'\n'` for multi-line output whose lines the caller built).
 */
export function visible(text: string, keep = ''): string {
  if (!UNSAFE_TEST.test(text)) return text;
  return text.replace(UNSAFE, (ch) => (keep.includes(ch) ? ch : escapeUnits(ch)));
}

/** Whether `text` contains a character {@link visible} would escape. */
export function hasInvisible(text: string): boolean {
  return UNSAFE_TEST.test(text);
}
