/**
 * The columns of the fleet index: one typed array per field of a lease row, indexed by slot, so a
 * million leases cost about 150 bytes each (the work id string included) instead of a LeaseRow
 * object and a Map entry (~500 B). Holder and step ids are interned. Times are epoch ms in a
 * Float64Array, NaN for null. Slots of removed rows are reused.
 */
import type { HandoffCounts, LeaseInfo } from '../../lease/types.ts';
import type { LeaseRow, ReleaseRequestWire } from '../api.ts';
import { parseMemberWorkId } from '../groups.ts';

export const F_LOWER = 1;
export const F_MEMBER = 2;
export const F_CLEAN = 4;
export const F_HANDOFFS = 8;

const PRED = ['none', 'released', 'expired', 'force-released'] as const;
const ENDED = [null, 'released', 'force-released'] as const;

/** Strings stored once, by number. */
export class Interned {
  readonly values: string[] = [];
  private readonly ids = new Map<string, number>();
  id(value: string): number {
    let n = this.ids.get(value);
    if (n === undefined) {
      n = this.values.length;
      this.values.push(value);
      this.ids.set(value, n);
    }
    return n;
  }
}

const nul = (v: number): number | null => (Number.isNaN(v) ? null : v);
const ms = (d: Date | null): number => (d === null ? Number.NaN : d.getTime());

export class Columns {
  capacity = 0;
  workId: string[] = [];
  flags = new Uint8Array(0);
  holder = new Uint32Array(0);
  step = new Int32Array(0);
  token = new BigUint64Array(0);
  version = new BigUint64Array(0);
  expiresAt = new Float64Array(0);
  acquiredAt = new Float64Array(0);
  renewedAt = new Float64Array(0);
  checkpointedAt = new Float64Array(0);
  releasedAt = new Float64Array(0);
  checkpointSize = new Float64Array(0);
  ttlMs = new Float64Array(0);
  predEnd = new Uint8Array(0);
  ended = new Uint8Array(0);
  /** acquisitions, releases, forceReleases per slot (valid with F_HANDOFFS). */
  handoffs = new Uint32Array(0);
  readonly holders = new Interned();
  readonly steps = new Interned();
  readonly releaseRequests = new Map<number, ReleaseRequestWire>();
  private readonly free: number[] = [];
  private used = 0;

  /** A slot for a new row. */
  allocate(): number {
    const reused = this.free.pop();
    if (reused !== undefined) return reused;
    if (this.used === this.capacity) this.grow(Math.max(1024, this.capacity * 2));
    return this.used++;
  }

  release(slot: number): void {
    this.workId[slot] = '';
    this.releaseRequests.delete(slot);
    this.free.push(slot);
  }

  write(slot: number, info: LeaseInfo): void {
    this.workId[slot] = info.workId;
    let f = 0;
    if (info.workId === info.workId.toLowerCase()) f |= F_LOWER;
    if (info.workId.startsWith('group:') && parseMemberWorkId(info.workId) !== null) f |= F_MEMBER;
    if (info.cleanHandoff) f |= F_CLEAN;
    if (info.handoffs !== undefined) {
      f |= F_HANDOFFS;
      this.handoffs[slot * 3] = info.handoffs.acquisitions;
      this.handoffs[slot * 3 + 1] = info.handoffs.releases;
      this.handoffs[slot * 3 + 2] = info.handoffs.forceReleases;
    }
    this.flags[slot] = f;
    this.holder[slot] = this.holders.id(info.holderId);
    this.step[slot] = info.stepId === null ? -1 : this.steps.id(info.stepId);
    this.token[slot] = info.fencingToken;
    this.version[slot] = info.version;
    this.expiresAt[slot] = info.expiresAt.getTime();
    this.acquiredAt[slot] = info.acquiredAt.getTime();
    this.renewedAt[slot] = ms(info.renewedAt);
    this.checkpointedAt[slot] = ms(info.checkpointedAt);
    this.releasedAt[slot] = ms(info.releasedAt);
    this.checkpointSize[slot] = info.checkpointSize ?? Number.NaN;
    this.ttlMs[slot] = info.ttlMs;
    this.predEnd[slot] = PRED.indexOf(info.predecessorEnd);
    this.ended[slot] = info.ended === null ? 0 : info.ended === 'released' ? 1 : 2;
    if (info.releaseRequest === null) this.releaseRequests.delete(slot);
    else {
      const r = info.releaseRequest;
      this.releaseRequests.set(slot, { at: r.at.getTime(), operator: r.operator, reason: r.reason });
    }
  }

  endedOf(slot: number): 'released' | 'force-released' | null {
    return ENDED[this.ended[slot]!] ?? null;
  }

  handoffsOf(slot: number): HandoffCounts | undefined {
    if ((this.flags[slot]! & F_HANDOFFS) === 0) return undefined;
    const h = this.handoffs;
    return { acquisitions: h[slot * 3]!, releases: h[slot * 3 + 1]!, forceReleases: h[slot * 3 + 2]! };
  }

  holderOf(slot: number): string {
    return this.holders.values[this.holder[slot]!]!;
  }

  /** The wire row of a slot (a new object: the index keeps none). */
  row(slot: number): LeaseRow {
    const step = this.step[slot]!;
    return {
      workId: this.workId[slot]!,
      holderId: this.holderOf(slot),
      fencingToken: this.token[slot]!.toString(),
      expiresAt: this.expiresAt[slot]!,
      ttlMs: this.ttlMs[slot]!,
      stepId: step < 0 ? null : this.steps.values[step]!,
      acquiredAt: this.acquiredAt[slot]!,
      renewedAt: nul(this.renewedAt[slot]!),
      checkpointedAt: nul(this.checkpointedAt[slot]!),
      releasedAt: nul(this.releasedAt[slot]!),
      checkpointSize: nul(this.checkpointSize[slot]!),
      cleanHandoff: (this.flags[slot]! & F_CLEAN) !== 0,
      predecessorEnd: PRED[this.predEnd[slot]!] ?? 'none',
      ended: this.endedOf(slot),
      version: this.version[slot]!.toString(),
      releaseRequest: this.releaseRequests.get(slot) ?? null,
    };
  }

  private grow(capacity: number): void {
    const grow = <T extends { length: number; set(a: T): void }>(
      old: T,
      make: (n: number) => T,
      per = 1,
    ): T => {
      const next = make(capacity * per);
      next.set(old);
      return next;
    };
    this.flags = grow(this.flags, (n) => new Uint8Array(n));
    this.holder = grow(this.holder, (n) => new Uint32Array(n));
    this.step = grow(this.step, (n) => new Int32Array(n));
    this.token = grow(this.token, (n) => new BigUint64Array(n));
    this.version = grow(this.version, (n) => new BigUint64Array(n));
    this.expiresAt = grow(this.expiresAt, (n) => new Float64Array(n));
    this.acquiredAt = grow(this.acquiredAt, (n) => new Float64Array(n));
    this.renewedAt = grow(this.renewedAt, (n) => new Float64Array(n));
    this.checkpointedAt = grow(this.checkpointedAt, (n) => new Float64Array(n));
    this.releasedAt = grow(this.releasedAt, (n) => new Float64Array(n));
    this.checkpointSize = grow(this.checkpointSize, (n) => new Float64Array(n));
    this.ttlMs = grow(this.ttlMs, (n) => new Float64Array(n));
    this.predEnd = grow(this.predEnd, (n) => new Uint8Array(n));
    this.ended = grow(this.ended, (n) => new Uint8Array(n));
    this.handoffs = grow(this.handoffs, (n) => new Uint32Array(n), 3);
    this.capacity = capacity;
  }
}
