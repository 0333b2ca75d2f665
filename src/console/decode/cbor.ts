/**
 * CBOR (RFC 8949), read with cborg: strict, maintained, and pure JavaScript (cbor-x, the other
 * fast one, needs a native add-on whose builds are not all served here). Maps come back as `Map`
 * (CBOR keys need not be strings), big integers as `bigint` (tags 2 and 3), and every other tag
 * as a {@link Tagged} that the tree shows with its number.
 */
import { type DecodeOptions, decode, Tagged } from 'cborg';

type TagDecoder = (inner: () => unknown) => unknown;

/**
 * Longest big integer (tags 2 and 3) turned into a bigint: 64 bytes (512 bits). Building a
 * bigint byte by byte costs the square of its length: a 1 MiB one would take minutes, so a longer
 * one stays a tagged byte string.
 */
const MAX_BIGNUM_BYTES = 64;

function bignum(tag: 2 | 3): TagDecoder {
  return (inner) => {
    const bytes = inner();
    if (!(bytes instanceof Uint8Array) || bytes.length > MAX_BIGNUM_BYTES) return new Tagged(tag, bytes);
    let n = 0n;
    for (const b of bytes) n = (n << 8n) | BigInt(b);
    return tag === 2 ? n : -1n - n;
  };
}

/** Every tag number decodes: big integers as bigint, any other kept as a Tagged. */
const TAGS = new Proxy([] as TagDecoder[], {
  get(target, key) {
    if (key === '2') return bignum(2);
    if (key === '3') return bignum(3);
    if (typeof key === 'string' && /^\d+$/.test(key)) {
      const tag = Number(key);
      return (inner: () => unknown) => new Tagged(tag, inner());
    }
    return Reflect.get(target, key);
  },
}) as unknown as NonNullable<DecodeOptions['tags']>;

/** The value, or null when the bytes are not one whole CBOR array, map or tagged value. */
export function decodeCbor(bytes: Uint8Array): unknown {
  try {
    const value: unknown = decode(bytes, { useMaps: true, tags: TAGS });
    return Array.isArray(value) || value instanceof Map || value instanceof Tagged ? value : null;
  } catch {
    // Malformed, cut, trailing bytes, or nested past the native stack (RangeError): not CBOR here.
    return null;
  }
}
