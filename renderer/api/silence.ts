/**
 * When the console server went quiet, per connection, to the millisecond.
 *
 * The server announces every connection about once a second; a connection not heard of for
 * {@link SILENT_MS} is marked stale (app/freshness.ts). The page's shared ticker runs once a
 * second, so judging silence only on its ticks marked a silent server stale up to a second late
 * (3.96 s after it stopped, with the old 3 s threshold, against the 2 s the README promises).
 * This watch keeps one timer, armed for the earliest moment a connection turns silent, and bumps
 * {@link SilenceWatch.rev} when it passes: the freshness hook re-evaluates at that instant.
 *
 * One timer whatever the event rate, and none while nothing listens: an event only moves a connection's `heardAt`; the timer,
 * when it fires, re-arms itself for the new earliest deadline if nothing went silent yet.
 */

/**
 * No event about a connection for this long, with the link up: the console server is not keeping
 * the page current. Announcements come every second, so this leaves half a second for a late one
 * on a loaded machine, and a silent server is marked stale at most 1.5 s after its last word.
 */
export const SILENT_MS = 1500;

export class SilenceWatch {
  /** Local time each connection was last heard of (any event naming it). */
  readonly heardAt = new Map<string, number>();
  /** Connections silent at the last evaluation: a change of this set bumps `rev`. */
  private silent = new Set<string>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private readonly listeners = new Set<() => void>();
  /** Bumped whenever a connection turned silent or was heard again after being silent. */
  rev = 0;

  constructor(
    /** Connections never heard of count from here. */
    readonly startedAt: number = Date.now(),
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** Local time a connection was last heard of (the page's start if never). */
  lastHeard(id: string): number {
    return this.heardAt.get(id) ?? this.startedAt;
  }

  heard(id: string, at: number = this.now()): void {
    this.heardAt.set(id, at);
    if (this.silent.delete(id)) this.bump();
    this.arm();
  }

  /** Listens for `rev` changes (the useSyncExternalStore shape). */
  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    this.arm();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stop();
    };
  };

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private bump(): void {
    this.rev++;
    for (const l of this.listeners) l();
  }

  /** Armed only while someone listens: nobody to tell, no timer. */
  private arm(): void {
    if (this.timer !== null || this.listeners.size === 0) return;
    let earliest = Number.POSITIVE_INFINITY;
    for (const [id, at] of this.heardAt) if (!this.silent.has(id)) earliest = Math.min(earliest, at);
    if (earliest === Number.POSITIVE_INFINITY) return;
    // One millisecond past the threshold: freshness compares with `>`.
    const wait = Math.max(0, earliest + SILENT_MS + 1 - this.now());
    this.timer = setTimeout(() => this.check(), wait);
  }

  private check(): void {
    this.timer = null;
    const now = this.now();
    let changed = false;
    for (const [id, at] of this.heardAt) {
      if (now - at > SILENT_MS && !this.silent.has(id)) {
        this.silent.add(id);
        changed = true;
      }
    }
    if (changed) this.bump();
    this.arm();
  }
}
