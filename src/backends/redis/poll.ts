/**
 * When a lone lease call busy-polls for its reply (wire.ts, Busy poll; OpenOptions.busyPollMs).
 *
 * Polling saves the wake-up of a sleeping process, and a process that kept its core busy runs the
 * code around the reply faster too; it pays only where the server's replies come back quickly and
 * the server does not need the core the client polls on. Measured (private Redis 7.0 on a 2-core
 * machine, acquire+release cycles at 1 in flight, runs of 3 000 taking turns): with the server on
 * the other core, 88.7–144.8 us per cycle without polling against 75.3–127.0 with it (3 runs
 * each); with the client pinned to the server's core, 95.2–98.4 us against 107.5–111.6 (runs 3 to
 * 8 of 8 each; the first two, still warming up, 114.1–179.3 against 118.1–161.5): the poll holds
 * the core the server needs in order to answer. Hence:
 * - no poll by default in a process that may run on one CPU only ({@link defaultBusyPollMs});
 * - no poll while most polled replies come later than the bound (a server across a network: a
 *   poll would burn the whole bound and still sleep). While off, one lone call in
 *   {@link PROBE_EVERY} polls anyway, so a server that got faster (or a slow spell that passed) is
 *   seen again; that costs at most the bound over that many calls.
 *
 * Only polled replies decide. An earlier policy averaged every lone call's reply time, and a
 * sleeping client's replies carry its own wake-up: on a virtual machine whose wake-ups were slow,
 * acquire+release replies took 152 us at the median unpolled against 77 us polled (p90 230 against
 * 129 us), so one slow spell turned the poll off and the unpolled replies kept it off, for good:
 * cycles stayed at 416–484 us where bounds of 0.2–0.5 ms, met by most replies, gave 197–343
 * (shared Redis 7.0 on loopback, 5 runs of 6–7 x 1 000 cycles taking turns, medians, load 0.6–0.9).
 */
import { availableParallelism } from 'node:os';

/**
 * The default poll bound, ms (200 us): long enough for nearly every polled reply from a server on
 * the same host. On a machine with slow wake-ups, polled acquire and release replies took 78 us at
 * the median and 109 at p90 (bench:redlock), so a bound of 0.1 ms missed 18 % of them, and
 * bursts of misses turned the poll off for a part of the run: cycles 1.15x redlock's there (1.11–
 * 1.20, 3 rounds), 1.37x (1.26–1.39) with 0.2 ms, which 98 % of polled replies met (p50 90 us,
 * p90 120). Elsewhere replies came in 30–35 us on average and the bound changes nothing.
 */
export const DEFAULT_BUSY_POLL_MS = 0.2;

/**
 * The bound when the caller sets none: {@link DEFAULT_BUSY_POLL_MS}, or 0 in a process that may
 * run on one CPU only: `availableParallelism()` follows the CPU affinity mask, so a host with one
 * CPU and a process pinned to one (taskset, a cpuset) both count 1.
 */
export function defaultBusyPollMs(cpus = availableParallelism()): number {
  return cpus > 1 ? DEFAULT_BUSY_POLL_MS : 0;
}

/** Each polled reply's weight in the hit rate. */
const WEIGHT = 1 / 8;
/** The poll runs while at least this share of polled replies (moving) came within the bound. */
const MIN_HIT_RATE = 0.5;
/** While the poll is off, every this many lone calls one polls (a probe). */
export const PROBE_EVERY = 16;

export class PollPolicy {
  /** Moving share of polled replies that came within the bound; 1 before the first. */
  private hits = 1;
  /** Lone calls not polled since the last poll, while off. */
  private skipped = 0;

  /** `boundMs`: how long one call may poll (0: never). */
  constructor(readonly boundMs: number) {}

  /** Whether the next lone call polls; when it says true, that call's reply counts. */
  choose(): boolean {
    if (this.boundMs === 0) return false;
    if (this.on || ++this.skipped >= PROBE_EVERY) {
      this.skipped = 0;
      return true;
    }
    return false;
  }

  /** Counts a polled call's reply, `ms` after it was written. */
  answered(ms: number): void {
    if (this.boundMs === 0) return;
    this.hits += ((ms <= this.boundMs ? 1 : 0) - this.hits) * WEIGHT;
  }

  /** Whether lone calls poll now (probes aside), for tests and benches. */
  get on(): boolean {
    return this.boundMs > 0 && this.hits >= MIN_HIT_RATE;
  }

  /** The moving share of polled replies within the bound (1 before the first), for tests and benches. */
  get hitRate(): number {
    return this.hits;
  }
}
