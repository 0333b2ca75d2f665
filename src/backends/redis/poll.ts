/**
 * When a lone lease call busy-polls for its reply (wire.ts, Busy poll; OpenOptions.busyPollMs).
 *
 * Polling saves the wake-up of a sleeping process, and a process that kept its core busy runs the
 * code around the reply faster too; it pays only where the server's replies come back quickly and
 * the server does not need the core the client polls on. Measured (private Redis 7.0 on this 2-core
 * machine, acquire+release cycles at 1 in flight, runs of 3 000 taking turns): with the server on
 * the other core, 88.7–144.8 us per cycle without polling against 75.3–127.0 with it (3 runs
 * each); with the client pinned to the server's core, 95.2–98.4 us against 107.5–111.6 (runs 3 to
 * 8 of 8 each; the first two, still warming up, 114.1–179.3 against 118.1–161.5): the poll holds
 * the core the server needs in order to answer. Hence:
 * - no poll by default in a process that may run on one CPU only ({@link defaultBusyPollMs});
 * - no poll while lone calls' replies take longer than the bound on average (a server across a
 *   network: a poll would burn the whole bound and still sleep). Each reply counts as at most twice
 *   the bound, so one slow reply (a 1 MiB state) raises the average by at most a quarter of it.
 *
 * Telling "polling pays" from the replies' own times was tried and dropped: the reply time of a
 * polled call and of a sleeping one came out the same within noise (moving averages 30–35 us both
 * ways, same runs) while whole cycles were 12–15 % faster polled, since the gain is in the work
 * around the reply (the next write, the caller's code) on a core that did not go idle.
 */
import { availableParallelism } from 'node:os';

/** The default poll bound, ms (100 us): long enough for a reply from a server on the same host (40–90 us here). */
export const DEFAULT_BUSY_POLL_MS = 0.1;

/**
 * The bound when the caller sets none: {@link DEFAULT_BUSY_POLL_MS}, or 0 in a process that may
 * run on one CPU only: `availableParallelism()` follows the CPU affinity mask, so a host with one
 * CPU and a process pinned to one (taskset, a cpuset) both count 1.
 */
export function defaultBusyPollMs(cpus = availableParallelism()): number {
  return cpus > 1 ? DEFAULT_BUSY_POLL_MS : 0;
}

/** Each reply's weight in the average. */
const WEIGHT = 1 / 8;

export class PollPolicy {
  /** Moving average of lone calls' reply times, ms; 0 before the first. */
  private avg = 0;

  /** `boundMs`: how long one call may poll (0: never). */
  constructor(readonly boundMs: number) {}

  /** Whether the next lone call polls. */
  choose(): boolean {
    return this.boundMs > 0 && this.avg <= this.boundMs;
  }

  /** Counts a lone call's reply time, `ms` after it was written. */
  answered(ms: number): void {
    if (this.boundMs === 0) return;
    const v = Math.min(ms, 2 * this.boundMs);
    this.avg = this.avg === 0 ? v : this.avg + (v - this.avg) * WEIGHT;
  }

  /** The average reply time of lone calls, ms (0 before the first), for tests and benches. */
  get averageMs(): number {
    return this.avg;
  }
}
