/**
 * How far the server's clock is ahead of this process's monotonic clock (`performance.now()`), as a
 * lower bound, for the deadline an acquire carries (sql/statements/acquire.ts, redis/scripts.ts acquire). A server time read
 * somewhere between sending a statement and receiving its answer is at most the server's clock at
 * the receive: `server ms - receive` never exceeds the true offset. The monotonic clock, not
 * Date.now(): a client clock stepped forward would otherwise push deadlines later than the moment
 * the call really gives up. Clocks drift apart, so a bound loses {@link DRIFT} per ms of its age
 * (1000 ppm: far above what NTP-disciplined clocks drift). A deadline computed from it is at or
 * before the call's real give-up moment in the server's clock; what stays uncovered is the server's
 * own clock stepping back.
 */
export class ServerClock {
  #best: number | null = null;
  #at = 0;

  /** A server time (epoch ms) read before `receivedAt` (performance.now()). */
  observe(serverMs: number, receivedAt: number): void {
    if (!Number.isFinite(serverMs)) return;
    const bound = serverMs - receivedAt;
    const aged = this.#best === null ? null : this.#best - DRIFT * (receivedAt - this.#at);
    if (aged === null || bound >= aged) {
      this.#best = bound;
      this.#at = receivedAt;
    }
  }

  /** The server's time (epoch ms) at or before `afterMs` from now, null when it was never measured. */
  deadline(afterMs: number): number | null {
    if (this.#best === null) return null;
    const now = performance.now();
    return Math.floor(now + afterMs + this.#best - DRIFT * (now - this.#at));
  }
}

const DRIFT = 1e-3;
