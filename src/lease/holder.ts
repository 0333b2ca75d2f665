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
import {
  ErrorCode,
  InvalidArgumentError,
  LeaseExpiredError,
  LeaseHeldError,
  LeaseLostError,
  WorkleaseError,
} from './errors.ts';
import { type Telemetry, telemetryOf } from './telemetry.ts';
import type { LeaseBackend, LeaseRecord, ReleaseRequest } from './types.ts';
import { checkNewId, checkOptions, checkTtl } from './validate.ts';
import { wakeHub } from './wait.ts';

/** Default lease ttl of {@link claim}: 30 000 ms. */
export const DEFAULT_HOLDER_TTL_MS = 30_000;

export interface HolderOptions {
  /**
   * How long each acquire, renew and save keeps the lease, in milliseconds.
   * Default 30 000 (30 s).
   */
  ttlMs?: number;
  /** Which step of the work this holder is on; stored with the lease so operators can see it. Default none. */
  stepId?: string;
  /**
   * How long before the proven end of the lease the holder declares itself
   * lost, in milliseconds. Default `max(50, ttlMs / 10)`, at most `ttlMs / 2`.
   * Allowed: 0 to `ttlMs / 2`.
   */
  safetyMarginMs?: number;
}

export interface ClaimOptions extends HolderOptions {
  /**
   * How long to wait for a held lease to end (released, force-released or run out), in
   * milliseconds; the claim takes it then. Woken by the backend, see wait.ts. Default 0: a held
   * lease fails at once with `LeaseHeldError`, which is also what a wait that runs out rejects with.
   * `Infinity` waits until the lease is taken or `signal` aborts.
   */
  waitMs?: number;
  /**
   * While waiting, retry at least this often even without a wake-up (a lost wake-up costs at most
   * this long), in milliseconds. Default 10 000. Allowed: 10 to 3 600 000.
   */
  waitPollMs?: number;
  /** Aborts a waiting claim: it rejects with the signal's reason. Does not affect the lease once taken. */
  signal?: AbortSignal;
  /**
   * Called once when the holder learns that an operator asked it to hand the lease over
   * (`admin.requestRelease`): from the answer of a renew (the heartbeat's too) or a save, with no
   * extra call. A cooperating holder saves a checkpoint and releases, so the next holder starts
   * with a clean handoff. The lease stays this holder's until then. See also
   * {@link LeaseHolder.releaseSignal}.
   */
  onReleaseRequested?: (request: ReleaseRequest, holder: LeaseHolder) => void;
}

export interface HeartbeatOptions {
  /**
   * Time between renewals, in milliseconds. Default `ttlMs / 3`, so two
   * renewals can fail before the lease is in danger. Allowed: 1 to `ttlMs / 2`.
   */
  intervalMs?: number;
  /** Called after each successful renewal with the renewed record. */
  onRenewed?: (record: LeaseRecord) => void;
  /** Called exactly once when the lease is lost while the heartbeat runs. The heartbeat has stopped by then. */
  onLost?: (error: LeaseLostError) => void;
}

/** A live claim on one work item. Obtain one with {@link claim}. */
export interface LeaseHolder {
  readonly workId: string;
  readonly holderId: string;
  /** The fencing token of this lease. */
  readonly token: bigint;
  readonly stepId: string | null;
  /**
   * True when this claim took over a lease that had run out or was
   * force-released (the previous holder died, stalled or was fenced): its work
   * since the last checkpoint may be half done.
   */
  readonly expired: boolean;
  /** The latest checkpoint: as read at claim time, then as last saved. Null when none was ever saved. */
  readonly state: Uint8Array | null;
  /** Aborted when the lease is lost; its reason is the {@link LeaseLostError}. Pass it to the work. */
  readonly signal: AbortSignal;
  /**
   * Aborted when an operator asked for the lease to be handed over (its reason is the
   * {@link ReleaseRequest}); distinct from {@link signal}: the lease is still held, and the work
   * should checkpoint and end so the holder can release.
   */
  readonly releaseSignal: AbortSignal;
  /** The release request this holder learnt of, or null. */
  readonly releaseRequested: ReleaseRequest | null;
  readonly ttlMs: number;
  /** The latest record returned by the backend. */
  readonly record: LeaseRecord;
  /** True once the lease is lost. */
  readonly lost: boolean;
  /** Saves a checkpoint and extends the lease by `ttlMs`. */
  save(state: Uint8Array): Promise<void>;
  /** Extends the lease by `ttlMs`. */
  renew(): Promise<void>;
  /** Ends the lease cleanly: the next holder starts with `expired` false and sees the last checkpoint. */
  release(): Promise<void>;
  /** Renews every `intervalMs` until the returned function is called or the lease is lost. */
  heartbeat(options?: HeartbeatOptions): () => void;
}

/**
 * Why a holder ended: `fenced` (the token was superseded, e.g. force-release), `expired` (the server says
 * the lease ran out), `deadline` (the local safety deadline passed), `error` (a renewal failed with a final
 * error), `released`, `abandoned` (left to run out by `withLease` after the work failed).
 */
export type LossReason = 'fenced' | 'expired' | 'deadline' | 'error' | 'released' | 'abandoned';

type Clock = () => number;
const monotonic: Clock = () => performance.now();

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

function isCode(err: unknown, code: ErrorCode): boolean {
  return err instanceof WorkleaseError && err.code === code;
}

function tokenText(token: bigint): string {
  return token.toString();
}

class Holder implements LeaseHolder {
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
  private readonly endedPromise: Promise<never>;
  private rejectEnded!: (err: LeaseLostError) => void;
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
    this.endedPromise = new Promise<never>((_, reject) => {
      this.rejectEnded = reject;
    });
    // Nobody may be waiting on it when the lease ends; that is not an unhandled failure.
    this.endedPromise.catch(() => {});
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
    this.rejectEnded(err);
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
        value = await Promise.race([op(this.record), this.endedPromise]);
      } catch (err) {
        if (this.ended !== undefined) throw this.ended;
        // A renew or save still in flight when release() started may see the lease already released.
        if (this.releasing && !isRelease) throw err;
        if (isCode(err, ErrorCode.FENCED) || isCode(err, ErrorCode.DATASET_LOST))
          throw this.lose('fenced', err);
        if (isCode(err, ErrorCode.LEASE_EXPIRED)) throw this.lose('expired', err);
        if (!isCode(err, ErrorCode.BACKEND_UNAVAILABLE) && !isCode(err, ErrorCode.NOT_DURABLE)) throw err;
        this.lastBackendError = err;
        this.telemetry.logger.debug(
          { workId: this.workId, fencingToken: this.token.toString(), attempt, err },
          'worklease holder retries after a transient backend error',
        );
        await Promise.race([new Promise((r) => setTimeout(r, this.backoffMs(attempt))), this.endedPromise]);
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
          if (retried && isCode(err, ErrorCode.LEASE_EXPIRED) && (await this.releasedByUs())) return;
          if (isCode(err, ErrorCode.BACKEND_UNAVAILABLE)) retried = true;
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
function checkInterval(value: unknown, ttlMs: number, name: string): number {
  const max = Math.floor(ttlMs / 2);
  const interval = value ?? Math.max(1, Math.floor(ttlMs / 3));
  if (typeof interval !== 'number' || !Number.isFinite(interval) || interval < 1 || interval > max) {
    throw new InvalidArgumentError(
      `${name} must be a number of milliseconds from 1 to ttlMs / 2 (${max}), got ${String(interval)}`,
    );
  }
  return interval;
}

const HOLDER_OPTION_KEYS = ['ttlMs', 'stepId', 'safetyMarginMs'] as const;
const CLAIM_OPTION_KEYS = [
  ...HOLDER_OPTION_KEYS,
  'waitMs',
  'waitPollMs',
  'signal',
  'onReleaseRequested',
] as const;

interface WaitSettings {
  waitMs: number;
  pollMs: number;
  signal: AbortSignal | undefined;
}

function resolveWait(o: ClaimOptions): WaitSettings {
  const waitMs = o.waitMs ?? 0;
  if (typeof waitMs !== 'number' || Number.isNaN(waitMs) || waitMs < 0) {
    throw new InvalidArgumentError(
      `options.waitMs must be a number of milliseconds >= 0 (or Infinity), got ${String(waitMs)}`,
    );
  }
  const pollMs = o.waitPollMs ?? 10_000;
  if (typeof pollMs !== 'number' || !Number.isFinite(pollMs) || pollMs < 10 || pollMs > 3_600_000) {
    throw new InvalidArgumentError(
      `options.waitPollMs must be a number of milliseconds from 10 to 3 600 000, got ${String(pollMs)}`,
    );
  }
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) {
    throw new InvalidArgumentError('options.signal must be an AbortSignal');
  }
  return { waitMs, pollMs, signal: o.signal };
}

/**
 * Acquires, waiting up to `waitMs` for a held lease to end. Each wake-up (see wait.ts) or timer
 * only leads to another acquire attempt; the backend's atomic acquire picks the one winner.
 */
async function acquireWaiting(
  backend: LeaseBackend,
  workId: string,
  holderId: string,
  ttlMs: number,
  stepId: string | null,
  wait: WaitSettings,
): Promise<{ record: LeaseRecord; start: number }> {
  const acquire = async () => {
    const start = monotonic();
    const record = await backend.acquire(workId, holderId, ttlMs, stepId === null ? {} : { stepId });
    return { record, start };
  };
  wait.signal?.throwIfAborted();
  if (wait.waitMs === 0) return acquire();
  const hub = wakeHub(backend);
  const until = monotonic() + wait.waitMs;
  let woken = false;
  let head = false;
  let wakeUp: (() => void) | null = null;
  const remove = hub.add(workId, {
    wake() {
      woken = true;
      wakeUp?.();
    },
    promote() {
      head = true;
      woken = true;
      wakeUp?.();
    },
  });
  /** Sleeps `ms`, or less when woken, promoted or aborted. */
  const sleepUntil = (ms: number): Promise<void> =>
    new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        wait.signal?.removeEventListener('abort', done);
        wakeUp = null;
        resolve();
      };
      // setTimeout fires at once for more than 2^31-1 ms (an infinite wait's "rest").
      const timer = setTimeout(done, Math.min(ms, 2_147_483_647));
      wakeUp = done;
      wait.signal?.addEventListener('abort', done);
    });
  // After a wake-up by the expiry timer that found the lease still held (clock offset, a renewal
  // meanwhile), the next expiry-based sleep is at least this long; it doubles up to the poll interval.
  let expiryFloorMs = 5;
  try {
    let held: WorkleaseError | null = null;
    for (let attempt = 0; ; attempt++) {
      wait.signal?.throwIfAborted();
      if (!head) {
        // Behind another waiter of this process on the same item: sleep until it wins or leaves.
        const left = until - monotonic();
        if (left <= 0)
          throw held ?? new LeaseHeldError(`work item '${workId}' is held`, { details: { workId } });
        await sleepUntil(left);
        continue;
      }
      woken = false;
      try {
        return await acquire();
      } catch (err) {
        if (!isCode(err, ErrorCode.LEASE_HELD) && !isCode(err, ErrorCode.BACKEND_UNAVAILABLE)) throw err;
        held = err as WorkleaseError;
      }
      const left = until - monotonic();
      if (left <= 0) throw held;
      if (woken) continue;
      if (isCode(held, ErrorCode.LEASE_HELD) && backend.admin.notifyEnd !== undefined) {
        // Ask to hear of this lease's end (PostgreSQL sends no NOTIFY for an end nobody asked for).
        // A second past the longest sleep, so it still holds while the next attempt asks again.
        const live = await backend.admin
          .notifyEnd(workId, Math.min(left, wait.pollMs) + 1000)
          .catch(() => true); // the safety poll covers a lost request
        if (!live || woken) continue;
      }
      let sleep = Math.min(left, wait.pollMs);
      let byExpiry = false;
      const expiresAt = held.details?.expiresAt;
      if (expiresAt instanceof Date) {
        const untilExpiry = expiresAt.getTime() - (Date.now() + hub.offsetMs) + 1;
        const ms = Math.max(expiryFloorMs, untilExpiry);
        if (ms < sleep) {
          sleep = ms;
          byExpiry = true;
        }
      } else if (isCode(held, ErrorCode.BACKEND_UNAVAILABLE)) {
        sleep = Math.min(sleep, Math.max(10, Math.min(wait.pollMs, 50 * 2 ** attempt)));
      }
      await sleepUntil(sleep);
      expiryFloorMs = byExpiry && !woken ? Math.min(wait.pollMs, expiryFloorMs * 2) : 5;
    }
  } finally {
    remove();
  }
}

function resolveHolderOptions(options: unknown): { ttlMs: number; stepId: string | null; marginMs: number } {
  const o = checkOptions<HolderOptions>('options', options, HOLDER_OPTION_KEYS);
  const ttlMs = o.ttlMs === undefined ? DEFAULT_HOLDER_TTL_MS : checkTtl(o.ttlMs, 'options.ttlMs');
  if (ttlMs < 2) throw new InvalidArgumentError('options.ttlMs must be at least 2 ms');
  const stepId = o.stepId === undefined ? null : checkNewId('options.stepId', o.stepId);
  const maxMargin = Math.floor(ttlMs / 2);
  const marginMs = o.safetyMarginMs ?? Math.min(maxMargin, Math.max(50, Math.ceil(ttlMs / 10)));
  if (typeof marginMs !== 'number' || !Number.isFinite(marginMs) || marginMs < 0 || marginMs > maxMargin) {
    throw new InvalidArgumentError(
      `options.safetyMarginMs must be a number of milliseconds from 0 to ttlMs / 2 (${maxMargin}), got ${String(marginMs)}`,
    );
  }
  return { ttlMs, stepId, marginMs };
}

/**
 * Acquires the lease on `workId` for `holderId` and reads its checkpoint.
 *
 * Rejects with `LeaseHeldError` when a live lease exists (also our own), with
 * `InvalidArgumentError` before any I/O on bad arguments, and with the
 * backend's error when the acquire itself fails (it is not retried). If the
 * checkpoint cannot be read before the local deadline, or the lease was
 * force-released meanwhile, it rejects with `LeaseLostError` and leaves the
 * lease to run out.
 */
export async function claim(
  backend: LeaseBackend,
  workId: string,
  holderId: string,
  options: ClaimOptions = {},
): Promise<LeaseHolder> {
  checkNewId('workId', workId);
  checkNewId('holderId', holderId);
  const o = checkOptions<ClaimOptions>('options', options, CLAIM_OPTION_KEYS);
  const wait = resolveWait(o);
  if (o.onReleaseRequested !== undefined && typeof o.onReleaseRequested !== 'function') {
    throw new InvalidArgumentError('options.onReleaseRequested must be a function');
  }
  const { waitMs: _w, waitPollMs: _p, signal: _s, onReleaseRequested, ...holderOptions } = o;
  const { ttlMs, stepId, marginMs } = resolveHolderOptions(holderOptions);
  const clock = monotonic;
  // The lease is proven from the start of the attempt that won, not from the start of the wait.
  const { record, start } = await acquireWaiting(backend, workId, holderId, ttlMs, stepId, wait);
  const holder = new Holder(backend, record, {
    stepId,
    expired: false,
    state: null,
    ttlMs,
    marginMs,
    provenUntil: start + ttlMs,
    clock,
  });
  holder.onReleaseRequested = onReleaseRequested;
  try {
    const read = await holder.run((r) => backend.readCheckpoint(r));
    holder.expired = !read.cleanHandoff;
    holder.state = read.state;
  } catch (err) {
    holder.abandon(err);
    throw err;
  }
  return holder;
}

export interface WithLeaseOptions extends ClaimOptions {
  /** Heartbeat interval in milliseconds. Default `ttlMs / 3`. See {@link HeartbeatOptions.intervalMs}. */
  intervalMs?: number;
  /** See {@link HeartbeatOptions.onRenewed}. */
  onRenewed?: (record: LeaseRecord) => void;
  /** See {@link HeartbeatOptions.onLost}. */
  onLost?: (error: LeaseLostError) => void;
}

/** What {@link withLease} gives the work function beside the holder. */
export interface WorkSignals {
  /** Aborted when the lease is lost: stop and write nothing more (the holder's `signal`). */
  lost: AbortSignal;
  /**
   * Aborted when an operator asked for the lease to be handed over (the holder's `releaseSignal`):
   * save a checkpoint and return, and withLease releases cleanly.
   */
  releaseRequested: AbortSignal;
}

/**
 * Claims `workId`, heartbeats while `work` runs, and releases cleanly when it
 * resolves. `work` gets the holder; pass `holder.signal` to whatever it awaits
 * so it stops when the lease is lost.
 *
 * `work` also gets {@link WorkSignals}: when `releaseRequested` aborts, an operator asked for the
 * lease; work that saves its checkpoint and returns then is released cleanly, so the next holder
 * resumes from that checkpoint with a clean handoff.
 *
 * When `work` throws, or the lease is lost, the lease is not released: it is
 * left to run out, so the next holder sees `expired: true` and knows the last
 * attempt did not finish. The error is rethrown (a loss as `LeaseLostError`).
 */
export async function withLease<T>(
  backend: LeaseBackend,
  workId: string,
  holderId: string,
  options: WithLeaseOptions,
  work: (holder: LeaseHolder, signals: WorkSignals) => Promise<T>,
): Promise<T> {
  const o = checkOptions<WithLeaseOptions>('options', options, [
    'ttlMs',
    'stepId',
    'safetyMarginMs',
    'waitMs',
    'waitPollMs',
    'signal',
    'intervalMs',
    'onRenewed',
    'onLost',
    'onReleaseRequested',
  ]);
  if (typeof work !== 'function') throw new InvalidArgumentError('work must be a function');
  const holderOptions: ClaimOptions = {};
  if (o.ttlMs !== undefined) holderOptions.ttlMs = o.ttlMs;
  if (o.stepId !== undefined) holderOptions.stepId = o.stepId;
  if (o.safetyMarginMs !== undefined) holderOptions.safetyMarginMs = o.safetyMarginMs;
  if (o.waitMs !== undefined) holderOptions.waitMs = o.waitMs;
  if (o.waitPollMs !== undefined) holderOptions.waitPollMs = o.waitPollMs;
  if (o.signal !== undefined) holderOptions.signal = o.signal;
  if (o.onReleaseRequested !== undefined) holderOptions.onReleaseRequested = o.onReleaseRequested;
  resolveWait(holderOptions);
  const beatOptions: HeartbeatOptions = {};
  if (o.intervalMs !== undefined) beatOptions.intervalMs = o.intervalMs;
  if (o.onRenewed !== undefined) beatOptions.onRenewed = o.onRenewed;
  if (o.onLost !== undefined) beatOptions.onLost = o.onLost;
  // Validate the heartbeat options before the acquire, so bad input writes nothing.
  const { waitMs: _w, waitPollMs: _p, signal: _s, onReleaseRequested: _r, ...plain } = holderOptions;
  if (o.onReleaseRequested !== undefined && typeof o.onReleaseRequested !== 'function') {
    throw new InvalidArgumentError('options.onReleaseRequested must be a function');
  }
  checkInterval(beatOptions.intervalMs, resolveHolderOptions(plain).ttlMs, 'options.intervalMs');

  const holder = (await claim(backend, workId, holderId, holderOptions)) as Holder;
  let result: T;
  try {
    holder.heartbeat(beatOptions);
    result = await work(holder, { lost: holder.signal, releaseRequested: holder.releaseSignal });
  } catch (err) {
    holder.abandon(err);
    throw err;
  }
  if (holder.lost) {
    const lostError = holder.signal.reason as LeaseLostError;
    throw lostError;
  }
  await holder.release();
  return result;
}
