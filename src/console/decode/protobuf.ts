/**
 * Protobuf without a schema: field numbers and wire types are in the bytes, everything else is a
 * guess. The wire is read with @bufbuild/protobuf's BinaryReader (a maintained, conformance-tested
 * reader); what a field *is* is decided here, and every such decision is marked as guessed:
 *
 * - varint: an unsigned integer; its signed and zigzag readings are offered beside it.
 * - fixed32 / fixed64: a float / double when that reads as an ordinary number, else an integer.
 * - length-delimited, in this order: compressed bytes (gzip/zlib magic) → unpacked; clean UTF-8
 *   text → string; bytes that parse whole as fields → nested message; a run of varints →
 *   packed varints; else bytes. A string or a nested message can also be the other (and both are
 *   bytes): the other readings that also parse are named (`alt`).
 *
 * Groups (wire types 3 and 4, deprecated) are not read: such a payload is not taken for protobuf.
 */
import { BinaryReader } from '@bufbuild/protobuf/wire';
import { sniffCompression } from './compression.ts';
import { MAX_PROTOBUF_DEPTH, MAX_PROTOBUF_WORK, PROTOBUF_WORK_FACTOR } from './limits.ts';
import { cleanText, strictUtf8 } from './utf8.ts';

export type PbWire = 'varint' | 'fixed64' | 'len' | 'fixed32';

/** One field as it stood on the wire, with the reading chosen for it. */
export class PbField {
  constructor(
    readonly no: number,
    readonly wire: PbWire,
    /** How the value was read: `uint64`, `double`, `string`, `message`, `packed varints`, `bytes`, … */
    readonly as: string,
    readonly value: bigint | number | string | Uint8Array | PbMessage | bigint[],
    /** Other readings of the same bytes ("sint -2 · int64 -3", "a message"); '' when none. */
    readonly alt: string,
  ) {}
}

/** A message: its fields in wire order (a field number may repeat). */
export class PbMessage {
  constructor(readonly fields: readonly PbField[]) {}
}

/**
 * Field numbers a guess accepts: up to 20 000. The wire allows 2^29 − 1, but real schemas number
 * their fields from 1 and rarely pass a few hundred; random bytes that parse as fields mostly
 * carry huge numbers, so this keeps a blob from passing as a message.
 */
const MAX_GUESSED_FIELD = 20_000;

interface Work {
  /** Bytes the nested-message tries may still read. */
  left: number;
  /** Nested fields whose bytes were not tried as a message because the work was spent. */
  skipped: number;
}

/** The payload as a message, or null when it does not parse whole as one. */
export function guessProtobuf(bytes: Uint8Array): { message: PbMessage; notes: string[] } | null {
  const work: Work = { left: Math.min(bytes.length * PROTOBUF_WORK_FACTOR, MAX_PROTOBUF_WORK), skipped: 0 };
  const message = parseMessage(bytes, 0, work);
  if (message === null || message.fields.length === 0) return null;
  const notes =
    work.skipped > 0
      ? [
          `${work.skipped} nested fields were not tried as messages (the work cap for one payload was reached)`,
        ]
      : [];
  return { message, notes };
}

function parseMessage(bytes: Uint8Array, depth: number, work: Work): PbMessage | null {
  const reader = new BinaryReader(bytes);
  const fields: PbField[] = [];
  try {
    while (reader.pos < reader.len) {
      const [no, wireType] = reader.tag();
      if (no < 1 || no > MAX_GUESSED_FIELD) return null;
      switch (wireType) {
        case 0:
          fields.push(varintField(no, BigInt(reader.uint64())));
          break;
        case 1: {
          const at = bytes.byteOffset + reader.pos;
          const u = BigInt(reader.fixed64());
          fields.push(fixed64Field(no, u, new DataView(bytes.buffer, at, 8).getFloat64(0, true)));
          break;
        }
        case 5: {
          const at = bytes.byteOffset + reader.pos;
          const u = reader.fixed32();
          fields.push(fixed32Field(no, u, new DataView(bytes.buffer, at, 4).getFloat32(0, true)));
          break;
        }
        case 2:
          fields.push(lenField(no, reader.bytes(), depth, work));
          break;
        default:
          return null;
      }
    }
  } catch {
    return null;
  }
  return new PbMessage(fields);
}

function varintField(no: number, u: bigint): PbField {
  const signed = BigInt.asIntN(64, u);
  const zigzag = (u >> 1n) ^ -(u & 1n);
  const alts: string[] = [];
  if (zigzag !== u) alts.push(`sint ${zigzag}`);
  if (signed !== u) alts.push(`int64 ${signed}`);
  if (u === 0n || u === 1n) alts.push(`bool ${u === 1n}`);
  return new PbField(no, 'varint', 'uint64', u, alts.join(' · '));
}

/** A float that reads as an ordinary number: finite, and 0 or within 1e-6 … 1e15 in size. */
function ordinary(x: number): boolean {
  const a = Math.abs(x);
  return Number.isFinite(x) && (a === 0 || (a >= 1e-6 && a < 1e15));
}

function fixed64Field(no: number, u: bigint, d: number): PbField {
  return ordinary(d) && u !== 0n
    ? new PbField(no, 'fixed64', 'double', d, `fixed64 ${u}`)
    : new PbField(no, 'fixed64', 'fixed64', u, `double ${d}`);
}

function fixed32Field(no: number, u: number, f: number): PbField {
  // A float32 read back shows its rounding noise (0.1 → 0.10000000149…): 7 significant digits.
  const shown = Number(f.toPrecision(7));
  return ordinary(f) && u !== 0
    ? new PbField(no, 'fixed32', 'float', shown, `fixed32 ${u}`)
    : new PbField(no, 'fixed32', 'fixed32', u, `float ${shown}`);
}

function lenField(no: number, bytes: Uint8Array, depth: number, work: Work): PbField {
  const field = (as: string, value: PbField['value'], alt: string[]): PbField =>
    new PbField(no, 'len', as, value, alt.join(' · '));
  if (bytes.length === 0) return field('string', '', ['empty bytes', 'an empty message']);
  // Compressed bytes stay bytes: the tree unpacks them (decode/embedded.ts).
  if (sniffCompression(bytes) !== null) return field('bytes', bytes, []);
  const text = strictUtf8(bytes);
  const nested = (): PbMessage | null => {
    if (depth + 1 >= MAX_PROTOBUF_DEPTH) return null;
    if (work.left < bytes.length) {
      work.skipped++;
      return null;
    }
    work.left -= bytes.length;
    const m = parseMessage(bytes, depth + 1, work);
    return m !== null && m.fields.length > 0 ? m : null;
  };
  if (text !== null && cleanText(text)) {
    // "also a message" only costs a parse when the text could be one (its first byte a valid tag).
    const asMessage = (bytes[0]! & 7) <= 5 ? nested() : null;
    return field('string', text, asMessage === null ? [] : ['a message']);
  }
  const message = nested();
  if (message !== null) return field('message', message, text === null ? [] : ['UTF-8 text']);
  const packed = packedVarints(bytes);
  if (packed !== null) return field('packed varints', packed, ['bytes']);
  return field('bytes', bytes, []);
}

/** The bytes as a run of varints (a packed repeated field), or null. */
function packedVarints(bytes: Uint8Array): bigint[] | null {
  const out: bigint[] = [];
  let value = 0n;
  let shift = 0n;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    value |= BigInt(b & 0x7f) << shift;
    shift += 7n;
    if (shift > 70n) return null;
    if ((b & 0x80) === 0) {
      out.push(BigInt.asUintN(64, value));
      value = 0n;
      shift = 0n;
    }
  }
  return shift === 0n && out.length > 0 ? out : null;
}
