/**
 * One chaos worker: a loop of holders contending for the run's items. Each
 * lease does one counter step — read the checkpointed counter, add one, save —
 * inside `withLease`, with random pauses around the save so faults land at
 * every point of a lease, and sometimes "crashes" (throws) to leave the lease
 * to run out. Runs inside a worker thread (see `thread.ts`) or, for PGlite,
 * which lives in one thread, in the runner's own thread.
 */
import { WorkleaseError } from '../lease/errors.ts';
import { withLease } from '../lease/holder.ts';
import type { LeaseBackend } from '../lease/types.ts';
import type { HistoryEvent } from './history.ts';
import { decodeCounter, encodeCounter, now } from './history.ts';

export interface WorkerConfig {
  index: number;
  items: string[];
  ttlMs: number;
  intervalMs: number;
  /** Monotonic time (history clock) after which no new lease is claimed. */
  untilMs: number;
}

export interface WorkerStats {
  leases: number;
  increments: number;
  held: number;
  lost: number;
  crashes: number;
  unavailable: number;
  /** Leases ended by DATASET_LOST (each followed by a reopen). */
  datasetLost: number;
  /** Errors the harness did not expect (anything but the contract's refusals, loss and unavailability). */
  unexpected: string[];
}

/** Blocks this thread's event loop without burning CPU: a long GC pause, a suspended VM. */
export function freezeThread(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

export function freezeEvent(sink: (e: HistoryEvent) => void, ms: number): void {
  sink({ type: 'fault', kind: 'freeze', at: now(), detail: `${Math.round(ms)} ms` });
}

class Crash extends Error {}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export interface WorkerControl {
  /** Set by the runner: freeze this many ms right before the next save. */
  freezeBeforeSaveMs: number;
  stopped: boolean;
  /** Told just before a freeze, so the freeze is recorded as a fault. */
  onFreeze?: (ms: number) => void;
  /**
   * After DATASET_LOST (the backend lost every lease): a new backend, opened as a restarted process
   * would (migrating a fresh dataset if there is none). Without it the worker keeps the old one.
   */
  reopen?: () => Promise<LeaseBackend>;
}

/** DATASET_LOST, directly (claim) or as the cause of a holder's loss. */
function datasetLost(err: unknown): boolean {
  if (!(err instanceof WorkleaseError)) return false;
  if (err.code === 'DATASET_LOST') return true;
  return (
    err.code === 'LEASE_LOST' && err.cause instanceof WorkleaseError && err.cause.code === 'DATASET_LOST'
  );
}

export async function runWorker(
  initial: LeaseBackend,
  config: WorkerConfig,
  sink: (event: HistoryEvent) => void,
  control: WorkerControl,
): Promise<WorkerStats> {
  const stats: WorkerStats = {
    leases: 0,
    increments: 0,
    held: 0,
    lost: 0,
    crashes: 0,
    unavailable: 0,
    datasetLost: 0,
    unexpected: [],
  };
  const holderId = `w${config.index}`;
  const { ttlMs } = config;
  let backend = initial;
  while (!control.stopped && now() < config.untilMs) {
    const item = config.items[Math.floor(Math.random() * config.items.length)]!;
    try {
      await withLease(
        backend,
        item,
        holderId,
        {
          ttlMs,
          intervalMs: config.intervalMs,
          stepId: 'count',
          onLost: (err) => {
            const token = err.details?.fencingToken;
            sink({
              type: 'lost',
              item,
              holder: holderId,
              token: String(token),
              at: now(),
              reason: String(err.details?.reason),
            });
          },
        },
        async (holder) => {
          stats.leases++;
          const current = decodeCounter(holder.state);
          await sleep(Math.random() * ttlMs * 0.6, holder.signal);
          if (control.freezeBeforeSaveMs > 0) {
            const ms = control.freezeBeforeSaveMs;
            control.freezeBeforeSaveMs = 0;
            control.onFreeze?.(ms);
            freezeThread(ms);
          }
          await holder.save(
            encodeCounter({ n: (current?.n ?? 0) + 1, w: holder.token.toString(), h: holderId }),
          );
          stats.increments++;
          await sleep(Math.random() * ttlMs * 0.3, holder.signal);
          if (Math.random() < 0.1) throw new Crash('simulated crash: the lease is left to run out');
        },
      );
    } catch (err) {
      if (datasetLost(err) && control.reopen !== undefined) {
        stats.datasetLost++;
        try {
          backend = await control.reopen();
        } catch {
          await sleep(50 + Math.random() * 100); // the server is still coming back
        }
        continue;
      }
      if (err instanceof Crash) stats.crashes++;
      else if (err instanceof WorkleaseError && err.code === 'LEASE_HELD') {
        stats.held++;
        await sleep(5 + Math.random() * 40);
      } else if (err instanceof WorkleaseError && err.code === 'LEASE_LOST') stats.lost++;
      else if (err instanceof WorkleaseError && err.code === 'BACKEND_UNAVAILABLE') {
        stats.unavailable++;
        await sleep(20 + Math.random() * 80);
      } else {
        if (stats.unexpected.length < 20)
          stats.unexpected.push(err instanceof Error ? `${err.name}: ${err.message}` : String(err));
        await sleep(50);
      }
    }
  }
  return stats;
}
