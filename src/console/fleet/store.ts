/**
 * The fleet index of one connection (issue 43): every lease of the fleet in {@link Columns}, the
 * work ids in a {@link SortedSlots} (lookups and work-id order), each row's status judged at one
 * backend time (`judgedAt`), whole-fleet counts by status kept with them, and a timing wheel of the
 * moments statuses change by time alone.
 *
 * Statuses move with time (live → expiring → expired, stuck) only at the moment
 * status.ts `nextStatusChangeAt` names, so judging at a later time touches only the rows whose
 * moment has come (the wheel's buckets up to it), never the whole fleet. The same moments tell the
 * heartbeat check which rows to re-read (`due`): a row whose next status change lies beyond the
 * check shows the same status whether or not it was renewed since it was read.
 *
 * Sort orders other than work id are built on first use and then kept current with every change.
 */
import type { LeaseInfo } from '../../lease/types.ts';
import { LEASE_STATUSES, type LeaseStatus, type Thresholds } from '../api.ts';
import type { ViewSortColumn } from '../common/view.ts';
import { Columns, F_MEMBER } from './columns.ts';
import { SortedSlots } from './sorted.ts';

export const ST_LIVE = 0;
export const ST_EXPIRING = 1;
export const ST_EXPIRED = 2;
export const ST_RELEASED = 3;
export const ST_STUCK = 4;
export const ST_FORCE = 5;
/** Statuses by code (the order of LEASE_STATUSES). */
export const STATUS_NAMES: readonly LeaseStatus[] = LEASE_STATUSES;

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
/** Null times and sizes sort first. */
const num = (v: number): number => (Number.isNaN(v) ? -1 : v);

export class FleetStore {
  readonly cols = new Columns();
  readonly byWorkId: SortedSlots;
  status = new Uint8Array(0);
  /** When the row's status changes by time alone (backend ms), NaN: never. */
  nextChange = new Float64Array(0);
  readonly counts = new Float64Array(STATUS_NAMES.length);
  /** Backend time statuses are judged at. */
  judgedAt = 0;
  /** Bumped by every change of a row or of a status (views compare it to know they are current). */
  seq = 0;
  private readonly wheel = new Map<number, number[]>();
  /** Lowest wheel second not yet judged. */
  private wheelFrom = 0;
  private readonly sorts = new Map<ViewSortColumn, SortedSlots>();

  constructor(
    private thresholds: Thresholds,
    /** Backend time to judge the first rows at. */
    at: number,
  ) {
    this.judgedAt = at;
    this.wheelFrom = Math.floor(at / 1000);
    this.byWorkId = new SortedSlots((a, b) => byString(this.cols.workId[a]!, this.cols.workId[b]!));
  }

  get size(): number {
    return this.byWorkId.size;
  }

  find(workId: string): number {
    const ids = this.cols.workId;
    return this.byWorkId.lookup((s) => byString(ids[s]!, workId));
  }

  /** Inserts or replaces the row of `info.workId` (`known`: its slot, -1 for none, when just looked up). */
  set(info: LeaseInfo, known?: number): number {
    let slot = known ?? this.find(info.workId);
    if (slot < 0) {
      slot = this.cols.allocate();
      this.ensure();
      this.cols.write(slot, info);
      this.byWorkId.insert(slot);
      for (const list of this.sorts.values()) list.insert(slot);
    } else {
      this.counts[this.status[slot]!]!--;
      for (const list of this.sorts.values()) list.remove(slot);
      this.cols.write(slot, info);
      for (const list of this.sorts.values()) list.insert(slot);
    }
    this.judgeSlot(slot, true);
    this.counts[this.status[slot]!]!++;
    this.seq++;
    return slot;
  }

  delete(workId: string): boolean {
    const slot = this.find(workId);
    if (slot < 0) return false;
    this.counts[this.status[slot]!]!--;
    for (const list of this.sorts.values()) list.remove(slot);
    this.byWorkId.remove(slot);
    this.cols.release(slot);
    this.nextChange[slot] = Number.NaN;
    this.seq++;
    return true;
  }

  /**
   * Judges every status at `at` (backend ms): the rows whose status changes by time alone by
   * then, from the wheel; every row when time went back (a connection that turned stale).
   */
  judge(at: number): void {
    if (at === this.judgedAt) return;
    if (at < this.judgedAt) {
      this.judgedAt = at;
      this.rejudgeAll();
      return;
    }
    this.judgedAt = at;
    const last = Math.floor(at / 1000);
    for (const sec of this.seconds(last)) {
      const bucket = this.wheel.get(sec);
      if (bucket === undefined) continue;
      this.wheel.delete(sec);
      for (const slot of bucket) {
        const next = this.nextChange[slot]!;
        if (Number.isNaN(next) || Math.floor(next / 1000) !== sec) continue;
        if (next > at) {
          this.schedule(slot, next);
          continue;
        }
        this.restatus(slot);
      }
    }
    this.wheelFrom = last;
  }

  /** Slots whose status may change by `upTo` (backend ms): what a heartbeat check re-reads. */
  due(upTo: number): number[] {
    const out: number[] = [];
    const seen = new Set<number>();
    const last = Math.floor(upTo / 1000);
    for (const sec of this.seconds(last)) {
      const bucket = this.wheel.get(sec);
      if (bucket === undefined) continue;
      for (const slot of bucket) {
        const next = this.nextChange[slot]!;
        if (next <= upTo && Math.floor(next / 1000) === sec && !seen.has(slot)) {
          seen.add(slot);
          out.push(slot);
        }
      }
    }
    return out;
  }

  /** The wheel's seconds from `wheelFrom` to `last`, in order (by its keys after a long gap). */
  private seconds(last: number): number[] {
    const from = this.wheelFrom;
    if (last - from > 4 * this.wheel.size + 64) {
      const keys: number[] = [];
      for (const sec of this.wheel.keys()) if (sec >= from && sec <= last) keys.push(sec);
      return keys.sort((a, b) => a - b);
    }
    const out: number[] = [];
    for (let sec = from; sec <= last; sec++) out.push(sec);
    return out;
  }

  setThresholds(thresholds: Thresholds): void {
    this.thresholds = thresholds;
    this.rejudgeAll();
  }

  statusName(slot: number): LeaseStatus {
    return STATUS_NAMES[this.status[slot]!]!;
  }

  countsByStatus(): Record<LeaseStatus, number> {
    const out = {} as Record<LeaseStatus, number>;
    STATUS_NAMES.forEach((name, i) => {
      out[name] = this.counts[i]!;
    });
    return out;
  }

  /** The order of a sort column (work id order for `workId`), built on first use. */
  order(column: ViewSortColumn): SortedSlots {
    if (column === 'workId') return this.byWorkId;
    let list = this.sorts.get(column);
    if (list === undefined) {
      const key = this.keyCompare(column);
      const ids = this.cols.workId;
      list = SortedSlots.build((a, b) => key(a, b) || byString(ids[a]!, ids[b]!), [...this.byWorkId]);
      this.sorts.set(column, list);
    }
    return list;
  }

  /** The sort key of a slot in a column, as a cursor carries it. */
  key(column: ViewSortColumn, slot: number): string | number {
    const c = this.cols;
    switch (column) {
      case 'workId':
        return '';
      case 'holderId':
        return c.holderOf(slot);
      case 'status':
        return this.status[slot]!;
      case 'fencingToken':
        return c.token[slot]!.toString();
      case 'expiresAt':
        return c.expiresAt[slot]!;
      case 'acquiredAt':
        return c.acquiredAt[slot]!;
      case 'renewedAt':
        return num(c.renewedAt[slot]!);
      case 'checkpointedAt':
        return num(c.checkpointedAt[slot]!);
      case 'ttlMs':
        return c.ttlMs[slot]!;
      case 'checkpointSize':
        return num(c.checkpointSize[slot]!);
    }
  }

  /** Compares a slot's key in `column` with a key (from a cursor). */
  compareKey(column: ViewSortColumn, slot: number, key: string | number): number {
    const mine = this.key(column, slot);
    if (column === 'fencingToken') {
      const a = BigInt(mine);
      const b = BigInt(key);
      return a < b ? -1 : a > b ? 1 : 0;
    }
    if (typeof mine === 'number') return mine - (key as number);
    return byString(mine, key as string);
  }

  private keyCompare(column: ViewSortColumn): (a: number, b: number) => number {
    const c = this.cols;
    const numeric = (arr: Float64Array) => (a: number, b: number) => num(arr[a]!) - num(arr[b]!);
    switch (column) {
      case 'workId':
        return () => 0;
      case 'holderId':
        return (a, b) => (c.holder[a] === c.holder[b] ? 0 : byString(c.holderOf(a), c.holderOf(b)));
      case 'status':
        return (a, b) => this.status[a]! - this.status[b]!;
      case 'fencingToken':
        return (a, b) => (c.token[a]! < c.token[b]! ? -1 : c.token[a]! > c.token[b]! ? 1 : 0);
      case 'expiresAt':
        return numeric(c.expiresAt);
      case 'acquiredAt':
        return numeric(c.acquiredAt);
      case 'renewedAt':
        return numeric(c.renewedAt);
      case 'checkpointedAt':
        return numeric(c.checkpointedAt);
      case 'ttlMs':
        return numeric(c.ttlMs);
      case 'checkpointSize':
        return numeric(c.checkpointSize);
    }
  }

  private rejudgeAll(): void {
    this.counts.fill(0);
    this.wheel.clear();
    this.wheelFrom = Math.floor(this.judgedAt / 1000);
    const statusSort = this.sorts.get('status');
    if (statusSort !== undefined) this.sorts.delete('status');
    for (const slot of this.byWorkId) {
      this.judgeSlot(slot, false);
      this.counts[this.status[slot]!]!++;
    }
    // Rebuilt rather than patched: most statuses may have moved.
    if (statusSort !== undefined) this.order('status');
    this.seq++;
  }

  /** A status change by time: the row moves in the status order and in the counts. */
  private restatus(slot: number): void {
    const before = this.status[slot]!;
    const statusSort = this.sorts.get('status');
    const code = this.statusOf(slot, this.judgedAt);
    if (code !== before) {
      statusSort?.remove(slot);
      this.status[slot] = code;
      statusSort?.insert(slot);
      this.counts[before]!--;
      this.counts[code]!++;
      this.seq++;
    }
    this.scheduleNext(slot);
  }

  /** Sets a row's status and next change at `judgedAt` (`fresh`: the row was just written). */
  private judgeSlot(slot: number, fresh: boolean): void {
    const statusSort = fresh ? this.sorts.get('status') : undefined;
    statusSort?.remove(slot);
    this.status[slot] = this.statusOf(slot, this.judgedAt);
    statusSort?.insert(slot);
    this.scheduleNext(slot);
  }

  private scheduleNext(slot: number): void {
    const next = this.nextChangeOf(slot, this.judgedAt);
    this.nextChange[slot] = next;
    if (!Number.isNaN(next)) this.schedule(slot, next);
  }

  private schedule(slot: number, at: number): void {
    const sec = Math.max(this.wheelFrom, Math.floor(at / 1000));
    const bucket = this.wheel.get(sec);
    if (bucket === undefined) this.wheel.set(sec, [slot]);
    else bucket.push(slot);
  }

  /** status.ts `leaseStatus` over the columns. */
  statusOf(slot: number, at: number): number {
    const c = this.cols;
    const ended = c.ended[slot]!;
    if (ended === 2) return ST_FORCE;
    if (ended === 1) return ST_RELEASED;
    const expiresAt = c.expiresAt[slot]!;
    if (expiresAt <= at) return ST_EXPIRED;
    const checkpointed = num(c.checkpointedAt[slot]!);
    const progressAt = Math.max(checkpointed, c.acquiredAt[slot]!);
    const heartbeatAt = Math.max(num(c.renewedAt[slot]!), progressAt);
    if (
      at - progressAt >= this.thresholds.stuckAfterMs &&
      heartbeatAt > progressAt &&
      (c.flags[slot]! & F_MEMBER) === 0
    )
      return ST_STUCK;
    if (expiresAt - at < c.ttlMs[slot]! * this.thresholds.expiringFraction) return ST_EXPIRING;
    return ST_LIVE;
  }

  /** status.ts `nextStatusChangeAt` over the columns; NaN for never. */
  nextChangeOf(slot: number, at: number): number {
    const c = this.cols;
    const expiresAt = c.expiresAt[slot]!;
    if (c.ended[slot]! !== 0 || expiresAt <= at) return Number.NaN;
    let next = expiresAt;
    const expiring = expiresAt - c.ttlMs[slot]! * this.thresholds.expiringFraction;
    if (expiring > at && expiring < next) next = expiring;
    if ((c.flags[slot]! & F_MEMBER) === 0) {
      const stuck =
        Math.max(num(c.checkpointedAt[slot]!), c.acquiredAt[slot]!) + this.thresholds.stuckAfterMs;
      if (stuck > at && stuck < next) next = stuck;
    }
    return next;
  }

  private ensure(): void {
    const cap = this.cols.capacity;
    if (this.status.length >= cap) return;
    const status = new Uint8Array(cap);
    status.set(this.status);
    this.status = status;
    const next = new Float64Array(cap);
    next.set(this.nextChange);
    this.nextChange = next;
  }
}
