/**
 * A sorted list of slot numbers, kept in chunks of at most {@link CHUNK} so an insert or a removal
 * moves at most one chunk (O(log n + CHUNK)), never the whole list. The order is a comparator over
 * slots; a slot's sort key must not change while it is in the list (remove it, change it, insert
 * it again). Positions (ranks) come from per-chunk counts, recomputed lazily after a change.
 */

const CHUNK = 512;

export type SlotCompare = (a: number, b: number) => number;
/** Compares a slot with the probe the caller has in mind: negative when the slot sorts before it. */
export type Probe = (slot: number) => number;

export class SortedSlots {
  private chunks: number[][] = [];
  /** starts[i]: position of chunks[i][0]; valid up to `startsValid` (exclusive). */
  private starts: number[] = [];
  private startsValid = 0;
  private count = 0;

  constructor(readonly compare: SlotCompare) {}

  get size(): number {
    return this.count;
  }

  /** Builds the list from slots in any order (sorted here once). */
  static build(compare: SlotCompare, slots: number[]): SortedSlots {
    const list = new SortedSlots(compare);
    slots.sort(compare);
    for (let i = 0; i < slots.length; i += CHUNK) list.chunks.push(slots.slice(i, i + CHUNK));
    list.count = slots.length;
    return list;
  }

  insert(slot: number): void {
    const { chunks } = this;
    this.count++;
    if (chunks.length === 0) {
      chunks.push([slot]);
      this.startsValid = 0;
      return;
    }
    // Appending in order (a snapshot read in work-id order) is the common case: no search.
    const lastChunk = chunks[chunks.length - 1]!;
    let ci: number;
    if (this.compare(lastChunk[lastChunk.length - 1]!, slot) < 0) ci = chunks.length - 1;
    else ci = this.chunkFor((s) => this.compare(s, slot));
    const chunk = chunks[ci]!;
    let lo = 0;
    let hi = chunk.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.compare(chunk[mid]!, slot) < 0) lo = mid + 1;
      else hi = mid;
    }
    chunk.splice(lo, 0, slot);
    if (chunk.length > 2 * CHUNK) chunks.splice(ci + 1, 0, chunk.splice(CHUNK));
    this.startsValid = Math.min(this.startsValid, ci);
  }

  /** Removes `slot` (found by its current key); false when it is not in the list. */
  remove(slot: number): boolean {
    const pos = this.find((s) => this.compare(s, slot));
    if (pos === null) return false;
    const [ci, i] = pos;
    const chunk = this.chunks[ci]!;
    if (chunk[i] !== slot) return false;
    chunk.splice(i, 1);
    this.count--;
    if (chunk.length === 0) this.chunks.splice(ci, 1);
    this.startsValid = Math.min(this.startsValid, ci);
    return true;
  }

  /** The slot equal to the probe (probe returns 0), or -1. */
  lookup(probe: Probe): number {
    const pos = this.find(probe);
    return pos === null ? -1 : this.chunks[pos[0]]![pos[1]]!;
  }

  /** Position of the first slot not before the probe (probe(slot) >= 0); `size` when none. */
  lowerBound(probe: Probe): number {
    const { chunks } = this;
    if (chunks.length === 0) return 0;
    const ci = this.chunkFor(probe);
    const chunk = chunks[ci]!;
    let lo = 0;
    let hi = chunk.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (probe(chunk[mid]!) < 0) lo = mid + 1;
      else hi = mid;
    }
    return this.startOf(ci) + lo;
  }

  /** Position of the first slot after the probe (probe(slot) > 0). */
  upperBound(probe: Probe): number {
    return this.lowerBound((s) => (probe(s) <= 0 ? -1 : 1));
  }

  /** The slot at a position. */
  at(pos: number): number {
    const [ci, i] = this.locate(pos);
    return this.chunks[ci]![i]!;
  }

  /**
   * Calls `visit` with the slots from position `from` on, forward (or backward from `from`
   * inclusive when `backward`), until it returns false or the list ends.
   */
  walk(from: number, backward: boolean, visit: (slot: number) => boolean): void {
    if (this.count === 0) return;
    if (!backward) {
      if (from >= this.count) return;
      let [ci, i] = this.locate(Math.max(0, from));
      for (; ci < this.chunks.length; ci++, i = 0) {
        const chunk = this.chunks[ci]!;
        for (; i < chunk.length; i++) if (!visit(chunk[i]!)) return;
      }
      return;
    }
    if (from < 0) return;
    let [ci, i] = this.locate(Math.min(from, this.count - 1));
    for (; ci >= 0; ci--) {
      const chunk = this.chunks[ci]!;
      if (i < 0) i = chunk.length - 1;
      for (; i >= 0; i--) if (!visit(chunk[i]!)) return;
    }
  }

  /** Every slot in order. */
  *[Symbol.iterator](): IterableIterator<number> {
    for (const chunk of this.chunks) yield* chunk;
  }

  private locate(pos: number): [number, number] {
    this.refreshStarts();
    const { starts } = this;
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (starts[mid]! <= pos) lo = mid;
      else hi = mid - 1;
    }
    return [lo, pos - starts[lo]!];
  }

  private startOf(ci: number): number {
    this.refreshStarts();
    return this.starts[ci]!;
  }

  private refreshStarts(): void {
    const n = this.chunks.length;
    if (this.startsValid >= n && this.starts.length === n) return;
    this.starts.length = n;
    let from = Math.min(this.startsValid, n);
    let at = from === 0 ? 0 : this.starts[from - 1]! + this.chunks[from - 1]!.length;
    for (; from < n; from++) {
      this.starts[from] = at;
      at += this.chunks[from]!.length;
    }
    this.startsValid = n;
  }

  /** Index of the chunk where a slot matching the probe is, or would be inserted. */
  private chunkFor(probe: Probe): number {
    const { chunks } = this;
    // The last chunk whose first slot is not after the probe.
    let lo = 0;
    let hi = chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (probe(chunks[mid]![0]!) <= 0) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  private find(probe: Probe): [number, number] | null {
    if (this.chunks.length === 0) return null;
    const ci = this.chunkFor(probe);
    const chunk = this.chunks[ci]!;
    let lo = 0;
    let hi = chunk.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (probe(chunk[mid]!) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo < chunk.length && probe(chunk[lo]!) === 0 ? [ci, lo] : null;
  }
}
