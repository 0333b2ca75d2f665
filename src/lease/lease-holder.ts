/**
 * The holder layer (DESIGN §3): what a service embeds to work on one work item
 * under a lease. {@link claim} acquires the lease and reads the checkpoint;
 * the returned {@link LeaseHolder} saves checkpoints, renews (by hand or by
 * {@link LeaseHolder.heartbeat}), releases, and — above all — stops writing as
 * soon as it can no longer prove that it still owns the lease.
 *
 * ## The local safety deadline
 *
 * Every acquire, renew or save that the backend acknowledges was applied by the
 * server after the call *started*, and set `expires_at = server now + ttl`. So
 * if the call started at monotonic time `t`, the lease is proven to last at
 * least until `t + ttlMs` (clock rates are assumed equal; drift over one ttl is
 * far below the margin). The holder keeps the latest such bound and declares
 * itself lost at `bound - safetyMarginMs`, without waiting for the backend to
 * say so:
 * - a timer fires at the deadline, even while a renew call hangs on a server
 *   that stopped answering;
 * - every method checks the deadline *before* it sends anything, so a process
 *   that was frozen (a blocked event loop, a long GC pause, a suspended VM)
 *   past its ttl finds itself lost the moment it runs again and sends nothing;
 * - a renew that started before such a freeze and is acknowledged after it
 *   proves only `start + ttlMs`, which is then in the past: still lost.
 *
 * The margin is there because a write that passed the check just before the
 * deadline still has to travel to the server (pool queue, socket buffers).
 * It can arrive after the server let the lease run out and gave it to someone
 * else; the server then refuses it, because every write carries the fencing
 * token and the server checks it in the same atomic step. **Correctness rests
 * on that server-side check**; the local deadline only makes the holder stop
 * early, before a successor can start, instead of learning about its loss
 * from a `FencedError` later.
 *
 * Transient backend errors (`BACKEND_UNAVAILABLE`, and `NOT_DURABLE`: a
 * checkpoint the replicas did not confirm) are retried with jittered
 * exponential backoff until the deadline. A checkpoint retry sends the same
 * bytes under the same token, so it is idempotent. `acquire` is never retried:
 * a lost acknowledgement would make the retry fail with `LEASE_HELD` against
 * our own lease. `DATASET_LOST` (the backend lost every lease: docs/durability.md)
 * ends the holder like a fencing: its lease no longer exists.
 */
import { ErrorCode, hasCode, InvalidArgumentError, LeaseExpiredError, LeaseLostError } from './errors.ts';
import type { HeartbeatOptions, LeaseHolder, LossReason } from './holder-types.ts';
import { type Telemetry, telemetryOf } from './telemetry.ts';
import type { LeaseBackend, LeaseRecord, ReleaseRequest } from './types.ts';
import { checkOptions } from './validate.ts';

export type Clock = () => number;
export const monotonic: Clock = () => performance.now();

interface Heartbeat {
  intervalMs: number;
  onRenewed: ((record: LeaseRecord) => void) | undefined;
  onLost: ((error: LeaseLostError) => void) | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
  running: boolean;
  tick: () => Promise<void>;
}

/** A callback that throws must not break the holder's bookkeeping; it surfaces like an emitter listener's error. */
function callSafely<A>(fn: ((arg: A) => void) | undefined, arg: A): void {
  if (fn === undefined) return;
  try {
    fn(arg);
  } catch (err) {
    queueMicrotask(() => {
      throw err;
    });
  }
}

function tokenText(token: bigint): string {
  return token.toString();
}

export class Holder implements LeaseHolder {
  readonly workId: string;
  readonly holderId: string;
  readonly token: bigint;
  readonly stepId: string | null;
  expired: boolean;
  readonly ttlMs: number;
  state: Uint8Array | null;
  record: LeaseRecord;

  private readonly backend: LeaseBackend;
  private readonly telemetry: Telemetry;
  private readonly marginMs: number;
  private readonly clock: Clock;
  private readonly controller = new AbortController();
  private readonly releaseController = new AbortController();
  releaseRequested: ReleaseRequest | null = null;
  /** Monotonic time at which the request was learnt, and its age (backend clock) at that moment. */
  private requestSeen: { at: number; ageMs: number } | null = null;
  /** Backend clock minus local wall clock, from the latest acquire/renew answer (for the latency metric only). */
  private offsetMs = 0;
  onReleaseRequested: ((request: ReleaseRequest, holder: LeaseHolder) => void) | undefined;
  /** Monotonic time until which the lease is proven (start of the latest acknowledged call + ttl). */
  private provenUntil: number;
  private deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  private ended: LeaseLostError | undefined;
  private endReason: LossReason | undefined;
  /**
   * Called once when the holder ends: the calls and backoff sleeps in flight that must stop then.
   * Each removes itself when it settles first, so a holder that renews for months keeps none of
   * its past renewals (a `Promise.race` against one promise settled at the end kept a reaction per
   * renewal on it: about 480 bytes a renewal, the lease's whole life).
   */
  private readonly onEnd = new Set<(err: LeaseLostError) => void>();
  private lastBackendError: unknown;
  private beat: Heartbeat | undefined;
  private releasing = false;

  constructor(
    backend: LeaseBackend,
    record: LeaseRecord,
    init: {
      stepId: string | null;
      expired: boolean;
      state: Uint8Array | null;
      ttlMs: number;
      marginMs: number;
      provenUntil: number;
      clock: Clock;
    },
  ) {
    this.backend = backend;
    this.telemetry = telemetryOf(backend);
    this.telemetry.held(1);
    this.record = record;
    this.workId = record.workId;
    this.holderId = record.holderId;
    this.token = record.fencingToken;
    this.stepId = init.stepId;
    this.expired = init.expired;
    this.state = init.state;
    this.ttlMs = init.ttlMs;
    this.marginMs = init.marginMs;
    this.clock = init.clock;
    this.provenUntil = init.provenUntil;
    this.noteOffset(record);
    this.armDeadline();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get releaseSignal(): AbortSignal {
    return this.releaseController.signal;
  }

  /** A record's expiry is the backend's now + ttl at the call: that gives the clock offset, roughly. */
  private noteOffset(record: LeaseRecord): void {
    this.offsetMs = record.expiresAt.getTime() - this.ttlMs - Date.now();
  }

  /** Takes note of a release request carried by a renew or save answer (once per lease). */
  private noteRequest(request: ReleaseRequest | undefined): void {
    if (request === undefined || this.releaseRequested !== null || this.ended !== undefined) return;
    this.releaseRequested = request;
    this.requestSeen = { at: this.clock(), ageMs: Date.now() + this.offsetMs - request.at.getTime() };
    this.telemetry.logger.info(
      {
        workId: this.workId,
        holderId: this.holderId,
        fencingToken: this.token.toString(),
        operator: request.operator,
        reason: request.reason,
      },
      'worklease holder was asked to release its lease',
    );
    this.releaseController.abort(request);
    callSafely((r: ReleaseRequest) => this.onReleaseRequested?.(r, this), request);
  }

  get lost(): boolean {
    return this.endReason !== undefined && this.endReason !== 'released' && this.endReason !== 'abandoned';
  }

  /** The monotonic time at which this holder declares itself lost. */
  private get deadline(): number {
    return this.provenUntil - this.marginMs;
  }

  private armDeadline(): void {
    if (this.deadlineTimer !== undefined) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
    if (this.ended !== undefined) return;
    const wait = Math.max(0, Math.ceil(this.deadline - this.clock()));
    this.deadlineTimer = setTimeout(() => {
      this.deadlineTimer = undefined;
      // Timers may fire a little early by this clock, and very late after a freeze: decide by the clock.
      if (!this.checkDeadline()) this.armDeadline();
    }, wait);
    // The deadline alone must not keep a process alive; pending calls and the heartbeat do that.
    this.deadlineTimer.unref?.();
  }

  /** True (and lost) when the deadline has passed. */
  private checkDeadline(): boolean {
    if (this.ended !== undefined) return true;
    if (this.clock() < this.deadline) return false;
    const cause =
      this.lastBackendError ??
      new LeaseExpiredError(
        `no renewal of the lease on '${this.workId}' (token ${tokenText(this.token)}) succeeded in time; the local safety deadline passed`,
        { details: { workId: this.workId, fencingToken: this.token } },
      );
    this.lose('deadline', cause);
    return true;
  }

  /** Throws the holder's end error if it is lost, released or past its deadline. Runs before every backend call. */
  private assertLive(): void {
    this.checkDeadline();
    if (this.ended !== undefined) throw this.ended;
  }

  private finish(reason: LossReason, cause: unknown, message: string): LeaseLostError {
    if (this.ended !== undefined) return this.ended;
    const err = new LeaseLostError(message, {
      cause,
      details: { workId: this.workId, holderId: this.holderId, fencingToken: this.token, reason },
    });
    this.ended = err;
    this.endReason = reason;
    this.telemetry.held(-1);
    if (this.lost) {
      this.telemetry.lost(reason);
      this.telemetry.logger.warn(
        {
          workId: this.workId,
          holderId: this.holderId,
          fencingToken: this.token.toString(),
          reason,
          err: cause,
        },
        'worklease holder lost its lease',
      );
    }
    if (this.deadlineTimer !== undefined) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
    const waiting = [...this.onEnd];
    this.onEnd.clear();
    for (const stop of waiting) stop(err);
    return err;
  }

  private lose(reason: LossReason, cause: unknown): LeaseLostError {
    if (this.ended !== undefined) return this.ended;
    const err = this.finish(
      reason,
      cause,
      `lost the lease on '${this.workId}' (token ${tokenText(this.token)}, ${reason}): stop and write nothing more`,
    );
    this.controller.abort(err);
    const beat = this.beat;
    if (beat?.running) {
      this.stopBeat(beat);
      callSafely(beat.onLost, err);
    }
    return err;
  }

  /** Leaves the lease to run out (not a clean handoff): used when the work failed. Aborts the signal. */
  abandon(cause?: unknown): void {
    if (this.ended !== undefined) return;
    if (this.beat !== undefined) this.stopBeat(this.beat);
    const err = this.finish(
      'abandoned',
      cause,
      `the lease on '${this.workId}' (token ${tokenText(this.token)}) was abandoned and is left to run out`,
    );
    this.controller.abort(err);
  }

  /** Records a success of a call that started at `start`: the lease is proven until `start + ttl`. */
  private proven(start: number): void {
    if (start + this.ttlMs > this.provenUntil) this.provenUntil = start + this.ttlMs;
    // A call acknowledged after a freeze may prove only a time already past.
    if (!this.checkDeadline()) this.armDeadline();
  }

  /** Settles as `call` does, or rejects with the end error as soon as the holder ends first. */
  private untilEnd<T>(call: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.ended !== undefined) {
        // The call settles on its own; nobody waits for it any more.
        call.catch(() => {});
        reject(this.ended);
        return;
      }
      const stop = (err: LeaseLostError): void => reject(err);
      this.onEnd.add(stop);
      call.then(
        (value) => {
          this.onEnd.delete(stop);
          resolve(value);
        },
        (err: unknown) => {
          this.onEnd.delete(stop);
          reject(err);
        },
      );
    });
  }

  /** Sleeps `ms`, or less when the holder ends meanwhile. */
  private sleepUntilEnd(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.onEnd.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      if (this.ended !== undefined) done();
      else this.onEnd.add(done);
    });
  }

  private backoffMs(attempt: number): number {
    const base = Math.max(1, Math.min(50, this.ttlMs / 20));
    const cap = Math.max(base, this.ttlMs / 8);
    return Math.random() * Math.min(cap, base * 2 ** attempt);
  }

  /**
   * Runs one lease call with the holder's rules: deadline check before each
   * attempt, retries on BACKEND_UNAVAILABLE / NOT_DURABLE, loss on FENCED / DATASET_LOST / LEASE_EXPIRED,
   * and an early LeaseLostError when the deadline passes while the call hangs.
   */
  async run<T>(op: (record: LeaseRecord) => Promise<T>, isRelease = false): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      this.assertLive();
      const start = this.clock();
      let value: T;
      try {
        value = await this.untilEnd(op(this.record));
      } catch (err) {
        if (this.ended !== undefined) throw this.ended;
        // A renew or save still in flight when release() started may see the lease already released.
        if (this.releasing && !isRelease) throw err;
        if (hasCode(err, ErrorCode.FENCED) || hasCode(err, ErrorCode.DATASET_LOST))
          throw this.lose('fenced', err);
        if (hasCode(err, ErrorCode.LEASE_EXPIRED)) throw this.lose('expired', err);
        if (!hasCode(err, ErrorCode.BACKEND_UNAVAILABLE) && !hasCode(err, ErrorCode.NOT_DURABLE)) throw err;
        this.lastBackendError = err;
        this.telemetry.logger.debug(
          { workId: this.workId, fencingToken: this.token.toString(), attempt, err },
          'worklease holder retries after a transient backend error',
        );
        await this.sleepUntilEnd(this.backoffMs(attempt));
        continue;
      }
      if (this.ended !== undefined) throw this.ended;
      this.lastBackendError = undefined;
      this.proven(start);
      if (this.ended !== undefined) throw this.ended;
      return value;
    }
  }

  async save(state: Uint8Array): Promise<void> {
    this.assertLive();
    if (!(state instanceof Uint8Array))
      throw new InvalidArgumentError('state must be a Uint8Array (or Buffer)');
    const copy = state.slice();
    const result = await this.run((record) => this.backend.checkpoint(record, copy, this.ttlMs));
    this.state = copy;
    this.noteRequest(result?.releaseRequested);
  }

  async renew(): Promise<void> {
    this.record = await this.run((record) => this.backend.renew(record, this.ttlMs));
    this.noteOffset(this.record);
    this.noteRequest(this.record.releaseRequested);
  }

  async release(): Promise<void> {
    let retried = false;
    // No new heartbeat renewals from here; the beat stays registered so a loss found by the release still reaches onLost.
    this.releasing = true;
    if (this.beat?.timer !== undefined) clearTimeout(this.beat.timer);
    try {
      await this.run(async (record) => {
        try {
          await this.backend.release(record);
        } catch (err) {
          if (retried && hasCode(err, ErrorCode.LEASE_EXPIRED) && (await this.releasedByUs())) return;
          if (hasCode(err, ErrorCode.BACKEND_UNAVAILABLE)) retried = true;
          throw err;
        }
      }, true);
    } catch (err) {
      const beat = this.beat;
      if (this.ended === undefined) {
        // Not released and not lost (a final error such as INTERNAL): the lease is still ours, keep it alive.
        this.releasing = false;
        if (beat?.running && beat.timer === undefined) beat.timer = setTimeout(beat.tick, 0);
      } else if (beat !== undefined) this.stopBeat(beat);
      throw err;
    }
    if (this.beat !== undefined) this.stopBeat(this.beat);
    if (this.requestSeen !== null) {
      // From the request (backend clock) to this release: its age when learnt plus the time since.
      this.telemetry.releaseRequestLatency(this.requestSeen.ageMs + (this.clock() - this.requestSeen.at));
    }
    this.finish(
      'released',
      undefined,
      `the lease on '${this.workId}' (token ${tokenText(this.token)}) was released; claim again to continue`,
    );
  }

  /**
   * After a release whose reply was lost, the retry finds the lease already
   * ended; the stored row tells whether that was our release.
   */
  private async releasedByUs(): Promise<boolean> {
    const info = await this.backend.admin.get(this.workId).catch(() => null);
    return info !== null && info.fencingToken === this.token && info.ended === 'released';
  }

  heartbeat(options: HeartbeatOptions = {}): () => void {
    const o = checkOptions<HeartbeatOptions>('heartbeat options', options, [
      'intervalMs',
      'onRenewed',
      'onLost',
    ]);
    const intervalMs = checkInterval(o.intervalMs, this.ttlMs, 'heartbeat intervalMs');
    for (const name of ['onRenewed', 'onLost'] as const) {
      if (o[name] !== undefined && typeof o[name] !== 'function') {
        throw new InvalidArgumentError(`heartbeat ${name} must be a function`);
      }
    }
    if (this.beat?.running) throw new InvalidArgumentError('a heartbeat is already running on this holder');
    this.assertLive();
    const beat: Heartbeat = {
      intervalMs,
      onRenewed: o.onRenewed,
      onLost: o.onLost,
      timer: undefined,
      running: true,
      tick: async () => {},
    };
    this.beat = beat;
    // When the next renewal is due (monotonic); its lag is how much later than that it was acknowledged.
    let due = this.clock() + intervalMs;
    const tick = async (): Promise<void> => {
      beat.timer = undefined;
      if (!beat.running || this.releasing) return;
      const start = this.clock();
      try {
        await this.renew();
      } catch (err) {
        // Loss already stopped the beat and called onLost; a final non-loss error is treated as loss:
        // the holder cannot prove its lease any more, and a heartbeat that silently stops would be worse.
        // A renewal refused after release() began may have met the release itself (its reply can come
        // before the release's): the release decides, and reports a loss of its own if there was one.
        if (beat.running && this.ended === undefined && !this.releasing) this.lose('error', err);
        return;
      }
      if (!beat.running) return;
      const acked = this.clock();
      this.telemetry.heartbeatLag(acked - due);
      callSafely(beat.onRenewed, this.record);
      const wait = Math.max(0, beat.intervalMs - (acked - start));
      due = acked + wait;
      if (beat.running && !this.releasing) beat.timer = setTimeout(tick, wait);
    };
    beat.tick = tick;
    beat.timer = setTimeout(tick, intervalMs);
    return () => this.stopBeat(beat);
  }

  private stopBeat(beat: Heartbeat): void {
    beat.running = false;
    if (beat.timer !== undefined) clearTimeout(beat.timer);
    beat.timer = undefined;
  }
}

/** A heartbeat interval: 1 ms to ttlMs / 2, default ttlMs / 3. */
export function checkInterval(value: unknown, ttlMs: number, name: string): number {
  const max = Math.floor(ttlMs / 2);
  const interval = value ?? Math.max(1, Math.floor(ttlMs / 3));
  if (typeof interval !== 'number' || !Number.isFinite(interval) || interval < 1 || interval > max) {
    throw new InvalidArgumentError(
      `${name} must be a number of milliseconds from 1 to ttlMs / 2 (${max}), got ${String(interval)}`,
    );
  }
  return interval;
}
