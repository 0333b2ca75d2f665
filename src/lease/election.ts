/**
 * Leader election as the one-item case of a lease: the leader of `name` is the
 * holder of the lease on the work item `name`, and its **term is the fencing
 * token** of that lease. Every change of leader bumps the token, so:
 *
 * - a deposed leader's writes through the lease (`term.holder.save`) are
 *   refused by the backend (`FENCED`), and the holder layer aborts
 *   `term.signal` as soon as it cannot prove its lease any more (local safety
 *   deadline), before a successor can be elected;
 * - a store outside worklease can fence the same way: pass `term.token` with
 *   each write and have the store refuse a term lower than the highest it has
 *   seen (a conditional update, a column compared in the WHERE clause).
 *
 * Candidates wait with a waiting acquire (woken by the backend when the leader
 * resigns or is force-released, at its expiry when it dies), so a new leader
 * is elected within about one round trip of a resignation, and within the ttl
 * of a crash. Like Kubernetes' leader election, a leader that loses its lease
 * learns it through `onDeposed`, stops leading, and campaigns again.
 */
import { ErrorCode, InvalidArgumentError, type LeaseLostError, WorkleaseError } from './errors.ts';
import { claim, type LeaseHolder, type LossReason } from './holder.ts';
import { telemetryOf } from './telemetry.ts';
import type { LeaseBackend } from './types.ts';
import { checkId, checkOptions, checkTtl } from './validate.ts';
import { onAbort } from './wait.ts';

/** One term of leadership. */
export interface Term {
  /** The fencing token of the leader's lease: strictly greater than every earlier term of this name. */
  readonly token: bigint;
  /** The lease behind the term: `save` checkpoints under it (fenced once deposed), `state` is the last one. */
  readonly holder: LeaseHolder;
  /** Aborted when this term ends (deposed, resigned or stopped). Pass it to the leader's work. */
  readonly signal: AbortSignal;
}

export interface Deposed {
  /** The term that ended. */
  readonly token: bigint;
  /** Why: a loss reason of the holder layer (`fenced`, `expired`, `deadline`, `error`) or `released` (resigned, stopped). */
  readonly reason: LossReason;
  /** The holder layer's error for a loss; undefined after a resignation. */
  readonly error: LeaseLostError | undefined;
}

export interface LeadOptions {
  /** Ttl of the leader's lease, in milliseconds: how long a crashed leader blocks the next election. Default 15 000. */
  ttlMs?: number;
  /** Heartbeat interval in milliseconds. Default `ttlMs / 3`. */
  intervalMs?: number;
  /** Safety poll of a waiting candidate in milliseconds (see `ClaimOptions.waitPollMs`). Default 10 000. */
  waitPollMs?: number;
  /** Called when this candidate becomes leader. A returned promise is not awaited; watch `term.signal`. */
  onElected: (term: Term) => void | Promise<void>;
  /** Called once when a term of this candidate ends, before it campaigns again. */
  onDeposed?: (deposed: Deposed) => void;
}

/** A running candidacy. */
export interface Leadership {
  /** The current term while this candidate leads, else null. */
  readonly term: Term | null;
  /** Gives up the current term (a clean handoff to the next leader) and campaigns again. No-op when not leading. */
  resign(): Promise<void>;
  /** Stops campaigning; resigns first when leading. */
  stop(): Promise<void>;
}

function report(
  logger: { error(o: Record<string, unknown>, m: string): void },
  name: string,
  err: unknown,
): void {
  logger.error({ name, err }, 'worklease election callback threw');
}

/**
 * Campaigns for the leadership of `name` as `holderId` until `stop()`. Returns at once; the
 * callbacks tell when this candidate leads. Bad arguments throw `InvalidArgumentError` before any I/O.
 */
export function lead(
  backend: LeaseBackend,
  name: string,
  holderId: string,
  options: LeadOptions,
): Leadership {
  checkId('name', name);
  checkId('holderId', holderId);
  const o = checkOptions<LeadOptions>('options', options, [
    'ttlMs',
    'intervalMs',
    'waitPollMs',
    'onElected',
    'onDeposed',
  ]);
  const onElected = o.onElected;
  if (typeof onElected !== 'function') throw new InvalidArgumentError('options.onElected must be a function');
  if (o.onDeposed !== undefined && typeof o.onDeposed !== 'function') {
    throw new InvalidArgumentError('options.onDeposed must be a function');
  }
  const ttlMs = o.ttlMs === undefined ? 15_000 : checkTtl(o.ttlMs, 'options.ttlMs');
  const intervalMs = o.intervalMs ?? Math.max(1, Math.floor(ttlMs / 3));
  if (typeof intervalMs !== 'number' || !(intervalMs >= 1 && intervalMs <= ttlMs / 2)) {
    throw new InvalidArgumentError(
      `options.intervalMs must be from 1 to ttlMs / 2 (${Math.floor(ttlMs / 2)})`,
    );
  }
  const waitPollMs = o.waitPollMs ?? 10_000;
  if (typeof waitPollMs !== 'number' || !(waitPollMs >= 10 && waitPollMs <= 3_600_000)) {
    throw new InvalidArgumentError('options.waitPollMs must be from 10 to 3 600 000 ms');
  }
  const logger = telemetryOf(backend).logger;
  const stopping = new AbortController();
  let current: { term: Term; ended: Promise<void>; end: (d: Deposed) => void } | null = null;

  const campaign = async (): Promise<void> => {
    let failures = 0;
    while (!stopping.signal.aborted) {
      let holder: LeaseHolder;
      try {
        holder = await claim(backend, name, holderId, {
          ttlMs,
          waitMs: Number.POSITIVE_INFINITY,
          waitPollMs,
          signal: stopping.signal,
        });
        failures = 0;
      } catch (err) {
        if (stopping.signal.aborted) return;
        // Anything but a held lease (which the wait handles) is logged and retried with backoff.
        if (!(err instanceof WorkleaseError && err.code === ErrorCode.LEASE_HELD)) {
          logger.warn({ name, holderId, err }, 'worklease election: campaign failed, retrying');
        }
        const backoff = Math.min(waitPollMs, 50 * 2 ** failures++);
        // Cut short by stop(), which would otherwise wait out a backoff of up to waitPollMs.
        await new Promise<void>((resolve) => {
          const done = (): void => {
            clearTimeout(timer);
            unwatch();
            resolve();
          };
          const timer = setTimeout(done, backoff);
          const unwatch = onAbort(stopping.signal, done);
        });
        continue;
      }
      if (stopping.signal.aborted) {
        // stop() came between the claim's answer and here: it found no term to resign, so this one never starts.
        await holder.release().catch(() => {});
        return;
      }
      const termController = new AbortController();
      let end!: (d: Deposed) => void;
      const ended = new Promise<void>((resolve) => {
        let done = false;
        end = (d) => {
          if (done) return;
          done = true;
          termController.abort(d.error ?? new Error(`the term ${d.token} of '${name}' ended (${d.reason})`));
          if (current?.term.holder === holder) current = null;
          try {
            o.onDeposed?.(d);
          } catch (err) {
            report(logger, name, err);
          }
          resolve();
        };
      });
      const term: Term = { token: holder.token, holder, signal: termController.signal };
      current = { term, ended, end };
      holder.heartbeat({ intervalMs });
      try {
        const r = onElected(term);
        if (r instanceof Promise) r.catch((err) => report(logger, name, err));
      } catch (err) {
        report(logger, name, err);
      }
      // The holder aborts its signal on every loss: found by the heartbeat, by a save of the
      // leader's work, or by the local deadline.
      const onLoss = (): void => {
        const error = holder.signal.reason as LeaseLostError;
        end({ token: holder.token, reason: (error.details?.reason as LossReason) ?? 'error', error });
      };
      if (holder.signal.aborted) onLoss();
      else holder.signal.addEventListener('abort', onLoss, { once: true });
      await ended;
    }
  };

  const resignCurrent = async (): Promise<void> => {
    const c = current;
    if (c === null) return;
    try {
      await c.term.holder.release();
      c.end({ token: c.term.token, reason: 'released', error: undefined });
    } catch (err) {
      // The release found the lease already lost; the heartbeat's onLost or the signal ends the term.
      if (!c.term.holder.lost) throw err;
    }
    await c.ended;
  };

  const running = campaign();
  return {
    get term() {
      return current?.term ?? null;
    },
    resign: resignCurrent,
    async stop() {
      stopping.abort(new Error('leadership campaign stopped'));
      await resignCurrent();
      await running;
    },
  };
}
