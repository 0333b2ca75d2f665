/**
 * What a payload is, layer by layer: compression (gzip and zlib by their magic; brotli and raw
 * deflate, which have none, only when what comes out is recognised), base64 text, then JSON,
 * UTF-8 text, msgpack, CBOR, and schema-less protobuf (a guess, and marked so). A payload that is
 * none of them is binary: the viewer shows it as hex.
 *
 * The same detection runs on strings and byte strings inside a decoded value (decode/tree.ts),
 * stricter there (`embedded`): an ordinary string must not turn into a "decoded" one by chance.
 */
import type { Tagged } from 'cborg';
import { decodeCbor } from './cbor.ts';
import { Budget, type Compression, DecodeFailure, decompress, sniffCompression } from './compression.ts';
import { MAX_LAYERS, MIN_BASE64_CHARS } from './limits.ts';
import { decodeMsgpack } from './msgpack.ts';
import { guessProtobuf, PbMessage } from './protobuf.ts';
import { cleanText, mostlyPrintable, parseJson, strictUtf8 } from './utf8.ts';
import { childCount, childrenOf, kindOf, measure } from './value.ts';

export type Layer = Compression | 'base64' | 'json' | 'text' | 'msgpack' | 'cbor' | 'protobuf';

export interface Detected {
  /** Outermost first (`['gzip', 'protobuf']`). Empty: none of the formats (binary, shown as hex). */
  layers: Layer[];
  /** The decoded value (the text itself for `text`); absent for binary or when decoding failed. */
  value?: unknown;
  /** Whether a guess decided it (schema-less protobuf). */
  guessed: boolean;
  /** What else the bytes could be, and what was left undecoded. */
  notes: string[];
  /** Why the last layer in `layers` could not be decoded (corrupt, a bomb, too deep). */
  error?: string;
}

const BINARY: Detected = { layers: [], guessed: false, notes: [] };

/** Detects and decodes `bytes`; never throws. `embedded`: a value inside a payload (stricter). */
export function detect(bytes: Uint8Array, budget: Budget, embedded = false): Detected {
  try {
    return detectAt(bytes, budget, embedded, 0);
  } catch (err) {
    // Every format above is total; this is the contract's backstop ("never throws").
    return { layers: [], guessed: false, notes: [], error: err instanceof Error ? err.message : String(err) };
  }
}

function failed(layer: Layer, err: unknown): Detected {
  if (!(err instanceof DecodeFailure)) throw err;
  return { layers: [layer], guessed: false, notes: [], error: err.message };
}

function wrapped(layer: Layer, innerOne: Detected): Detected {
  return { ...innerOne, layers: [layer, ...innerOne.layers] };
}

/** Decoded as far as a format, with no error. */
function recognised(d: Detected): boolean {
  return d.error === undefined && d.layers.length > 0;
}

function detectAt(bytes: Uint8Array, budget: Budget, embedded: boolean, depth: number): Detected {
  if (bytes.length === 0) return BINARY;
  if (depth >= MAX_LAYERS) {
    return { ...BINARY, notes: [`not unwrapped further: more than ${MAX_LAYERS} layers`] };
  }
  const compression = sniffCompression(bytes);
  if (compression !== null) {
    let out: Uint8Array;
    try {
      out = decompress(compression, bytes, budget);
    } catch (err) {
      return failed(compression, err);
    }
    const innerOne = detectAt(out, budget, embedded, depth + 1);
    // Compressed binary is still worth showing unpacked (as bytes).
    return wrapped(
      compression,
      recognised(innerOne) || innerOne.error !== undefined ? innerOne : { ...innerOne, value: out },
    );
  }

  const text = strictUtf8(bytes);
  if (text !== null) {
    const json = parseJson(text);
    if (json !== undefined && (!embedded || isContainer(json.value))) {
      try {
        measure(json.value);
      } catch (err) {
        return failed('json', err);
      }
      return { layers: ['json'], value: json.value, guessed: false, notes: [] };
    }
    if (mostlyPrintable(text)) {
      const raw = base64Bytes(text.trim());
      if (raw !== null && budget.take(raw.length)) {
        const innerOne = detectAt(raw, budget, true, depth + 1);
        if (recognised(innerOne) || innerOne.error !== undefined) return wrapped('base64', innerOne);
        budget.refund(raw.length);
      }
      if (!embedded || plausibleText(text))
        return { layers: ['text'], value: text, guessed: false, notes: [] };
    }
  }

  // No magic: brotli and raw deflate are taken only when what comes out is recognised.
  for (const kind of ['brotli', 'deflate-raw'] as const) {
    let out: Uint8Array;
    try {
      out = decompress(kind, bytes, budget);
    } catch (err) {
      // Garbage does not expand to the cap: an expansion that does is a bomb, and said so.
      if (err instanceof DecodeFailure && err.bomb) return failed(kind, err);
      continue;
    }
    const innerOne = detectAt(out, budget, true, depth + 1);
    if (recognised(innerOne) || innerOne.error !== undefined) return wrapped(kind, innerOne);
    budget.refund(out.length);
  }

  const msgpack = decodeMsgpack(bytes);
  const cbor = decodeCbor(bytes);
  if (msgpack !== null || cbor !== null) {
    // One byte string can be both (0x83 is a 3-entry map in msgpack, a 3-item array in CBOR):
    // the reading with string keys and ordinary values wins, and the other is named.
    const both = msgpack !== null && cbor !== null;
    const useCbor = cbor !== null && (msgpack === null || plausibility(cbor) > plausibility(msgpack));
    const layer: Layer = useCbor ? 'cbor' : 'msgpack';
    const value = useCbor ? cbor : msgpack;
    try {
      measure(value);
    } catch (err) {
      return failed(layer, err);
    }
    const notes = both ? [`the bytes also parse as ${useCbor ? 'msgpack' : 'CBOR'}`] : [];
    return { layers: [layer], value, guessed: false, notes };
  }

  const pb = guessProtobuf(bytes);
  if (pb !== null && (!embedded || structured(pb.message))) {
    try {
      measure(pb.message);
    } catch (err) {
      return failed('protobuf', err);
    }
    return { layers: ['protobuf'], value: pb.message, guessed: true, notes: pb.notes };
  }
  return BINARY;
}

function isContainer(v: unknown): boolean {
  return v !== null && typeof v === 'object';
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** The bytes a base64 (or base64url) string stands for, or null when it is not one. */
export function base64Bytes(s: string): Uint8Array | null {
  if (s.length < MIN_BASE64_CHARS) return null;
  let out: Buffer;
  if (s.length % 4 === 0 && BASE64.test(s)) out = Buffer.from(s, 'base64');
  else if (s.length % 4 !== 1 && BASE64URL.test(s)) out = Buffer.from(s, 'base64url');
  else return null;
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}

/** Text beyond doubt, for a string found inside a payload: no controls, mostly printable ASCII. */
function plausibleText(text: string): boolean {
  if (!cleanText(text) || text.includes('\ufffd')) return false;
  let ascii = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x20 && c < 0x7f) ascii++;
  }
  return ascii >= text.length * 0.8;
}

/**
 * A protobuf guess inside a payload must carry something beyond numbers (a clean string or a
 * nested message): random bytes parse as a few varints often enough to fool a looser rule.
 */
function structured(m: PbMessage): boolean {
  return m.fields.some(
    (f) =>
      f.value instanceof PbMessage ||
      (f.as === 'string' && typeof f.value === 'string' && f.value.length >= 2),
  );
}

/**
 * How much a decoded value looks like data someone wrote: string map keys and clean strings
 * count for it; undefined, odd tags, extension types and non-string keys against. Looks at the
 * first 2000 nodes.
 */
function plausibility(root: unknown): number {
  let score = 0;
  let seen = 0;
  const stack: unknown[] = [root];
  while (stack.length > 0 && seen < 2000) {
    const v = stack.pop();
    seen++;
    const kind = kindOf(v);
    if (kind === 'undefined' || kind === 'ext') score -= 3;
    else if (kind === 'tag') score -= (v as Tagged).tag <= 1 ? 0 : 2;
    else if (kind === 'string') score += cleanText(v as string) ? 1 : -2;
    if (v instanceof Map) {
      for (const k of v.keys()) score += typeof k === 'string' ? 2 : -3;
    } else if (kind === 'object') {
      score += 2 * Object.keys(v as object).length;
    }
    const n = childCount(v);
    if (n > 0) for (const c of childrenOf(v, 0, Math.min(n, 2000))) stack.push(c.value);
  }
  return score;
}

export { Budget };
