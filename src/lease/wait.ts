/**
 * Waiting acquire: `claim(…, { waitMs })` waits for a held lease to end and
 * takes it then. The wait is woken by the backend, not by a polling loop:
 *
 * - PostgreSQL and PGlite: `admin.watchEnded` (LISTEN on the NOTIFY that a
 *   release, force-release or prune sends, migration 3). Since migration 6 the
 *   NOTIFY is only sent for a lease a waiter asked for: after each refused
 *   acquire the waiter calls `admin.notifyEnd` (acquireWaiting below), which returns false
 *   when the lease ended in between, and the waiter then tries again at once;
 * - Redis: `admin.watchChanges` (a blocking XREAD on the change streams on
 *   standalone Redis, the buckets' shard channels on a Cluster: redis/feed.ts)
 *   followed by one read of the change feed, which says which leases
 *   ended; one reader per backend serves every waiter in the process;
 * - a lease that runs out sends nothing: the waiter sleeps until the
 *   `expiresAt` that the refused acquire reported (by the server's clock,
 *   whose offset the hub measures once);
 * - a slow safety poll (`waitPollMs`, default 10 s) covers a lost wake-up
 *   (e.g. while the watch reconnects, which also wakes every waiter once).
 *
 * Every wake-up only makes a waiter retry `acquire`. The acquire is atomic,
 * so exactly one waiter wins each handoff and the others get `LEASE_HELD` and
 * keep waiting. A waiter registers with the hub before its first attempt, so a
 * release between its attempt and its sleep still wakes it.
 *
 * Waiters of one process on one work item queue: only the head of the queue
 * tries (on wake-ups, at the expiry, on the poll); the next one becomes head
 * when it wins or gives up. Without the queue every ended lease made all of
 * them send an acquire that locks the same row: with 50 waiters on PostgreSQL
 * a handoff took about 170 ms (the winner's save and release queued behind 49
 * refused acquires in the pool). Across processes there is one head each.
 */
import { ErrorCode, hasCode, InvalidArgumentError, LeaseHeldError, type WorkleaseError } from './errors.ts';
import type { ClaimOptions } from './holder-types.ts';
import type { LeaseBackend, LeaseRecord } from './types.ts';

export interface Waiter {
  /** The lease may have ended: try again. Only the head of a queue is woken. */
  wake(): void;
  /** This waiter is now the head of its queue. */
  promote(): void;
}

class WakeHub {
  readonly #backend: LeaseBackend;
  readonly #waiters = new Map<string, Waiter[]>();
  #count = 0;
  #stop: (() => void) | null = null;
  /** Server clock minus local clock (Date.now), in ms; measured once when the hub starts. */
  offsetMs = 0;
  #offsetMeasured = false;
  // Change-feed reader state (Redis).
  #cursor: string | null = null;
  #reading = false;
  #readAgain = false;
  #generation = 0;

  constructor(backend: LeaseBackend) {
    this.#backend = backend;
  }

  /**
   * Queues a waiter on `workId` (promoted at once when the queue was empty); returns a function
   * that removes it and promotes the next one.
   */
  add(workId: string, waiter: Waiter): () => void {
    let queue = this.#waiters.get(workId);
    if (queue === undefined) {
      queue = [];
      this.#waiters.set(workId, queue);
    }
    queue.push(waiter);
    this.#count++;
    if (this.#count === 1) this.#start();
    if (queue.length === 1) waiter.promote();
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      const q = this.#waiters.get(workId);
      if (q !== undefined) {
        const i = q.indexOf(waiter);
        if (i >= 0) q.splice(i, 1);
        if (q.length === 0) this.#waiters.delete(workId);
        else if (i === 0) q[0]?.promote();
      }
      this.#count--;
      if (this.#count === 0) this.#halt();
    };
  }

  #wake(workId: string): void {
    this.#waiters.get(workId)?.[0]?.wake();
  }

  #wakeAll(): void {
    for (const queue of [...this.#waiters.values()]) queue[0]?.wake();
  }

  #start(): void {
    const admin = this.#backend.admin;
    this.#generation++;
    if (!this.#offsetMeasured) {
      this.#offsetMeasured = true;
      const before = Date.now();
      admin.serverTime().then(
        (server) => {
          const after = Date.now();
          this.offsetMs = server.getTime() - (before + after) / 2;
        },
        () => {
          this.#offsetMeasured = false;
        },
      );
    }
    if (admin.watchEnded !== undefined) {
      this.#stop = admin.watchEnded((workId) => (workId === null ? this.#wakeAll() : this.#wake(workId)));
    } else if (admin.watchChanges !== undefined) {
      this.#cursor = null;
      this.#stop = admin.watchChanges(() => void this.#read());
      void this.#read();
    }
  }

  #halt(): void {
    this.#stop?.();
    this.#stop = null;
    this.#cursor = null;
    this.#generation++;
  }

  /** Reads the change feed after a wake-up and wakes the waiters of leases that ended. */
  async #read(): Promise<void> {
    if (this.#reading) {
      this.#readAgain = true;
      return;
    }
    this.#reading = true;
    const generation = this.#generation;
    const admin = this.#backend.admin;
    try {
      do {
        this.#readAgain = false;
        if (generation !== this.#generation) return;
        if (this.#cursor === null) {
          this.#cursor = await admin.changeCursor();
          // Whatever ended before the cursor was taken may have been missed: everyone retries once.
          this.#wakeAll();
          continue;
        }
        const batch = await admin.changes({ cursor: this.#cursor, limit: 1000 });
        if (generation !== this.#generation) return;
        if (batch.gap) {
          this.#cursor = null;
          this.#readAgain = true;
          continue;
        }
        this.#cursor = batch.cursor;
        for (const c of batch.changes) {
          if (c.kind === 'released' || c.kind === 'force-released' || c.kind === 'pruned')
            this.#wake(c.workId);
        }
        // A batch may stop short of the head; an empty one means we are there.
        if (batch.changes.length > 0) this.#readAgain = true;
      } while (this.#readAgain);
    } catch {
      // The safety poll covers this; the next wake-up reads again from a fresh cursor.
      this.#cursor = null;
    } finally {
      this.#reading = false;
    }
  }
}

const hubs = new WeakMap<LeaseBackend, WakeHub>();

export function wakeHub(backend: LeaseBackend): WakeHub {
  let hub = hubs.get(backend);
  if (hub === undefined) {
    hub = new WakeHub(backend);
    hubs.set(backend, hub);
  }
  return hub;
}

export type { WakeHub };

/** The callbacks waiting on each signal, behind one listener of ours (see {@link onAbort}). */
const aborts = new WeakMap<AbortSignal, { callbacks: Set<() => void>; listener: () => void }>();

/**
 * Calls `fn` once when `signal` aborts; returns a function that forgets it. However many waits
 * share one signal (a caller's signal passed to many claims, or a candidate's across every sleep
 * of a campaign that lasts months), the signal carries one listener of ours, removed as soon as
 * nothing waits on it: nothing accumulates on a long-lived signal, and Node's warning about more
 * than 10 listeners on one signal never fires because of us.
 */
export function onAbort(signal: AbortSignal, fn: () => void): () => void {
  let entry = aborts.get(signal);
  if (entry === undefined) {
    const callbacks = new Set<() => void>();
    const listener = (): void => {
      aborts.delete(signal);
      for (const callback of [...callbacks]) callback();
      callbacks.clear();
    };
    entry = { callbacks, listener };
    aborts.set(signal, entry);
    signal.addEventListener('abort', listener, { once: true });
  }
  const { callbacks, listener } = entry;
  // A distinct function per registration, so the same `fn` registered twice is forgotten once each.
  const callback = (): void => fn();
  callbacks.add(callback);
  return () => {
    if (!callbacks.delete(callback) || callbacks.size > 0) return;
    if (aborts.get(signal)?.callbacks === callbacks) aborts.delete(signal);
    signal.removeEventListener('abort', listener);
  };
}

/**
 * Settles as `work` does, or rejects with `signal`'s reason as soon as it aborts. What `work`
 * resolves to after that is given to `late` (e.g. a lease to hand back); its failure then is
 * nobody's and is dropped. Keeps nothing on the signal once settled.
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal, late: (value: T) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const abort = (): void => {
      if (settled) return;
      settled = true;
      reject(signal.reason);
    };
    const unwatch = signal.aborted ? () => {} : onAbort(signal, abort);
    if (signal.aborted) abort();
    work.then(
      (value) => {
        unwatch();
        if (settled) late(value);
        else {
          settled = true;
          resolve(value);
        }
      },
      (err: unknown) => {
        unwatch();
        if (settled) return;
        settled = true;
        reject(err);
      },
    );
  });
}

export interface WaitSettings {
  waitMs: number;
  pollMs: number;
  signal: AbortSignal | undefined;
}

export function resolveWait(o: ClaimOptions): WaitSettings {
  const waitMs = o.waitMs ?? 0;
  if (typeof waitMs !== 'number' || Number.isNaN(waitMs) || waitMs < 0) {
    throw new InvalidArgumentError(
      `options.waitMs must be a number of milliseconds >= 0 (or Infinity), got ${String(waitMs)}`,
    );
  }
  const pollMs = o.waitPollMs ?? 10_000;
  if (typeof pollMs !== 'number' || !Number.isFinite(pollMs) || pollMs < 10 || pollMs > 3_600_000) {
    throw new InvalidArgumentError(
      `options.waitPollMs must be a number of milliseconds from 10 to 3 600 000, got ${String(pollMs)}`,
    );
  }
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) {
    throw new InvalidArgumentError('options.signal must be an AbortSignal');
  }
  return { waitMs, pollMs, signal: o.signal };
}

/**
 * Acquires, waiting up to `waitMs` for a held lease to end. Each wake-up (see above) or timer
 * only leads to another acquire attempt; the backend's atomic acquire picks the one winner.
 */
export async function acquireWaiting(
  backend: LeaseBackend,
  workId: string,
  holderId: string,
  ttlMs: number,
  stepId: string | null,
  wait: WaitSettings,
): Promise<{ record: LeaseRecord; start: number }> {
  const acquire = async () => {
    const start = performance.now();
    const record = await backend.acquire(workId, holderId, ttlMs, stepId === null ? {} : { stepId });
    return { record, start };
  };
  wait.signal?.throwIfAborted();
  if (wait.waitMs === 0) return acquire();
  const hub = wakeHub(backend);
  const until = performance.now() + wait.waitMs;
  let woken = false;
  let head = false;
  let wakeUp: (() => void) | null = null;
  const remove = hub.add(workId, {
    wake() {
      woken = true;
      wakeUp?.();
    },
    promote() {
      head = true;
      woken = true;
      wakeUp?.();
    },
  });
  /** Sleeps `ms`, or less when woken, promoted or aborted. */
  const sleepUntil = (ms: number): Promise<void> =>
    new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        unwatch?.();
        wakeUp = null;
        resolve();
      };
      // setTimeout fires at once for more than 2^31-1 ms (an infinite wait's "rest").
      const timer = setTimeout(done, Math.min(ms, 2_147_483_647));
      wakeUp = done;
      const unwatch = wait.signal === undefined ? undefined : onAbort(wait.signal, done);
    });
  // After a wake-up by the expiry timer that found the lease still held (clock offset, a renewal
  // meanwhile), the next expiry-based sleep is at least this long; it doubles up to the poll interval.
  let expiryFloorMs = 5;
  try {
    let held: WorkleaseError | null = null;
    for (let attempt = 0; ; attempt++) {
      wait.signal?.throwIfAborted();
      if (!head) {
        // Behind another waiter of this process on the same item: sleep until it wins or leaves.
        const left = until - performance.now();
        if (left <= 0)
          throw held ?? new LeaseHeldError(`work item '${workId}' is held`, { details: { workId } });
        await sleepUntil(left);
        continue;
      }
      woken = false;
      try {
        return await acquire();
      } catch (err) {
        if (!hasCode(err, ErrorCode.LEASE_HELD) && !hasCode(err, ErrorCode.BACKEND_UNAVAILABLE)) throw err;
        held = err as WorkleaseError;
      }
      const left = until - performance.now();
      if (left <= 0) throw held;
      if (woken) continue;
      if (hasCode(held, ErrorCode.LEASE_HELD) && backend.admin.notifyEnd !== undefined) {
        // Ask to hear of this lease's end (PostgreSQL sends no NOTIFY for an end nobody asked for).
        // A second past the longest sleep, so it still holds while the next attempt asks again.
        const live = await backend.admin
          .notifyEnd(workId, Math.min(left, wait.pollMs) + 1000)
          .catch(() => true); // the safety poll covers a lost request
        if (!live || woken) continue;
      }
      let sleep = Math.min(left, wait.pollMs);
      let byExpiry = false;
      const expiresAt = held.details?.expiresAt;
      if (expiresAt instanceof Date) {
        const untilExpiry = expiresAt.getTime() - (Date.now() + hub.offsetMs) + 1;
        const ms = Math.max(expiryFloorMs, untilExpiry);
        if (ms < sleep) {
          sleep = ms;
          byExpiry = true;
        }
      } else if (hasCode(held, ErrorCode.BACKEND_UNAVAILABLE)) {
        sleep = Math.min(sleep, Math.max(10, Math.min(wait.pollMs, 50 * 2 ** attempt)));
      }
      await sleepUntil(sleep);
      expiryFloorMs = byExpiry && !woken ? Math.min(wait.pollMs, expiryFloorMs * 2) : 5;
    }
  } finally {
    remove();
  }
}
