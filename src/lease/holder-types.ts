/**
 * The holder layer's public shapes: the options of `claim`, `heartbeat` and `withLease`, and the
 * {@link LeaseHolder} they hand out (implemented in lease-holder.ts; made by holder.ts).
 */
import type { LeaseLostError } from './errors.ts';
import type { LeaseRecord, ReleaseRequest } from './types.ts';

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
  /**
   * Aborts the claim: it rejects at once with the signal's reason, waiting or not, also while an
   * acquire is on its way (a lease the backend grants after that is handed back: released when it
   * began cleanly, else left to run out so the next holder still sees `expired`). Does not affect
   * the lease once the claim resolved.
   */
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
