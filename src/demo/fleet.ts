/**
 * A simulated fleet of workers for demos and tests: it gives the console and
 * the CLI something realistic to show on any backend. Workers claim work items
 * through the holder layer, checkpoint progress (JSON, UTF-8 text, an opaque
 * binary format, and the formats the console decodes: msgpack, CBOR, gzip'd
 * protobuf, a JSON envelope around base64 of gzip'd msgpack, and one 2.2 MiB
 * JSON export when the backend's checkpoint limit allows it; see payloads.ts)
 * and release when done; some misbehave on purpose:
 *
 * - `steady`: checkpoints every step, releases when the item is done.
 * - `stuck`: checkpoints twice, then only renews (heartbeat without progress)
 *   for `stuckForMs` before giving up — the console shows it as `stuck`.
 * - `dying`: works a few steps, then stops calling anything (a crash): its
 *   lease runs out and stays `expired` until another worker takes it over.
 * - `flapping`: claims, saves once, releases, and claims again, over and over.
 *
 * New work items appear over time up to `items`; after that, finished items
 * are re-opened as a new run. The fleet never writes more than `items` work
 * ids and never prunes (the backend may be shared with real work).
 */
import { randomBytes } from 'node:crypto';
import { hasCode } from '../lease/errors.ts';
import { claim, type LeaseHolder } from '../lease/holder.ts';
import type { LeaseBackend } from '../lease/types.ts';
import { checkInt } from '../lease/validate.ts';
import { type BinaryFormat, EXPORT_BYTES, encodeBinary, type Progress, readProgress } from './payloads.ts';

export type Personality = 'steady' | 'stuck' | 'dying' | 'flapping';
export type PayloadFormat = 'json' | 'text' | 'binary' | BinaryFormat;

export interface DemoFleetOptions {
  /** Number of simulated workers, 1..200. Default 8. */
  workers?: number;
  /** Most work items the fleet creates, 1..10 000. Default 40. */
  items?: number;
  /** Lease ttl of every claim, ms. Default 10 000. */
  ttlMs?: number;
  /** Time between two steps of one worker, ms (jittered ±30 %). Default 1 000. */
  tickMs?: number;
  /** How long a stuck worker renews without progress before it gives up and releases, ms. Default 90 000. */
  stuckForMs?: number;
  /** How long a new work item takes to appear after the previous one, ms. Default 3 × tickMs. */
  newItemEveryMs?: number;
  /** Prefix of every work id. Default `demo/`. */
  prefix?: string;
  /** Prefix of every holder id. Default `demo-worker-`. */
  holderPrefix?: string;
  /** Called with unexpected errors (the expected ones — lost leases, held items — are part of the show). Default: ignored. */
  onError?: (err: unknown) => void;
}

export interface DemoFleetStats {
  claims: number;
  saves: number;
  renewals: number;
  releases: number;
  /** Leases left to run out by dying workers. */
  abandoned: number;
  /** Leases lost by their worker (fenced by a force-release, or ran out). */
  lost: number;
  errors: number;
  /** Work items created so far. */
  items: number;
}

export interface DemoFleet {
  /** Stops every worker (their leases are left to run out) and waits for in-flight calls. Idempotent. */
  stop(): Promise<void>;
  stats(): DemoFleetStats;
  /** Which worker behaves how: holder id → personality. */
  readonly workers: ReadonlyMap<string, Personality>;
}

interface Item {
  id: string;
  format: PayloadFormat;
  heldBy: string | null;
  /** Local ms before which no worker picks it (so expired / force-released leases stay visible a while). */
  availableAt: number;
}

interface Worker {
  id: string;
  personality: Personality;
  holder: LeaseHolder | null;
  item: Item | null;
  progress: Progress;
  steps: number;
  lastSaveAt: number;
  dieAfter: number;
  deadUntil: number;
}

const PERSONALITIES: Personality[] = ['steady', 'stuck', 'dying', 'flapping', 'steady', 'steady'];
const FORMATS: PayloadFormat[] = [
  'json',
  'binary',
  'msgpack',
  'text',
  'protobuf-gzip',
  'json',
  'cbor',
  'envelope',
];
const STEPS: Record<PayloadFormat, string> = {
  json: 'ingest',
  binary: 'encode',
  text: 'tail',
  msgpack: 'ingest',
  cbor: 'ingest',
  'protobuf-gzip': 'encode',
  envelope: 'relay',
  export: 'export',
};
const KINDS: Record<PayloadFormat, string> = {
  json: 'job',
  binary: 'blob',
  text: 'log',
  msgpack: 'msgpack',
  cbor: 'cbor',
  'protobuf-gzip': 'proto',
  envelope: 'envelope',
  export: 'export',
};
/** The one work item that saves the 2.2 MiB JSON export (when the backend accepts it). */
const EXPORT_ITEM = 5;
const MAGIC = [0x57, 0x4c, 0x44, 0x4d]; // "WLDM"

/** Starts the fleet on an open backend (it does not close it). */
export function startDemoFleet(backend: LeaseBackend, options: DemoFleetOptions = {}): DemoFleet {
  const workerCount = checkInt('options.workers', options.workers, 1, 200, 8);
  const maxItems = checkInt('options.items', options.items, 1, 10_000, 40);
  const ttlMs = checkInt('options.ttlMs', options.ttlMs, 10, 3_600_000, 10_000);
  const tickMs = checkInt('options.tickMs', options.tickMs, 10, 600_000, 1000);
  const stuckForMs = checkInt('options.stuckForMs', options.stuckForMs, 0, 86_400_000, 90_000);
  const newItemEveryMs = checkInt(
    'options.newItemEveryMs',
    options.newItemEveryMs,
    1,
    86_400_000,
    tickMs * 3,
  );
  const prefix = options.prefix ?? 'demo/';
  const holderPrefix = options.holderPrefix ?? 'demo-worker-';
  const onError = options.onError ?? (() => {});

  const stats: DemoFleetStats = {
    claims: 0,
    saves: 0,
    renewals: 0,
    releases: 0,
    abandoned: 0,
    lost: 0,
    errors: 0,
    items: 0,
  };
  const items: Item[] = [];
  const addItem = (): void => {
    if (items.length >= maxItems) return;
    const n = items.length + 1;
    const format: PayloadFormat =
      n === EXPORT_ITEM && backend.maxStateBytes >= EXPORT_BYTES + 64 * 1024
        ? 'export'
        : FORMATS[n % FORMATS.length]!;
    items.push({
      id: `${prefix}${KINDS[format]}-${String(n).padStart(4, '0')}`,
      format,
      heldBy: null,
      availableAt: 0,
    });
    stats.items = items.length;
  };
  // Start with about half (at least one per worker, within the bound), the rest appear over time.
  for (let i = 0; i < Math.min(maxItems, Math.max(workerCount, Math.ceil(maxItems / 2))); i++) addItem();

  const stopper = new AbortController();
  const workers: Worker[] = [];
  const personalities = new Map<string, Personality>();
  for (let i = 0; i < workerCount; i++) {
    const id = `${holderPrefix}${i + 1}`;
    const personality = PERSONALITIES[i % PERSONALITIES.length]!;
    personalities.set(id, personality);
    workers.push({
      id,
      personality,
      holder: null,
      item: null,
      progress: { processed: 0, target: 0, run: 1 },
      steps: 0,
      lastSaveAt: 0,
      dieAfter: 0,
      deadUntil: 0,
    });
  }

  const jitter = (ms: number): number => ms * (0.7 + Math.random() * 0.6);
  const pickItem = (): Item | null => {
    const now = Date.now();
    const open = items.filter((it) => it.heldBy === null && it.availableAt <= now);
    return open.length === 0 ? null : open[Math.floor(Math.random() * open.length)]!;
  };

  /** Drops the worker's lease locally; the item becomes available again after `holdOffMs`. */
  const drop = (w: Worker, holdOffMs: number): void => {
    if (w.item !== null) {
      w.item.heldBy = null;
      w.item.availableAt = Date.now() + holdOffMs;
    }
    w.item = null;
    w.holder = null;
  };

  const save = async (w: Worker, holder: LeaseHolder, item: Item): Promise<void> => {
    const batch = 1 + Math.floor(Math.random() * 5);
    w.progress.processed = Math.min(w.progress.target, w.progress.processed + batch);
    await holder.save(encodePayload(item.format, w.progress, w.id, batch));
    w.lastSaveAt = Date.now();
    stats.saves++;
  };

  const release = async (w: Worker, holder: LeaseHolder, restMs: number): Promise<void> => {
    await holder.release();
    stats.releases++;
    drop(w, restMs);
  };

  const step = async (w: Worker): Promise<void> => {
    const now = Date.now();
    if (w.deadUntil > now) return;
    if (w.holder === null || w.item === null) {
      const item = pickItem();
      if (item === null) return;
      item.heldBy = w.id;
      w.item = item;
      try {
        w.holder = await claim(backend, item.id, w.id, { ttlMs, stepId: STEPS[item.format] });
      } catch (err) {
        w.item = null;
        item.heldBy = null;
        // Held by someone else (another demo process, or a lease we abandoned earlier): try later.
        item.availableAt = Date.now() + (hasCode(err, 'LEASE_HELD') ? ttlMs : tickMs);
        throw err;
      }
      stats.claims++;
      w.steps = 0;
      w.lastSaveAt = Date.now();
      w.dieAfter = 3 + Math.floor(Math.random() * 6);
      w.progress = resume(w.holder.state, item.format);
      return;
    }
    const holder = w.holder;
    const item = w.item;
    w.steps++;
    switch (w.personality) {
      case 'steady':
        await save(w, holder, item);
        if (w.progress.processed >= w.progress.target) await release(w, holder, tickMs * 5);
        return;
      case 'stuck':
        if (w.steps <= 2) {
          await save(w, holder, item);
        } else if (Date.now() - w.lastSaveAt >= stuckForMs) {
          await release(w, holder, tickMs);
        } else {
          await holder.renew();
          stats.renewals++;
        }
        return;
      case 'dying':
        if (w.steps < w.dieAfter) {
          await save(w, holder, item);
          return;
        }
        // The crash: no release, no renewal. The lease stays visibly expired for a while before a takeover.
        stats.abandoned++;
        drop(w, ttlMs * 3);
        w.deadUntil = Date.now() + ttlMs * 2;
        return;
      case 'flapping':
        await save(w, holder, item);
        await release(w, holder, 0);
        return;
    }
  };

  const runWorker = async (w: Worker, startDelayMs: number): Promise<void> => {
    await sleep(startDelayMs, stopper.signal);
    let nextItemAt = Date.now() + newItemEveryMs;
    while (!stopper.signal.aborted) {
      // Worker 1 also plays the source of new work.
      if (w === workers[0] && Date.now() >= nextItemAt) {
        addItem();
        nextItemAt = Date.now() + newItemEveryMs;
      }
      try {
        await step(w);
      } catch (err) {
        if (stopper.signal.aborted) break;
        if (hasCode(err, 'LEASE_LOST')) {
          // Fenced by a force-release or ran out: leave the item alone for a while so ops see it.
          stats.lost++;
          drop(w, ttlMs * 2);
        } else if (hasCode(err, 'LEASE_HELD')) {
          // Expected: the item is leased elsewhere.
        } else {
          stats.errors++;
          if (w.holder !== null) drop(w, ttlMs);
          if (!hasCode(err, 'BACKEND_UNAVAILABLE')) onError(err);
        }
      }
      await sleep(jitter(tickMs), stopper.signal);
    }
  };

  const loops = workers.map((w, i) => runWorker(w, (tickMs * i) / workerCount));
  let stopped: Promise<void> | null = null;
  return {
    workers: personalities,
    stats: () => ({ ...stats }),
    stop() {
      if (stopped === null) {
        stopper.abort();
        stopped = Promise.allSettled(loops).then(() => undefined);
      }
      return stopped;
    },
  };
}

/** A checkpoint payload in the item's format; binary ones carry a small header and random bytes. */
export function encodePayload(
  format: PayloadFormat,
  p: Progress,
  holderId: string,
  batch: number,
): Uint8Array {
  switch (format) {
    case 'json': {
      const lastBatch = Array.from(
        { length: batch },
        (_, i) => `rec-${p.run}-${p.processed - batch + i + 1}`,
      );
      const body = {
        processed: p.processed,
        target: p.target,
        run: p.run,
        cursor: `s3://demo-bucket/part-${String(p.processed).padStart(6, '0')}`,
        lastBatch,
        worker: holderId,
        savedAt: new Date().toISOString(),
      };
      return new TextEncoder().encode(JSON.stringify(body));
    }
    case 'text':
      return new TextEncoder().encode(
        `run ${p.run}: processed ${p.processed} of ${p.target}\nlast offset ${p.processed * 4096}\nworker ${holderId}\n`,
      );
    case 'binary': {
      const noise = randomBytes(24 + Math.floor(Math.random() * 96));
      const header = Buffer.alloc(16);
      Buffer.from(MAGIC).copy(header, 0);
      header.writeUInt8(1, 4); // format version
      header.writeUInt8(0, 5);
      header.writeUInt16BE(p.run & 0xffff, 6);
      header.writeUInt32BE(p.processed, 8);
      header.writeUInt32BE(p.target, 12);
      return new Uint8Array(Buffer.concat([header, noise]));
    }
    default:
      return encodeBinary(format, p, holderId, batch);
  }
}

/** Progress from the previous holder's checkpoint; a finished or unreadable one starts a new run. */
export function resume(state: Uint8Array | null, format: PayloadFormat): Progress {
  const fresh = (run: number): Progress => ({
    processed: 0,
    target: 20 + Math.floor(Math.random() * 40),
    run,
  });
  if (state === null) return fresh(1);
  let p: Progress | null = null;
  try {
    if (format === 'binary') {
      const b = Buffer.from(state.buffer, state.byteOffset, state.byteLength);
      if (b.length >= 16 && MAGIC.every((m, i) => b[i] === m)) {
        p = { run: b.readUInt16BE(6), processed: b.readUInt32BE(8), target: b.readUInt32BE(12) };
      }
    } else if (format === 'json') {
      const v = JSON.parse(new TextDecoder().decode(state)) as Partial<Progress>;
      if (typeof v.processed === 'number' && typeof v.target === 'number' && typeof v.run === 'number') {
        p = { processed: v.processed, target: v.target, run: v.run };
      }
    } else if (format === 'text') {
      const m = /^run (\d+): processed (\d+) of (\d+)/.exec(new TextDecoder().decode(state));
      if (m) p = { run: Number(m[1]), processed: Number(m[2]), target: Number(m[3]) };
    } else {
      p = readProgress(format, state);
    }
  } catch {
    p = null;
  }
  if (p === null) return fresh(1);
  return p.processed >= p.target ? fresh(p.run + 1) : p;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
