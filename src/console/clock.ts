/**
 * The backend's clock as seen from this machine. Lease status is decided by
 * the backend's clock (DESIGN §2), and an operator's laptop may be minutes
 * off, so the console measures the offset with `serverTime()` round trips and
 * derives every status from `localNow() + offset`.
 *
 * One sample: local t0, server time s, local t1. Assuming the request and the
 * reply take equally long, the server read its clock at the midpoint
 * (t0 + t1) / 2, so offset = s - (t0 + t1) / 2, with an error of at most half
 * the round trip. Of several samples the one with the shortest round trip is
 * the most precise, so that one wins.
 */

export interface ServerClockOptions {
  /** This machine's clock in epoch ms. Default `Date.now`. Injectable so tests can skew it. */
  now?: () => number;
  /** Round trips per measurement; the fastest one is kept. Default 3. */
  samples?: number;
  /** How often the offset is measured again, ms. Default 60 000. */
  refreshMs?: number;
}

export interface ClockSample {
  offsetMs: number;
  roundTripMs: number;
}

export class ServerClock {
  readonly now: () => number;
  private readonly samples: number;
  private readonly refreshMs: number;
  private offset = 0;
  private roundTrip = Number.POSITIVE_INFINITY;
  private timer: NodeJS.Timeout | null = null;
  private measuredOnce = false;

  constructor(
    private readonly serverTime: () => Promise<Date>,
    options: ServerClockOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.samples = options.samples ?? 3;
    this.refreshMs = options.refreshMs ?? 60_000;
  }

  /** Backend clock minus local clock, ms (0 before the first measurement). */
  get offsetMs(): number {
    return this.offset;
  }

  /** Round trip of the sample the offset came from, ms; the offset is good to half of it. */
  get roundTripMs(): number {
    return this.roundTrip;
  }

  get measured(): boolean {
    return this.measuredOnce;
  }

  /** The backend's clock now, estimated, epoch ms. */
  serverNow(): number {
    return Math.round(this.now() + this.offset);
  }

  /** Takes `samples` round trips and keeps the fastest. Throws what `serverTime` throws. */
  async measure(): Promise<ClockSample> {
    let best: ClockSample | null = null;
    for (let i = 0; i < this.samples; i++) {
      const t0 = this.now();
      const server = (await this.serverTime()).getTime();
      const t1 = this.now();
      const sample = { offsetMs: server - (t0 + t1) / 2, roundTripMs: t1 - t0 };
      if (best === null || sample.roundTripMs < best.roundTripMs) best = sample;
    }
    if (best === null) throw new Error('ServerClock needs at least one sample');
    this.offset = best.offsetMs;
    this.roundTrip = best.roundTripMs;
    this.measuredOnce = true;
    return best;
  }

  /** Measures again every `refreshMs`; failures keep the last offset (the feed reports the outage). */
  start(): void {
    if (this.timer !== null) return;
    this.timer = setInterval(() => {
      this.measure().catch(() => {});
    }, this.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }
}
