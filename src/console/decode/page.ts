/**
 * Checkpoint payload decoding for operators: shows one page of stored bytes
 * as pretty JSON, UTF-8 text, or a hex dump. Pure and binary-safe: shared by
 * the console service and the CLI, and it never throws, whatever the bytes.
 *
 * Plain TypeScript (TextDecoder is global in Node and browsers).
 */
import { visible } from '../text.ts';
import { isControl, mostlyPrintable, parseJson, strictUtf8 } from './utf8.ts';

export type DecodedKind = 'empty' | 'json' | 'text' | 'hex';

export interface DecodedCheckpoint {
  kind: DecodedKind;
  /** The rendering of the bytes in this page. */
  text: string;
  /** The parsed value when `kind` is `json`. */
  json?: unknown;
}

const BYTES_PER_LINE = 16;

/**
 * Decodes one page of a checkpoint.
 *
 * - `empty`: the page holds no bytes (no checkpoint, an empty one, or an offset past the end).
 * - `json`: the page holds the whole payload (`offset` 0, `bytes.length === totalSize`)
 *   and it is valid UTF-8 that parses as JSON; `text` is pretty-printed with 2 spaces.
 *   A page cut from a larger payload is never parsed: half a document is not JSON.
 * - `text`: valid UTF-8 (fatal decoding) that is mostly printable and has no NUL;
 *   control characters are shown as Unicode control pictures so a payload cannot
 *   drive the operator's terminal. A page starting or ending inside a multi-byte
 *   character drops those partial bytes rather than fall back to hex.
 * - `hex`: anything else, `hexdump -C` style, offsets counted from `offset`.
 *
 * @param totalSize size of the whole checkpoint in bytes, or null when unknown / none saved.
 * @param offset byte offset of this page within the checkpoint.
 */
export function decodeCheckpoint(
  bytes: Uint8Array,
  totalSize: number | null,
  offset: number,
): DecodedCheckpoint {
  try {
    const start = Number.isSafeInteger(offset) && offset >= 0 ? offset : 0;
    if (bytes.length === 0) return { kind: 'empty', text: '' };
    const whole = start === 0 && totalSize === bytes.length;
    const text = decodeUtf8(bytes, start > 0, totalSize === null || start + bytes.length < totalSize);
    if (text !== null) {
      if (whole) {
        const json = parseJson(text);
        if (json !== undefined)
          // visible(): bidi overrides and zero-width characters inside strings are shown escaped (still valid JSON).
          return { kind: 'json', text: visible(JSON.stringify(json.value, null, 2), '\n'), json: json.value };
      }
      if (mostlyPrintable(text)) return { kind: 'text', text: visible(showControls(text), '\n\t') };
    }
    return { kind: 'hex', text: hexDump(bytes, start) };
  } catch {
    // Unreachable in practice (every step above is total); the contract is "never throws".
    return { kind: 'hex', text: `(${bytes.length} bytes could not be rendered)` };
  }
}

/**
 * Strict UTF-8 decoding. When the page may start or end inside a multi-byte
 * sequence (it is not the first / last page), up to 3 bytes are trimmed there.
 */
function decodeUtf8(bytes: Uint8Array, cutAtStart: boolean, cutAtEnd: boolean): string | null {
  let from = 0;
  let to = bytes.length;
  if (cutAtStart) {
    while (from < Math.min(3, to) && isContinuation(bytes[from]!)) from++;
  }
  if (cutAtEnd) {
    // Find the lead byte of the last sequence and drop it if the sequence is incomplete.
    let i = to - 1;
    while (i > from && to - i < 4 && isContinuation(bytes[i]!)) i--;
    const need = sequenceLength(bytes[i]!);
    if (need > 1 && to - i < need) to = i;
  }
  if (from >= to) return null;
  return strictUtf8(bytes.subarray(from, to));
}

function isContinuation(b: number): boolean {
  return (b & 0xc0) === 0x80;
}

function sequenceLength(lead: number): number {
  if (lead < 0x80) return 1;
  if ((lead & 0xe0) === 0xc0) return 2;
  if ((lead & 0xf0) === 0xe0) return 3;
  if ((lead & 0xf8) === 0xf0) return 4;
  return 1;
}

/** C0 controls become their Unicode control pictures (U+2400…), DEL ␡, C1 controls U+FFFD. */
function showControls(text: string): string {
  let out = '';
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (!isControl(code)) out += ch;
    else if (code < 0x20) out += String.fromCodePoint(0x2400 + code);
    else if (code === 0x7f) out += '\u2421';
    else out += '\ufffd';
  }
  return out;
}

/** `hexdump -C` layout: `00000010  7b 22 61 22 …  |{"a"…|`, one line per 16 bytes. */
export function hexDump(bytes: Uint8Array, offset = 0): string {
  const lines: string[] = [];
  for (let i = 0; i < bytes.length; i += BYTES_PER_LINE) {
    const row = bytes.subarray(i, i + BYTES_PER_LINE);
    let hex = '';
    let ascii = '';
    for (let j = 0; j < BYTES_PER_LINE; j++) {
      if (j === 8) hex += ' ';
      const b = row[j];
      if (b === undefined) {
        hex += '   ';
        continue;
      }
      hex += `${b.toString(16).padStart(2, '0')} `;
      ascii += b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.';
    }
    lines.push(`${(offset + i).toString(16).padStart(8, '0')}  ${hex} |${ascii}|`);
  }
  return lines.join('\n');
}
