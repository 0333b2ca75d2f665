/**
 * The bounds of checkpoint decoding. A checkpoint is bytes a holder wrote: the console decodes
 * them in its own process, so every step is capped, and a payload past a cap ends as "could not
 * decode: …" with its bytes still shown as hex — never a hung or crashed console.
 *
 * Decoding runs on the console server's main thread (decode/store.ts says why). Measured on
 * this 2-core machine at load average 6.7: JSON.parse of a 2.0 MiB document took 84 ms and
 * grew the heap by 6 MiB; of a 16.6 MiB one, 787 ms and 49 MiB. The caps keep one decode under
 * a second and the cache under a few hundred MiB.
 */

/**
 * Most bytes of a checkpoint the console reads to decode it: 16 MiB. Backends accept up to
 * 64 MiB (`maxStateBytes`); a larger checkpoint still shows as text or hex pages and downloads
 * raw. 16 MiB is 8 times the 2 MiB JSON the console must show as a tree, and its parse (787 ms
 * above) is the longest stall one decode may cause.
 */
export const MAX_INPUT_BYTES = 16 * 1024 * 1024;

/**
 * Most bytes all decompression and base64 layers of one checkpoint may produce together: 16 MiB,
 * for the same reason as {@link MAX_INPUT_BYTES} (what comes out is parsed next). A tiny gzip of
 * 1 GiB of zeros (1 019 KiB of gzip) stops here, at 16 MiB (zlib's `maxOutputLength`), after
 * 171 ms at the load above (brotli's 106-byte bomb: 143 ms), and is reported as a bomb.
 */
export const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;

/** Most wrappers around one payload (e.g. base64 → gzip → msgpack is 3): real payloads use 1-2. */
export const MAX_LAYERS = 4;

/**
 * Deepest nesting shown: 256 levels. Real checkpoints nest under 20; CBOR's decoder recurses, and
 * a payload of 100 000 one-byte arrays would otherwise run it out of stack.
 */
export const MAX_DEPTH = 256;

/**
 * Protobuf has no schema here: every length-delimited field is tried as a nested message, which
 * re-reads its bytes once per level. The bytes all those tries may read together, per payload:
 * 16 times the payload, at most 64 MiB (a 16 MiB payload gets 4 full re-reads). A message nested
 * 200 deep in a chain is guessed about 16 levels down; below, its fields stay bytes (and a note
 * says so).
 */
export const PROTOBUF_WORK_FACTOR = 16;
export const MAX_PROTOBUF_WORK = 64 * 1024 * 1024;
/** Deepest nested protobuf message guessed (a protobuf nested deeper is shown as bytes). */
export const MAX_PROTOBUF_DEPTH = 64;

/**
 * Shortest string taken for base64: 16 characters (12 bytes). Shorter ones are mostly ids and
 * words that happen to use the base64 alphabet ("deadbeef", "ProcessedItems").
 */
export const MIN_BASE64_CHARS = 16;

/** Longest value preview in a tree row, in characters (the whole value is one "Copy value" away). */
export const PREVIEW_CHARS = 200;

/** Children of one node per page: 200 by default, at most 1000 (a page stays a few hundred KiB). */
export const DEFAULT_CHILDREN = 200;
export const MAX_CHILDREN = 1000;

/**
 * Search: at most this many matches per call, nodes visited, and milliseconds spent. A search
 * visited the 208 000 nodes of a 2.2 MiB JSON in 100-400 ms at load average 6-10 here, and took
 * over 1 s at load 15: the node cap bounds the work (about a 16 MiB JSON's nodes), the time
 * cap is the backstop for payloads whose strings decode as they are reached.
 */
export const MAX_SEARCH_MATCHES = 200;
export const MAX_SEARCH_NODES = 1_000_000;
export const MAX_SEARCH_MS = 3000;

/** Export pages: at most 1 MiB of characters (JSON) or bytes (raw) per call. */
export const EXPORT_PAGE = 1024 * 1024;

/**
 * The cache of decoded checkpoints (decode/store.ts): at most 8 of them, whose input and decoded
 * bytes add up to at most 64 MiB, each dropped after 10 minutes unused. Parsed values weigh about
 * 3 times their JSON (the 49 MiB for 16.6 MiB above), so the cache stays under ~200 MiB.
 */
export const CACHE_ENTRIES = 8;
export const CACHE_BYTES = 64 * 1024 * 1024;
export const CACHE_IDLE_MS = 10 * 60_000;

/** Decodes (backend reads and parses) running at once; more wait their turn. */
export const CONCURRENT_DECODES = 2;

export const MiB = 1024 * 1024;

/** "16 MiB", "2.5 MiB", "900 B": for messages. */
export function sizeText(n: number): string {
  if (n >= MiB) return `${Number((n / MiB).toFixed(1))} MiB`;
  if (n >= 1024) return `${Number((n / 1024).toFixed(1))} KiB`;
  return `${n} B`;
}
