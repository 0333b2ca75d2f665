/**
 * Waiting acquire: `claim(…, { waitMs })` waits for a held lease to end and
 * takes it then. The wait is woken by the backend, not by a polling loop:
 *
 * - PostgreSQL and PGlite: `admin.watchEnded` (LISTEN on the NOTIFY that a
 *   release, force-release or prune sends, migration 3). Since migration 6 the
 *   NOTIFY is only sent for a lease a waiter asked for: after each refused
 *   acquire the waiter calls `admin.notifyEnd` (holder.ts), which returns false
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
import type { LeaseBackend } from './types.ts';

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
