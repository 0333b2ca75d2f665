/**
 * MessagePack, read with @msgpack/msgpack (the format's reference implementation for
 * JavaScript). Its decoder keeps an explicit stack (deep nesting costs no native stack) and
 * refuses trailing bytes, so a payload it accepts is msgpack from the first byte to the last.
 */
import { Decoder } from '@msgpack/msgpack';

/**
 * The value, or null when the bytes are not one whole msgpack array or map (a lone scalar is not
 * taken for msgpack: one byte 0x05 is also the number 5 in CBOR, and a control character).
 */
export function decodeMsgpack(bytes: Uint8Array): unknown {
  // Each element takes at least one byte: a header claiming more cannot be honest, and is refused
  // before the decoder sizes an array for it.
  const n = bytes.length;
  const decoder = new Decoder({
    useBigInt64: true,
    maxStrLength: n,
    maxBinLength: n,
    maxArrayLength: n,
    maxMapLength: n,
    maxExtLength: n,
  });
  try {
    const value = decoder.decode(bytes);
    return value !== null && typeof value === 'object' && !(value instanceof Uint8Array) ? value : null;
  } catch {
    return null;
  }
}
