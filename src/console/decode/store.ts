/**
 * Decoded checkpoints for the console service: each read whole from the backend once, decoded
 * once, and kept a while (a bounded cache), so the tree is served by path in pages, searched and
 * exported without reading or parsing again.
 *
 * Why on the console server, not in the page: node:zlib has gzip, deflate and brotli built in
 * (a browser brotli decoder is a ~200 KB WASM module, and the renderer bundle is what every
 * operator downloads), a large JSON is parsed once here instead of shipped whole to every viewer
 * (the tree arrives 200 children at a time), and the CLI and the desktop app share the code.
 * The cost stays on the server's main thread: a worker thread would need its own entry in both
 * bundles (the npm package and the desktop app's single main.cjs) — instead every step is capped
 * (decode/limits.ts), at most {@link CONCURRENT_DECODES} decodes run at once, and the longest
 * stall one may cause is measured there.
 */
import { createHash } from 'node:crypto';
import { ConflictError, NotFoundError } from '../../lease/errors.ts';
import type { LeaseAdmin, LeaseInfo } from '../../lease/types.ts';
import type { DecodedTree, ParsedParams, Result } from '../api.ts';
import { Budget } from './compression.ts';
import { detect } from './detect.ts';
import {
  CACHE_BYTES,
  CACHE_ENTRIES,
  CACHE_IDLE_MS,
  CONCURRENT_DECODES,
  EXPORT_PAGE,
  MAX_INPUT_BYTES,
  MAX_OUTPUT_BYTES,
  sizeText,
} from './limits.ts';
import { DecodedDoc, exportJson, locate, PathNotFound, searchDoc, toPointer, treePage } from './tree.ts';
import { inner } from './value.ts';

/** readState's largest page: 1 MiB. */
const READ_PAGE = 1024 * 1024;
/** Reads of a multi-page checkpoint that a concurrent checkpoint may spoil before giving up. */
const READ_TRIES = 3;

interface Read {
  token: bigint;
  size: number | null;
  /** Null when the checkpoint is larger than MAX_INPUT_BYTES (not read). */
  bytes: Uint8Array | null;
}

interface Entry {
  id: string;
  read: Read;
  doc: DecodedDoc | null;
  layers: string[];
  guessed: boolean;
  notes: string[];
  error: string | null;
  usedAt: number;
  /** The last JSON/text export, kept for its next pages. */
  exported: { key: string; text: string } | null;
}

export class DecodedCheckpoints {
  readonly #entries = new Map<string, Entry>();
  readonly #owners = new WeakMap<object, number>();
  #nextOwner = 1;
  #running = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(private readonly now: () => number = Date.now) {}

  /** `checkpoint.decode`: `owner` is the connection (a new backend behind the same id is another owner). */
  async tree(
    owner: object,
    admin: LeaseAdmin,
    p: ParsedParams<'checkpoint.decode'>,
  ): Promise<DecodedTree | null> {
    const entry = await this.#entry(owner, admin, p.workId, p.id);
    if (entry === null) return null;
    const head = {
      workId: p.workId,
      fencingToken: entry.read.token.toString(),
      size: entry.read.size,
      id: entry.id,
      layers: entry.layers,
      guessed: entry.guessed,
      notes: entry.notes,
      error: entry.error,
    };
    if (entry.doc === null) return { ...head, node: null, trail: [], offset: p.offset, children: [] };
    const page = found(() => treePage(entry.doc!, p.path, p.offset, p.limit));
    return { ...head, ...page };
  }

  /** `checkpoint.search`. */
  async search(
    owner: object,
    admin: LeaseAdmin,
    p: ParsedParams<'checkpoint.search'>,
  ): Promise<Result<'checkpoint.search'>> {
    const entry = await this.#known(owner, admin, p.workId, p.id);
    if (entry.doc === null) return { matches: [], truncated: false, searched: 0 };
    return searchDoc(entry.doc, p.query, p.limit);
  }

  /** `checkpoint.export`. */
  async export(
    owner: object,
    admin: LeaseAdmin,
    p: ParsedParams<'checkpoint.export'>,
  ): Promise<Result<'checkpoint.export'>> {
    const entry = await this.#known(owner, admin, p.workId, p.id);
    if (p.format === 'raw') return this.#raw(admin, p.workId, entry, p.offset);
    const doc = entry.doc;
    if (doc === null)
      throw new NotFoundError(`the checkpoint of ${p.workId} was not decoded: nothing to export`);
    const key = `${p.format}:${toPointer(p.path)}`;
    let text = entry.exported?.key === key ? entry.exported.text : null;
    if (text === null) {
      if (p.format === 'text') {
        const at = found(() => locate(doc, p.path, new Budget(MAX_OUTPUT_BYTES)));
        const x = inner(at.shown);
        if (typeof x !== 'string') throw new NotFoundError(`${toPointer(p.path) || 'the root'} is not text`);
        text = x;
      } else {
        text = found(() => exportJson(doc, p.path));
      }
      entry.exported = { key, text };
    }
    const end = Math.min(text.length, p.offset + EXPORT_PAGE);
    return {
      data: text.slice(p.offset, end),
      total: text.length,
      nextOffset: end < text.length ? end : null,
    };
  }

  /** Forgets every decoded checkpoint. */
  clear(): void {
    this.#entries.clear();
  }

  /** Decoded checkpoints held now (for tests). */
  get size(): number {
    return this.#entries.size;
  }

  async #raw(
    admin: LeaseAdmin,
    workId: string,
    entry: Entry,
    offset: number,
  ): Promise<Result<'checkpoint.export'>> {
    const total = entry.read.size ?? 0;
    let bytes: Uint8Array;
    if (entry.read.bytes !== null) {
      bytes = entry.read.bytes.subarray(offset, offset + EXPORT_PAGE);
    } else {
      // Too large to have been read whole: straight from the backend, still the same lease's.
      const page = await admin.readState(workId, { offset, length: EXPORT_PAGE });
      if (page === null || page.fencingToken !== entry.read.token || page.size !== entry.read.size) {
        throw changed(workId);
      }
      bytes = page.bytes;
    }
    const end = offset + bytes.length;
    return {
      data: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'),
      total,
      nextOffset: end < total && bytes.length > 0 ? end : null,
    };
  }

  /** The entry an `id` names: from the cache, or read again if it is still the stored checkpoint. */
  async #known(owner: object, admin: LeaseAdmin, workId: string, id: string): Promise<Entry> {
    const entry = await this.#entry(owner, admin, workId, id);
    if (entry === null) throw new NotFoundError(`no lease on ${workId}`);
    return entry;
  }

  async #entry(
    owner: object,
    admin: LeaseAdmin,
    workId: string,
    id: string | undefined,
  ): Promise<Entry | null> {
    this.#evictIdle();
    const prefix = `${this.#ownerId(owner)}\u0000${workId}\u0000`;
    if (id !== undefined) {
      const hit = this.#touch(prefix + id);
      if (hit !== undefined) return hit;
    }
    return this.#limited(async () => {
      const read = await readWhole(admin, workId);
      if (read === null) return null;
      const readId = identity(read);
      if (id !== undefined && readId !== id) throw changed(workId, readId);
      const cached = this.#touch(prefix + readId);
      if (cached !== undefined) return cached;
      const entry = decodeRead(readId, read, this.now());
      this.#put(prefix + readId, entry);
      return entry;
    });
  }

  #ownerId(owner: object): number {
    let n = this.#owners.get(owner);
    if (n === undefined) {
      n = this.#nextOwner++;
      this.#owners.set(owner, n);
    }
    return n;
  }

  #touch(key: string): Entry | undefined {
    const e = this.#entries.get(key);
    if (e === undefined) return undefined;
    // Map order is the LRU order: the last used goes to the end.
    this.#entries.delete(key);
    this.#entries.set(key, e);
    e.usedAt = this.now();
    return e;
  }

  #put(key: string, entry: Entry): void {
    this.#entries.set(key, entry);
    let total = 0;
    for (const e of this.#entries.values()) total += weight(e);
    for (const [k, e] of this.#entries) {
      if (this.#entries.size <= CACHE_ENTRIES && total <= CACHE_BYTES) break;
      if (k === key) continue;
      this.#entries.delete(k);
      total -= weight(e);
    }
  }

  #evictIdle(): void {
    const before = this.now() - CACHE_IDLE_MS;
    for (const [k, e] of this.#entries) if (e.usedAt < before) this.#entries.delete(k);
  }

  async #limited<T>(run: () => Promise<T>): Promise<T> {
    if (this.#running >= CONCURRENT_DECODES)
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#running++;
    try {
      return await run();
    } finally {
      this.#running--;
      this.#waiting.shift()?.();
    }
  }
}

function weight(e: Entry): number {
  return (e.read.bytes?.length ?? 0) + (e.doc?.weight ?? 0) + 2 * (e.exported?.text.length ?? 0);
}

function found<T>(run: () => T): T {
  try {
    return run();
  } catch (err) {
    if (err instanceof PathNotFound) throw new NotFoundError(err.message);
    throw err;
  }
}

function changed(workId: string, id?: string): ConflictError {
  return new ConflictError(`the checkpoint of ${workId} changed since it was opened: open it again`, {
    details: { workId, ...(id === undefined ? {} : { id }) },
  });
}

/** The token and a SHA-256 of the bytes: a new checkpoint, or a new lease, is a new id. */
function identity(read: Read): string {
  if (read.bytes === null) return `${read.token}.${read.size}`;
  const hash = createHash('sha256').update(read.bytes).digest('hex').slice(0, 32);
  return `${read.token}.${hash}`;
}

/**
 * The whole checkpoint. Up to 1 MiB is one readState (one statement: consistent). A larger one
 * takes several pages; a checkpoint saved between them would mix two versions, so the pages
 * are bracketed by reads of the lease and kept only when its token, size and checkpoint time
 * did not move (a second checkpoint of the same size within the same millisecond would pass
 * unseen: the backends keep no checkpoint counter to compare).
 */
async function readWhole(admin: LeaseAdmin, workId: string): Promise<Read | null> {
  for (let attempt = 0; attempt < READ_TRIES; attempt++) {
    const before = await admin.get(workId);
    if (before === null) return null;
    const first = await admin.readState(workId, { offset: 0, length: READ_PAGE });
    if (first === null) return null;
    const size = first.size;
    if (size === null || size <= first.bytes.length)
      return { token: first.fencingToken, size, bytes: first.bytes };
    if (size > MAX_INPUT_BYTES) return { token: first.fencingToken, size, bytes: null };
    const bytes = new Uint8Array(size);
    bytes.set(first.bytes);
    let ok = first.fencingToken === before.fencingToken;
    for (let offset = first.bytes.length; offset < size && ok; offset += READ_PAGE) {
      const page = await admin.readState(workId, { offset, length: READ_PAGE });
      ok = page !== null && page.fencingToken === before.fencingToken && page.size === size;
      if (ok) bytes.set(page!.bytes.subarray(0, size - offset), offset);
    }
    const after = await admin.get(workId);
    if (ok && after !== null && sameCheckpoint(before, after))
      return { token: before.fencingToken, size, bytes };
  }
  throw new ConflictError(
    `the checkpoint of ${workId} changed while it was read, ${READ_TRIES} times: try again when it is quieter`,
    { details: { workId } },
  );
}

function sameCheckpoint(a: LeaseInfo, b: LeaseInfo): boolean {
  return (
    a.fencingToken === b.fencingToken &&
    a.checkpointSize === b.checkpointSize &&
    (a.checkpointedAt?.getTime() ?? null) === (b.checkpointedAt?.getTime() ?? null)
  );
}

function decodeRead(id: string, read: Read, now: number): Entry {
  const base = { id, read, usedAt: now, exported: null, doc: null, guessed: false, notes: [] as string[] };
  if (read.bytes === null) {
    return {
      ...base,
      layers: [],
      error: `could not decode: the checkpoint is ${sizeText(read.size ?? 0)}, over the ${sizeText(MAX_INPUT_BYTES)} the console decodes (its text and hex pages and the raw download still work)`,
    };
  }
  if (read.bytes.length === 0) return { ...base, layers: [], error: null };
  const budget = new Budget(MAX_OUTPUT_BYTES);
  const detected = detect(read.bytes, budget);
  const unpacked = MAX_OUTPUT_BYTES - budget.remaining;
  return {
    ...base,
    doc: detected.value === undefined ? null : new DecodedDoc(detected, read.bytes.length + unpacked),
    layers: detected.layers,
    guessed: detected.guessed,
    notes: detected.notes,
    error: detected.error === undefined ? null : `could not decode: ${detected.error}`,
  };
}
