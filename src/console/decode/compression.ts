/**
 * gzip, deflate (zlib-wrapped and raw) and brotli, unwrapped with Node's own zlib: the console
 * decodes on its server (decode/store.ts), so no decompressor ships in the page. Every call is
 * capped by the checkpoint's {@link Budget} through zlib's `maxOutputLength`, so a bomb stops at
 * the cap instead of filling memory.
 */
import { brotliDecompressSync, gunzipSync, inflateRawSync, inflateSync } from 'node:zlib';
import { MAX_OUTPUT_BYTES, sizeText } from './limits.ts';

export type Compression = 'gzip' | 'deflate' | 'deflate-raw' | 'brotli';

/** Why a payload could not be decoded, in words shown after "could not decode: ". */
export class DecodeFailure extends Error {
  override readonly name = 'DecodeFailure';
  constructor(
    message: string,
    /** The data expanded past the cap (as opposed to being corrupt). */
    readonly bomb = false,
  ) {
    super(message);
  }
}

/**
 * What all decompression and base64 layers of one checkpoint may still produce, in bytes
 * ({@link MAX_OUTPUT_BYTES} at the start). Shared by the payload and every string inside it.
 */
export class Budget {
  remaining: number;
  constructor(bytes = MAX_OUTPUT_BYTES) {
    this.remaining = bytes;
  }
  /** Counts `n` bytes produced; false (nothing counted) when they do not fit. */
  take(n: number): boolean {
    if (n > this.remaining) return false;
    this.remaining -= n;
    return true;
  }
  /** Gives back bytes taken for a try that was not kept. */
  refund(n: number): void {
    this.remaining += n;
  }
}

/** The compression a payload's first bytes announce: gzip's magic, or a valid zlib header. */
export function sniffCompression(bytes: Uint8Array): 'gzip' | 'deflate' | null {
  if (bytes.length >= 18 && bytes[0] === 0x1f && bytes[1] === 0x8b && bytes[2] === 0x08) return 'gzip';
  const cmf = bytes[0];
  const flg = bytes[1];
  // RFC 1950: method 8 (deflate), window ≤ 32 KiB, no preset dictionary, header checksum.
  if (
    bytes.length >= 6 &&
    cmf !== undefined &&
    flg !== undefined &&
    (cmf & 0x0f) === 8 &&
    cmf >> 4 <= 7 &&
    (flg & 0x20) === 0 &&
    ((cmf << 8) | flg) % 31 === 0
  ) {
    return 'deflate';
  }
  return null;
}

/**
 * Unwraps one compression layer within the budget. Throws {@link DecodeFailure} saying why:
 * corrupt or cut data, or output past the budget (a bomb).
 */
export function decompress(kind: Compression, bytes: Uint8Array, budget: Budget): Uint8Array {
  const cap = budget.remaining;
  let out: Buffer;
  try {
    // The sync calls: with maxOutputLength a bomb costs at most `cap` bytes of work (171 ms for
    // 16 MiB at load 6.7 on 2 cores); the whole checkpoint is in memory already, and the async
    // forms would only add a thread-pool hop per layer.
    const options = { maxOutputLength: Math.max(1, cap) };
    out =
      kind === 'gzip'
        ? gunzipSync(bytes, options)
        : kind === 'deflate'
          ? inflateSync(bytes, options)
          : kind === 'deflate-raw'
            ? inflateRawSync(bytes, options)
            : brotliDecompressSync(bytes, options);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
      throw new DecodeFailure(
        `${kind} expands past ${sizeText(cap)}, the most the console unpacks for one checkpoint (a decompression bomb?)`,
        true,
      );
    }
    const message = err instanceof Error ? err.message : String(err);
    throw new DecodeFailure(`${kind} data is corrupt (${message})`);
  }
  if (!budget.take(out.length)) {
    throw new DecodeFailure(
      `${kind} expands past ${sizeText(cap)}, the most the console unpacks for one checkpoint`,
      true,
    );
  }
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}
