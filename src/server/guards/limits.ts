/**
 * Fair shares of a served console: what one person or one address may take,
 * so that nobody's flood costs anybody else their session, their event stream
 * or their sign-in.
 *
 * - **Failed sign-ins** are counted per source address: past `maxFailures` in
 *   `failureWindowMs`, token presentations from that address are answered 429
 *   without being checked, until the oldest failure leaves the window (as
 *   Grafana locks a user name after 5 failures in 5 minutes; a token has no
 *   user name, so the address is what is locked). Signed-in sessions from that
 *   address keep working: a lock never ends or refuses a session.
 * - **Sign-ins** (token exchanges for a session) are counted per person: past
 *   `maxSignIns` in `signInWindowMs`, that person's next one is refused 429.
 * - **Event streams** are counted per person, per address and in all; each cap
 *   refuses the one stream more and never closes an open one.
 *
 * Every table here is bounded (`maxKeys` keys), so a flood from many addresses
 * costs memory in proportion to the cap, not to the flood.
 */

export interface LimitOptions {
  /** Failed token presentations per address before the address is locked out. Default 20. */
  maxFailures?: number;
  /** The window failures are counted over, ms. Default 300 000 (5 min). */
  failureWindowMs?: number;
  /**
   * Sign-ins (token → session) per person per window. Default 300: one a second on average, far
   * below a flood (1 600 a second were measured against an unthrottled console) and far above a
   * team, or a test suite that signs each browser context in anew (about 40 in 6 minutes).
   */
  maxSignIns?: number;
  /** The window sign-ins are counted over, ms. Default 300 000. */
  signInWindowMs?: number;
  /** Event streams per person. Default 32. */
  maxStreamsPerIdentity?: number;
  /** Event streams per source address. Default 100. */
  maxStreamsPerAddress?: number;
  /** Addresses and people remembered per table (and by the security log's folding); past it the least recently counted are forgotten. Default 10 000. */
  maxKeys?: number;
  now?: () => number;
}

/**
 * The last `limit` event times of each key: enough to say whether `limit` fell within the
 * window and when the oldest of them leaves it.
 */
export class SlidingWindow {
  private readonly times = new Map<string, number[]>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly maxKeys: number,
  ) {}

  add(key: string, now: number): void {
    let list = this.times.get(key);
    if (list === undefined) {
      list = [];
    } else {
      this.times.delete(key);
    }
    list.push(now);
    if (list.length > this.limit) list.shift();
    this.times.set(key, list);
    if (this.times.size > this.maxKeys) this.times.delete(this.times.keys().next().value as string);
  }

  /** 0 when `key` is under its limit; else the ms until it is again. */
  blockedFor(key: string, now: number): number {
    const list = this.times.get(key);
    if (list === undefined || list.length < this.limit) return 0;
    const oldest = list[0]!;
    const left = oldest + this.windowMs - now;
    if (left > 0) return left;
    this.times.delete(key);
    return 0;
  }

  get keys(): number {
    return this.times.size;
  }
}

export type StreamRefusal = { status: 429 | 503; message: string; reason: 'identity' | 'address' | 'total' };

export class Limits {
  readonly maxStreamsPerIdentity: number;
  readonly maxStreamsPerAddress: number;
  private readonly failures: SlidingWindow;
  private readonly signIns: SlidingWindow;
  private readonly now: () => number;
  private readonly streamsByIdentity = new Map<string, number>();
  private readonly streamsByAddress = new Map<string, number>();
  private streams = 0;

  constructor(
    options: LimitOptions,
    private readonly maxStreams: number,
  ) {
    const keys = options.maxKeys ?? 10_000;
    this.failures = new SlidingWindow(options.maxFailures ?? 20, options.failureWindowMs ?? 300_000, keys);
    this.signIns = new SlidingWindow(options.maxSignIns ?? 300, options.signInWindowMs ?? 300_000, keys);
    this.maxStreamsPerIdentity = options.maxStreamsPerIdentity ?? 32;
    this.maxStreamsPerAddress = options.maxStreamsPerAddress ?? 100;
    this.now = options.now ?? Date.now;
  }

  /** 0 when `address` may present a token; else the ms until it may again. */
  lockedFor(address: string): number {
    return this.failures.blockedFor(address, this.now());
  }

  failed(address: string): void {
    this.failures.add(address, this.now());
  }

  /** 0 when `identity` may sign in again now; else the ms until it may. Counts the sign-in when it may. */
  signIn(identity: string): number {
    const now = this.now();
    const wait = this.signIns.blockedFor(identity, now);
    if (wait === 0) this.signIns.add(identity, now);
    return wait;
  }

  /** Takes a stream slot, or says which cap refuses it. */
  openStream(identity: string, address: string): StreamRefusal | null {
    if (this.streams >= this.maxStreams) {
      return {
        status: 503,
        message: `Too many console clients (at most ${this.maxStreams}); close another console tab`,
        reason: 'total',
      };
    }
    if ((this.streamsByIdentity.get(identity) ?? 0) >= this.maxStreamsPerIdentity) {
      return {
        status: 429,
        message: `Too many event streams of yours (at most ${this.maxStreamsPerIdentity}); close another console tab`,
        reason: 'identity',
      };
    }
    if ((this.streamsByAddress.get(address) ?? 0) >= this.maxStreamsPerAddress) {
      return {
        status: 429,
        message: `Too many event streams from ${address} (at most ${this.maxStreamsPerAddress})`,
        reason: 'address',
      };
    }
    this.streams++;
    this.streamsByIdentity.set(identity, (this.streamsByIdentity.get(identity) ?? 0) + 1);
    this.streamsByAddress.set(address, (this.streamsByAddress.get(address) ?? 0) + 1);
    return null;
  }

  closeStream(identity: string, address: string): void {
    this.streams--;
    const i = (this.streamsByIdentity.get(identity) ?? 1) - 1;
    if (i <= 0) this.streamsByIdentity.delete(identity);
    else this.streamsByIdentity.set(identity, i);
    const a = (this.streamsByAddress.get(address) ?? 1) - 1;
    if (a <= 0) this.streamsByAddress.delete(address);
    else this.streamsByAddress.set(address, a);
  }

  get openStreams(): number {
    return this.streams;
  }
}
