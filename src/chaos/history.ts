/**
 * What the chaos harness records. Every lease call a holder makes (through
 * {@link recordingBackend}), every force-release and request-release, every injected fault and
 * every `onLost` becomes one event. Events are plain JSON-safe data (tokens as
 * decimal strings) so worker threads can post them and runs can be saved.
 *
 * Times are milliseconds of one monotonic clock shared by all threads of the
 * process (`process.hrtime`, CLOCK_MONOTONIC), so the checker can order a call
 * in one worker against a call in another.
 */

/** The lease calls the checker knows about. */
export type CallName =
  | 'acquire'
  | 'readCheckpoint'
  | 'checkpoint'
  | 'renew'
  | 'release'
  | 'forceRelease'
  | 'requestRelease';

/**
 * How a call ended: `ok` (acknowledged), the contract's refusals, or
 * `unavailable` / `error` (unknown whether it took effect).
 */
export type Outcome = 'ok' | 'held' | 'fenced' | 'expired' | 'conflict' | 'unavailable' | 'error';

/** The checkpoint of the counter step: the count, and who wrote it (token, holder). */
export interface CounterValue {
  n: number;
  /** Fencing token of the lease that wrote this value, as a decimal string. */
  w: string;
  /** Holder that wrote it. */
  h: string;
}

export interface CallEvent {
  type: 'call';
  item: string;
  holder: string;
  /** The token the call was made with (for acquire and forceRelease: the token it produced), or null when unknown. */
  token: string | null;
  call: CallName;
  outcome: Outcome;
  start: number;
  end: number;
  /** checkpoint: the value sent; readCheckpoint: the value read (null: no checkpoint yet). */
  value?: CounterValue | null;
  /** readCheckpoint: whether the lease began with a clean handoff. */
  clean?: boolean;
  /** Error code or message when the outcome is not `ok`. */
  error?: string;
}

/** A holder's `onLost` fired: from `at` on it must not send anything under `token`. */
export interface LostEvent {
  type: 'lost';
  item: string;
  holder: string;
  token: string;
  at: number;
  reason: string;
}

/**
 * `restart`: the Redis master restarted without persistence (its dataset, and the replica's after
 * it resyncs, is gone); `failover`: the replica was promoted while it lagged (the master's latest
 * acknowledged writes are gone). Both need a private server pair (runner `privateRedis`).
 */
export type FaultKind =
  | 'kill'
  | 'pause'
  | 'freeze'
  | 'force-release'
  | 'request-release'
  | 'restart'
  | 'failover'
  | 'shard-restart';
export const FAULT_KINDS: readonly FaultKind[] = [
  'kill',
  'pause',
  'freeze',
  'force-release',
  'request-release',
  'restart',
  'failover',
  'shard-restart',
];
/**
 * `shard-restart`: one master of a private Redis Cluster restarted empty, then `worklease recover`
 * (cluster.ts, shardRestartFault); only as a scheduled fault, never drawn at random.
 */
export const SCHEDULED_ONLY_FAULTS: ReadonlySet<FaultKind> = new Set<FaultKind>(['shard-restart']);
/** Faults after which acknowledged checkpoints may legitimately be gone (docs/durability.md). */
export const DATA_LOSS_FAULTS: ReadonlySet<FaultKind> = new Set<FaultKind>([
  'restart',
  'failover',
  'shard-restart',
]);

export interface FaultEvent {
  type: 'fault';
  kind: FaultKind;
  at: number;
  detail?: string;
}

export type HistoryEvent = CallEvent | LostEvent | FaultEvent;

/** The store as read after the run: each item's current token and counter. */
export interface FinalState {
  item: string;
  token: string | null;
  value: CounterValue | null;
}

/** Milliseconds on the process-wide monotonic clock (same in every worker thread). */
export function now(): number {
  return Number(process.hrtime.bigint() / 1000n) / 1000;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeCounter(value: CounterValue): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/** Null for no checkpoint; throws on bytes that are not a counter (the checker reports them). */
export function decodeCounter(bytes: Uint8Array | null): CounterValue | null {
  if (bytes === null) return null;
  const v = JSON.parse(decoder.decode(bytes)) as CounterValue;
  if (typeof v.n !== 'number' || typeof v.w !== 'string' || typeof v.h !== 'string') {
    throw new Error(`not a counter checkpoint: ${decoder.decode(bytes).slice(0, 80)}`);
  }
  return v;
}
