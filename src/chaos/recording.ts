/**
 * Backend wrappers for the chaos harness. {@link recordingBackend} records
 * every lease call as a history event and changes nothing. {@link brokenBackend}
 * is the checker's positive control: it ignores fencing — when the server
 * refuses a write with FENCED, it looks up the current token and writes anyway
 * — so a run through it must report violations.
 */
import { ErrorCode, FencedError, WorkleaseError } from '../lease/errors.ts';
import type { LeaseBackend, LeaseRecord } from '../lease/types.ts';
import type { CallEvent, CallName, CounterValue, HistoryEvent, Outcome } from './history.ts';
import { decodeCounter, now } from './history.ts';

const OUTCOMES: Partial<Record<string, Outcome>> = {
  [ErrorCode.LEASE_HELD]: 'held',
  [ErrorCode.FENCED]: 'fenced',
  [ErrorCode.LEASE_EXPIRED]: 'expired',
  [ErrorCode.CONFLICT]: 'conflict',
  [ErrorCode.BACKEND_UNAVAILABLE]: 'unavailable',
  // Applied on the master, not confirmed by its replicas: it may or may not have taken effect.
  [ErrorCode.NOT_DURABLE]: 'unavailable',
};

export function outcomeOf(err: unknown): Outcome {
  return (err instanceof WorkleaseError ? OUTCOMES[err.code] : undefined) ?? 'error';
}

function describeError(err: unknown): string {
  if (err instanceof WorkleaseError) return `${err.code}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

function safeDecode(bytes: Uint8Array | null): CounterValue | null {
  try {
    return decodeCounter(bytes);
  } catch {
    // Not a counter: the checker treats it as "no value seen", which fails visibility if a counter was acknowledged.
    return null;
  }
}

export interface RecordingBackend extends LeaseBackend {
  /** Resolves when no recorded call is in flight (a holder may have given up on a call that still hangs). */
  settled(): Promise<void>;
}

/** Records each call's item, holder, token, outcome and local start/end into `sink`. */
export function recordingBackend(inner: LeaseBackend, sink: (event: HistoryEvent) => void): RecordingBackend {
  const pending = new Set<Promise<unknown>>();
  /** Like {@link recordOne}, and tracked until settled (see `settled()`). */
  function record<T>(...args: Parameters<typeof recordOne<T>>): Promise<T> {
    const p = recordOne(...args);
    const tracked = p.catch(() => {});
    pending.add(tracked);
    void tracked.then(() => pending.delete(tracked));
    return p;
  }
  async function recordOne<T>(
    call: CallName,
    item: string,
    holder: string,
    token: bigint | null,
    run: () => Promise<T>,
    extra: (value: T) => Partial<CallEvent> = () => ({}),
    sent: Partial<CallEvent> = {},
  ): Promise<T> {
    const start = now();
    try {
      const value = await run();
      sink({
        type: 'call',
        item,
        holder,
        token: token === null ? null : token.toString(),
        call,
        outcome: 'ok',
        start,
        end: now(),
        ...sent,
        ...extra(value),
      });
      return value;
    } catch (err) {
      sink({
        type: 'call',
        item,
        holder,
        token: token === null ? null : token.toString(),
        call,
        outcome: outcomeOf(err),
        start,
        end: now(),
        ...sent,
        error: describeError(err),
      });
      throw err;
    }
  }
  return {
    kind: inner.kind,
    url: inner.url,
    maxStateBytes: inner.maxStateBytes,
    acquire: (workId, holderId, ttlMs, options) =>
      record(
        'acquire',
        workId,
        holderId,
        null,
        () => inner.acquire(workId, holderId, ttlMs, options),
        (r) => ({ token: r.fencingToken.toString() }),
      ),
    checkpoint: (r, state, ttlMs) =>
      record(
        'checkpoint',
        r.workId,
        r.holderId,
        r.fencingToken,
        () => inner.checkpoint(r, state, ttlMs),
        undefined,
        {
          value: safeDecode(state),
        },
      ),
    renew: (r, ttlMs) => record('renew', r.workId, r.holderId, r.fencingToken, () => inner.renew(r, ttlMs)),
    release: (r) => record('release', r.workId, r.holderId, r.fencingToken, () => inner.release(r)),
    readCheckpoint: (r) =>
      record(
        'readCheckpoint',
        r.workId,
        r.holderId,
        r.fencingToken,
        () => inner.readCheckpoint(r),
        (read) => ({ value: safeDecode(read.state), clean: read.cleanHandoff }),
      ),
    admin: inner.admin,
    close: () => inner.close(),
    async settled() {
      while (pending.size > 0) await Promise.all(pending);
    },
  };
}

/**
 * A backend that skips the token check, for the checker's positive control:
 * a fenced write is retried under the current token, so it lands.
 */
export function brokenBackend(inner: LeaseBackend): LeaseBackend {
  async function forge(r: LeaseRecord): Promise<LeaseRecord | null> {
    const info = await inner.admin.get(r.workId);
    if (info === null) return null;
    return { ...r, fencingToken: info.fencingToken, expiresAt: info.expiresAt };
  }
  async function ignoringFence<T>(r: LeaseRecord, run: (rec: LeaseRecord) => Promise<T>): Promise<T> {
    try {
      return await run(r);
    } catch (err) {
      if (!(err instanceof FencedError)) throw err;
      const forged = await forge(r);
      if (forged === null) throw err;
      return run(forged);
    }
  }
  return {
    ...inner,
    kind: inner.kind,
    url: inner.url,
    maxStateBytes: inner.maxStateBytes,
    acquire: (...args) => inner.acquire(...args),
    checkpoint: (r, state, ttlMs) => ignoringFence(r, (rec) => inner.checkpoint(rec, state, ttlMs)),
    renew: (r, ttlMs) =>
      ignoringFence(r, (rec) => inner.renew(rec, ttlMs)).then((rec) => ({ ...r, expiresAt: rec.expiresAt })),
    release: (r) => ignoringFence(r, (rec) => inner.release(rec)),
    readCheckpoint: (r) => ignoringFence(r, (rec) => inner.readCheckpoint(rec)),
    admin: inner.admin,
    close: () => inner.close(),
  };
}
