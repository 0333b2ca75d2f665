/**
 * The checker's negative controls: hand-made histories, one per kind of
 * violation, each must be caught; and a clean history must pass. If the
 * checker could not see these, a chaos run reporting 0 violations would mean
 * nothing.
 */
import { describe, expect, it } from 'vitest';
import { check, formatReport } from '../../src/chaos/checker.ts';
import type { CallEvent, CounterValue, FinalState, HistoryEvent } from '../../src/chaos/history.ts';

const c = (
  call: CallEvent['call'],
  holder: string,
  token: number | null,
  start: number,
  end: number,
  extra: Partial<CallEvent> = {},
): CallEvent => ({
  type: 'call',
  item: 'x',
  holder,
  token: token === null ? null : String(token),
  call,
  outcome: 'ok',
  start,
  end,
  ...extra,
});
const v = (n: number, w: number, h: string): CounterValue => ({ n, w: String(w), h });
const fin = (token: number, value: CounterValue | null): FinalState[] => [
  { item: 'x', token: String(token), value },
];

/** Two holders, one after the other, each doing a counter step: no violation. */
const clean: HistoryEvent[] = [
  c('acquire', 'a', 1, 0, 1),
  c('readCheckpoint', 'a', 1, 1, 2, { value: null, clean: true }),
  c('checkpoint', 'a', 1, 2, 3, { value: v(1, 1, 'a') }),
  c('renew', 'a', 1, 3, 4),
  c('release', 'a', 1, 4, 5),
  c('acquire', 'b', 2, 6, 7),
  c('readCheckpoint', 'b', 2, 7, 8, { value: v(1, 1, 'a'), clean: true }),
  c('checkpoint', 'b', 2, 8, 9, { value: v(2, 2, 'b') }),
  { type: 'fault', kind: 'kill', at: 8.5 },
  { type: 'lost', item: 'x', holder: 'b', token: '2', at: 10, reason: 'deadline' },
];

describe('chaos checker', () => {
  it('flags a token handed out twice: a backend that lost its data and counted from 1 again', () => {
    // The old behaviour on a Redis restarted without persistence: the counter started over, and a
    // second holder got token 1 while the first still held it.
    const history: HistoryEvent[] = [
      c('acquire', 'a', 1, 0, 1),
      c('checkpoint', 'a', 1, 2, 3, { value: v(1, 1, 'a') }),
      c('release', 'a', 1, 3, 4),
      c('acquire', 'b', 2, 5, 6),
      { type: 'fault', kind: 'restart', at: 7 },
      c('acquire', 'c', 1, 8, 9),
      c('checkpoint', 'c', 1, 9, 10, { value: v(1, 1, 'c') }),
      c('acquire', 'd', 2, 20, 21),
    ];
    const report = check(history, fin(2, v(1, 1, 'c')));
    expect(report.dataChecks).toBe(false);
    expect(report.violations.filter((x) => x.kind === 'token-reissued').map((x) => x.message)).toEqual([
      'token 1 was handed out twice: acquire by a and acquire by c',
      'token 2 was handed out twice: acquire by b and acquire by d',
    ]);
    expect(formatReport('test', report)).toMatch(/data-checks=off \(data-loss faults\) violations=\d+$/);
    // The same run with the token rule (tokens floored by the clock) is clean, though data was lost.
    const floored = history.map((e) =>
      e.type === 'call' && (e.holder === 'c' || e.holder === 'd')
        ? {
            ...e,
            token: String(Number(e.token) + 100),
            ...(e.value ? { value: { ...e.value, w: '101' } } : {}),
          }
        : e,
    );
    expect(check(floored, fin(102, v(1, 101, 'c'))).violations).toEqual([]);
  });

  it('passes a clean history and counts calls and faults', () => {
    const report = check(clean, fin(2, v(2, 2, 'b')));
    expect(report.violations).toEqual([]);
    expect(report.calls).toBe(8);
    expect(report.faults.kill).toBe(1);
    expect(report.increments).toBe(2);
    expect(formatReport('test', report)).toMatch(/calls=8 .*faults=1 .*violations=0$/);
  });

  it('counts an unacknowledged checkpoint that a later read saw as applied', () => {
    const history: HistoryEvent[] = [
      c('acquire', 'a', 1, 0, 1),
      c('readCheckpoint', 'a', 1, 1, 2, { value: null }),
      c('checkpoint', 'a', 1, 2, 3, { value: v(1, 1, 'a'), outcome: 'unavailable' }),
      c('acquire', 'b', 2, 6, 7),
      c('readCheckpoint', 'b', 2, 7, 8, { value: v(1, 1, 'a') }),
      c('checkpoint', 'b', 2, 8, 9, { value: v(2, 2, 'b') }),
    ];
    expect(check(history, fin(2, v(2, 2, 'b'))).violations).toEqual([]);
  });

  it('catches an acknowledged write whose token was already superseded', () => {
    const history: HistoryEvent[] = [
      ...clean.slice(0, 2),
      c('forceRelease', 'operator', 2, 2, 3),
      c('checkpoint', 'a', 1, 4, 5, { value: v(1, 1, 'a') }),
    ];
    const kinds = check(history, fin(2, v(1, 1, 'a'))).violations.map((x) => x.kind);
    expect(kinds).toContain('stale-write');
  });

  it('catches a stale renew and release too', () => {
    const history: HistoryEvent[] = [
      c('acquire', 'a', 1, 0, 1),
      c('acquire', 'b', 2, 2, 3),
      c('renew', 'a', 1, 4, 5),
      c('release', 'a', 1, 6, 7),
    ];
    const found = check(history, []).violations.filter((x) => x.kind === 'stale-write');
    expect(found).toHaveLength(2);
  });

  it('treats requestRelease like any other call under a token: acknowledged after a newer token is stale', () => {
    const history: HistoryEvent[] = [
      c('acquire', 'a', 1, 0, 1),
      // Before the handoff, and refused after it: both fine.
      c('requestRelease', 'operator', 1, 1.5, 1.8),
      c('acquire', 'b', 2, 2, 3),
      c('requestRelease', 'operator', 1, 4, 5, { outcome: 'conflict', error: 'CONFLICT' }),
      // Unknown outcome: may or may not have been applied, not a violation by itself.
      c('requestRelease', 'operator', 1, 5, 6, { outcome: 'unavailable' }),
    ];
    expect(check(history, []).violations).toEqual([]);
    const stale = [...history, c('requestRelease', 'operator', 1, 7, 8)];
    const found = check(stale, []).violations;
    expect(found.map((x) => x.kind)).toEqual(['stale-write']);
    expect(found[0]!.message).toContain('requestRelease by operator with token 1');
  });

  it('does not flag a write that overlapped the acquire that superseded it', () => {
    const history: HistoryEvent[] = [
      c('acquire', 'a', 1, 0, 1),
      c('acquire', 'b', 2, 2, 5),
      c('renew', 'a', 1, 4, 6),
    ];
    expect(check(history, []).violations).toEqual([]);
  });

  it('catches tokens that do not strictly increase, and a repeated token', () => {
    const decreasing: HistoryEvent[] = [c('acquire', 'a', 5, 0, 1), c('acquire', 'b', 4, 2, 3)];
    expect(check(decreasing, []).violations.map((x) => x.kind)).toEqual(['token-order']);
    const repeated: HistoryEvent[] = [c('acquire', 'a', 5, 0, 3), c('acquire', 'b', 5, 1, 2)];
    // A repeat is its own kind (reported once, not again as an order violation).
    expect(check(repeated, []).violations.map((x) => x.kind)).toEqual(['token-reissued']);
  });

  it('catches an acknowledged checkpoint the next holder cannot see', () => {
    const history: HistoryEvent[] = [
      c('acquire', 'a', 1, 0, 1),
      c('readCheckpoint', 'a', 1, 1, 2, { value: null }),
      c('checkpoint', 'a', 1, 2, 3, { value: v(1, 1, 'a') }),
      c('release', 'a', 1, 3, 4),
      c('acquire', 'b', 2, 5, 6),
      c('readCheckpoint', 'b', 2, 6, 7, { value: null }),
    ];
    const kinds = check(history, fin(2, v(1, 1, 'a'))).violations.map((x) => x.kind);
    expect(kinds).toEqual(['lost-checkpoint']);
    // The final store counts as a read as well.
    const finalKinds = check(history.slice(0, 4), fin(1, null)).violations.map((x) => x.kind);
    expect(finalKinds).toContain('lost-checkpoint');
  });

  it('accepts an unseen checkpoint that a later acknowledged one replaced', () => {
    const history: HistoryEvent[] = [
      c('acquire', 'a', 1, 0, 1),
      c('readCheckpoint', 'a', 1, 1, 2, { value: null }),
      c('checkpoint', 'a', 1, 2, 3, { value: v(1, 1, 'a') }),
      c('checkpoint', 'a', 1, 3, 4, { value: v(2, 1, 'a') }),
      c('acquire', 'b', 2, 5, 6),
      c('readCheckpoint', 'b', 2, 6, 7, { value: v(2, 1, 'a') }),
    ];
    expect(check(history, fin(2, v(2, 1, 'a'))).violations).toEqual([]);
  });

  it('catches a final counter that differs from the applied increments', () => {
    const kinds = check(clean, fin(2, v(3, 2, 'b'))).violations.map((x) => x.kind);
    expect(kinds).toEqual(['counter']);
  });

  it('catches a holder that wrote after its onLost', () => {
    const history: HistoryEvent[] = [
      c('acquire', 'a', 1, 0, 1),
      { type: 'lost', item: 'x', holder: 'a', token: '1', at: 2, reason: 'fenced' },
      c('renew', 'a', 1, 3, 4, { outcome: 'fenced' }),
    ];
    expect(check(history, []).violations.map((x) => x.kind)).toEqual(['write-after-lost']);
  });

  it("flags a value no holder of the run sent: another schema's write landed in this store", () => {
    // Two schemas behind one transaction pooler whose prepared statements got mixed up: a holder of
    // the other run wrote its counter into this run's table.
    const report = check(clean, fin(2, v(7, 123456, 'w0')));
    expect(report.violations.map((x) => x.kind)).toContain('foreign-value');
    expect(report.violations.find((x) => x.kind === 'foreign-value')?.message).toMatch(
      /a token no holder of this run had/,
    );
    expect(check(clean, fin(2, v(2, 2, 'b'))).violations).toEqual([]);
  });
});
