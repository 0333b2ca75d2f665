/**
 * Reads a chaos run's history and final store and says whether any fenced
 * write landed. Pure: no I/O, no clock; the runner and the tests feed it.
 *
 * "Acknowledged" means the backend call returned success. A call that failed
 * with `unavailable` / `error` may or may not have taken effect; such a
 * checkpoint counts as applied only if a later read (or the final store)
 * shows its value. Time comparisons are strict and use the call's local
 * start/end: the server applied a call somewhere inside [start, end], so
 * "B ended before A started" proves B was applied before A.
 *
 * Violations:
 * - `stale-write`: an acknowledged checkpoint/renew/release/requestRelease whose token was
 *   already superseded (an acknowledged acquire or force-release with a
 *   higher token had ended) when the write started.
 * - `token-reissued`: one token handed out by two different acknowledged
 *   acquisitions (acquire or force-release) of one item — what a backend that
 *   lost its latest writes and counted on from an old counter does.
 * - `token-order`: tokens from acquire/force-release that are not strictly
 *   increasing per item in real-time order.
 * - `lost-checkpoint`: a read (or the final store) shows a value older than an
 *   acknowledged checkpoint that ended before the read started.
 * - `counter`: an item's final counter differs from its number of applied
 *   increments (acknowledged checkpoints plus unacknowledged ones whose
 *   value a later read or the final store shows).
 * - `write-after-lost`: a holder sent a call under a token after its
 *   `onLost` fired for that token.
 * - `foreign-value`: a read or the final store shows a checkpoint that no holder of this run
 *   sent: another client's write landed in this run's store (two schemas behind one pooler whose
 *   statements got mixed up).
 *
 * After a data-loss fault (a Redis restart without persistence, a failover to a
 * lagging replica) acknowledged checkpoints may be gone by design, so the
 * `lost-checkpoint` and `counter` checks are off for such a run (the report
 * says so); the token checks, which must hold whatever the backend lost, stay.
 */
import type { CallEvent, CounterValue, FaultKind, FinalState, HistoryEvent, LostEvent } from './history.ts';
import { DATA_LOSS_FAULTS, FAULT_KINDS } from './history.ts';

export type ViolationKind =
  | 'stale-write'
  | 'token-reissued'
  | 'token-order'
  | 'lost-checkpoint'
  | 'counter'
  | 'write-after-lost'
  | 'foreign-value';

export interface Violation {
  kind: ViolationKind;
  item: string;
  message: string;
}

export interface CheckReport {
  /** Lease calls recorded (every attempt, every outcome). */
  calls: number;
  /** Calls acknowledged. */
  acknowledged: number;
  faults: Record<FaultKind, number>;
  /** Holders that declared themselves lost. */
  losses: number;
  /** Sum of the final counters. */
  increments: number;
  /** False when a data-loss fault turned the lost-checkpoint and counter checks off. */
  dataChecks: boolean;
  violations: Violation[];
}

/**
 * Calls made under a token that must be refused once the token is superseded. requestRelease is one
 * of them: the operator names the token it saw, and a request acknowledged after that lease changed
 * hands would have marked someone else's lease.
 */
const WRITES = new Set(['checkpoint', 'renew', 'release', 'requestRelease']);

/** Token comparison on decimal strings without losing precision. */
function tok(s: string): bigint {
  return BigInt(s);
}

/** Is value `a` (written under token a.w) older than value `b`? Within one token, counts only grow. */
function older(a: CounterValue | null, b: CounterValue): boolean {
  if (a === null) return true;
  const aw = tok(a.w);
  const bw = tok(b.w);
  return aw < bw || (aw === bw && a.n < b.n);
}

export function check(history: readonly HistoryEvent[], finals: readonly FinalState[]): CheckReport {
  const faults = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
  const calls: CallEvent[] = [];
  const losses: LostEvent[] = [];
  for (const e of history) {
    if (e.type === 'call') calls.push(e);
    else if (e.type === 'lost') losses.push(e);
    else faults[e.kind]++;
  }
  const violations: Violation[] = [];
  const byItem = new Map<string, CallEvent[]>();
  for (const c of calls) {
    const list = byItem.get(c.item);
    if (list === undefined) byItem.set(c.item, [c]);
    else list.push(c);
  }
  const finalByItem = new Map(finals.map((f) => [f.item, f]));
  const dataChecks = !FAULT_KINDS.some((k) => DATA_LOSS_FAULTS.has(k) && faults[k] > 0);
  const items = new Set([...byItem.keys(), ...finalByItem.keys()]);

  for (const item of items) {
    const list = byItem.get(item) ?? [];
    const ok = list.filter((c) => c.outcome === 'ok');

    // Token order: every token-producing call must exceed all tokens produced by calls that ended before it started.
    const producers = ok
      .filter((c) => (c.call === 'acquire' || c.call === 'forceRelease') && c.token !== null)
      .map((c) => ({ c, token: tok(c.token!) }));
    const seen = new Map<bigint, CallEvent>();
    for (const p of producers) {
      const dup = seen.get(p.token);
      if (dup !== undefined) {
        violations.push({
          kind: 'token-reissued',
          item,
          message: `token ${p.token} was handed out twice: ${dup.call} by ${dup.holder} and ${p.c.call} by ${p.c.holder}`,
        });
        continue;
      }
      seen.set(p.token, p.c);
    }
    const byEnd = [...producers].sort((a, b) => a.c.end - b.c.end);
    const byStart = [...producers].sort((a, b) => a.c.start - b.c.start);
    let maxBefore = -1n;
    let maxBeforeCall: CallEvent | undefined;
    let j = 0;
    for (const p of byStart) {
      while (j < byEnd.length && byEnd[j]!.c.end < p.c.start) {
        if (byEnd[j]!.token > maxBefore) {
          maxBefore = byEnd[j]!.token;
          maxBeforeCall = byEnd[j]!.c;
        }
        j++;
      }
      if (p.token <= maxBefore && seen.get(p.token) === p.c) {
        violations.push({
          kind: 'token-order',
          item,
          message: `${p.c.call} by ${p.c.holder} produced token ${p.token} after ${maxBeforeCall?.call} had produced ${maxBefore}`,
        });
      }
    }

    // Stale writes: for each acknowledged write, the highest token produced before it started must not exceed its own.
    const writes = ok.filter((c) => WRITES.has(c.call) && c.token !== null).sort((a, b) => a.start - b.start);
    maxBefore = -1n;
    maxBeforeCall = undefined;
    j = 0;
    for (const w of writes) {
      while (j < byEnd.length && byEnd[j]!.c.end < w.start) {
        if (byEnd[j]!.token > maxBefore) {
          maxBefore = byEnd[j]!.token;
          maxBeforeCall = byEnd[j]!.c;
        }
        j++;
      }
      if (tok(w.token!) < maxBefore) {
        violations.push({
          kind: 'stale-write',
          item,
          message: `${w.call} by ${w.holder} with token ${w.token} was acknowledged although ${maxBeforeCall?.call} had already produced token ${maxBefore}`,
        });
      }
    }

    // Visibility: each read must show at least the newest checkpoint acknowledged before it started.
    const acked = ok
      .filter((c) => c.call === 'checkpoint' && c.value !== undefined && c.value !== null)
      .sort((a, b) => a.end - b.end);
    const reads: { at: number; value: CounterValue | null; what: string }[] = ok
      .filter((c) => c.call === 'readCheckpoint' && c.value !== undefined)
      .map((c) => ({ at: c.start, value: c.value ?? null, what: `read by ${c.holder} (token ${c.token})` }))
      .sort((a, b) => a.at - b.at);
    const fin = finalByItem.get(item);
    if (!dataChecks) continue;
    if (fin !== undefined)
      reads.push({ at: Number.POSITIVE_INFINITY, value: fin.value, what: 'the final store' });
    let newest: CounterValue | null = null;
    let newestCall: CallEvent | undefined;
    j = 0;
    for (const r of reads) {
      while (j < acked.length && acked[j]!.end < r.at) {
        const v = acked[j]!.value!;
        if (newest === null || older(newest, v)) {
          newest = v;
          newestCall = acked[j];
        }
        j++;
      }
      if (newest !== null && older(r.value, newest)) {
        violations.push({
          kind: 'lost-checkpoint',
          item,
          message: `${r.what} saw ${r.value === null ? 'no checkpoint' : `n=${r.value.n} from token ${r.value.w}`} but the checkpoint n=${newest.n} by ${newestCall?.holder} (token ${newest.w}) had been acknowledged`,
        });
      }
    }

    // A value written under a token that no call of this run ever carried was written by someone else.
    const sent = new Set(
      list.filter((x) => x.call === 'checkpoint' && x.value).map((x) => `${x.value!.w}/${x.value!.n}`),
    );
    const tokens = new Set(list.map((x) => x.token).filter((t) => t !== null));
    for (const r of reads) {
      if (r.value !== null && !tokens.has(r.value.w)) {
        violations.push({
          kind: 'foreign-value',
          item,
          message: `${r.what} saw n=${r.value.n} from token ${r.value.w} (holder ${r.value.h}), a token no holder of this run had: not this run's write`,
        });
      }
    }

    // Counter: applied increments are the distinct (token, n) values acknowledged or observed.
    if (fin !== undefined) {
      // A value seen but never sent by anyone is not an increment: it can only make the count disagree.
      const applied = new Set<string>();
      for (const x of acked) applied.add(`${x.value!.w}/${x.value!.n}`);
      for (const r of reads) {
        const key = r.value === null ? undefined : `${r.value.w}/${r.value.n}`;
        if (key !== undefined && sent.has(key)) applied.add(key);
      }
      const finalN = fin.value?.n ?? 0;
      if (finalN !== applied.size) {
        violations.push({
          kind: 'counter',
          item,
          message: `final counter is ${finalN} but ${applied.size} increments were applied`,
        });
      }
    }
  }

  // A holder must send nothing under a token after its onLost for that token.
  const lostAt = new Map<string, LostEvent>();
  for (const l of losses) {
    const key = `${l.item}\u0000${l.holder}\u0000${l.token}`;
    const prev = lostAt.get(key);
    if (prev === undefined || l.at < prev.at) lostAt.set(key, l);
  }
  for (const c of calls) {
    if (c.token === null || c.call === 'acquire' || c.call === 'forceRelease') continue;
    const l = lostAt.get(`${c.item}\u0000${c.holder}\u0000${c.token}`);
    if (l !== undefined && c.start > l.at) {
      violations.push({
        kind: 'write-after-lost',
        item: c.item,
        message: `${c.holder} sent ${c.call} with token ${c.token} ${(c.start - l.at).toFixed(1)} ms after its onLost (${l.reason})`,
      });
    }
  }

  return {
    calls: calls.length,
    acknowledged: calls.filter((c) => c.outcome === 'ok').length,
    faults,
    losses: losses.length,
    increments: finals.reduce((sum, f) => sum + (f.value?.n ?? 0), 0),
    dataChecks,
    violations,
  };
}

/** The one line a chaos run prints. */
export function formatReport(label: string, report: CheckReport, seconds?: number): string {
  const total = Object.values(report.faults).reduce((a, b) => a + b, 0);
  const kinds = Object.entries(report.faults)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  return (
    `chaos ${label}${seconds === undefined ? '' : ` ${seconds}s`}: calls=${report.calls} acked=${report.acknowledged} ` +
    `increments=${report.increments} losses=${report.losses} faults=${total} (${kinds})` +
    `${report.dataChecks ? '' : ' data-checks=off (data-loss faults)'} violations=${report.violations.length}`
  );
}
