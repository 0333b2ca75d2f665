/**
 * The holder layer's entry points (DESIGN §3): {@link claim} acquires the lease on one work item
 * and reads its checkpoint, {@link withLease} runs a job under a lease with a heartbeat and
 * releases it cleanly. What a holder does once it has its lease — the local safety deadline,
 * retries, loss — is lease-holder.ts; waiting for a held lease is wait.ts.
 */
import { InvalidArgumentError, type LeaseLostError } from './errors.ts';
import type {
  ClaimOptions,
  HeartbeatOptions,
  HolderOptions,
  LeaseHolder,
  WithLeaseOptions,
  WorkSignals,
} from './holder-types.ts';
import { checkInterval, Holder, monotonic } from './lease-holder.ts';
import { telemetryOf } from './telemetry.ts';
import type { LeaseBackend } from './types.ts';
import { checkNewId, checkOptions, checkTtl } from './validate.ts';
import { acquireWaiting, resolveWait, untilAborted, type WaitSettings } from './wait.ts';

export type {
  ClaimOptions,
  HeartbeatOptions,
  HolderOptions,
  LeaseHolder,
  LossReason,
  WithLeaseOptions,
  WorkSignals,
} from './holder-types.ts';

/** Default lease ttl of {@link claim}: 30 000 ms. */
export const DEFAULT_HOLDER_TTL_MS = 30_000;

const HOLDER_OPTION_KEYS = ['ttlMs', 'stepId', 'safetyMarginMs'] as const;
const CLAIM_OPTION_KEYS = [
  ...HOLDER_OPTION_KEYS,
  'waitMs',
  'waitPollMs',
  'signal',
  'onReleaseRequested',
] as const;

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
 *
 * When `options.signal` aborts before the claim resolves, it rejects at once with the signal's
 * reason; a lease the backend grants after that (an acquire already on its way) is handed back:
 * see {@link handBack}.
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
  wait.signal?.throwIfAborted();
  const taking = take(backend, workId, holderId, { ttlMs, stepId, marginMs, onReleaseRequested }, wait);
  if (wait.signal === undefined) return taking;
  const signal = wait.signal;
  return untilAborted(taking, signal, (holder) => handBack(backend, holder, signal.reason));
}

/** The acquire (waiting as `wait` says) and the checkpoint read of {@link claim}. */
async function take(
  backend: LeaseBackend,
  workId: string,
  holderId: string,
  o: {
    ttlMs: number;
    stepId: string | null;
    marginMs: number;
    onReleaseRequested: ClaimOptions['onReleaseRequested'];
  },
  wait: WaitSettings,
): Promise<Holder> {
  // The lease is proven from the start of the attempt that won, not from the start of the wait.
  const { record, start } = await acquireWaiting(backend, workId, holderId, o.ttlMs, o.stepId, wait);
  const holder = new Holder(backend, record, {
    stepId: o.stepId,
    expired: false,
    state: null,
    ttlMs: o.ttlMs,
    marginMs: o.marginMs,
    provenUntil: start + o.ttlMs,
    clock: monotonic,
  });
  holder.onReleaseRequested = o.onReleaseRequested;
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

/**
 * Gives back a lease that a claim got after its caller gave up (the signal aborted while the
 * acquire or the checkpoint read was on its way): nobody will work under it. A lease that began
 * cleanly is released at once, so the item is free again after one round trip, not after a ttl;
 * its checkpoint and clean handoff are exactly what the predecessor left. A takeover (the lease
 * before ran out or was force-released) is left to run out instead: a release would mark the
 * handoff clean, and the next holder would no longer learn that the work before it may be half
 * done.
 */
function handBack(backend: LeaseBackend, holder: Holder, reason: unknown): void {
  const fields = { workId: holder.workId, holderId: holder.holderId, fencingToken: holder.token.toString() };
  if (holder.expired) {
    holder.abandon(reason);
    telemetryOf(backend).logger.debug(
      fields,
      'worklease claim was aborted before its acquire answered; the takeover it got is left to run out',
    );
    return;
  }
  holder.release().then(
    () =>
      telemetryOf(backend).logger.debug(
        fields,
        'worklease claim was aborted before its acquire answered; the lease it got was released',
      ),
    (err: unknown) =>
      telemetryOf(backend).logger.debug(
        { ...fields, err },
        'worklease claim was aborted before its acquire answered; releasing the lease it got failed',
      ),
  );
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
