import { describe, expect, it } from 'vitest';
import {
  DEFAULT_ESCALATE_AFTER_MS,
  describeRequest,
  escalation,
  escalationReason,
  parseEscalateAfter,
  setEscalateAfterMs,
} from '../../renderer/features/request-release/deadline.ts';

const request = { at: 1_000_000, operator: 'alice', reason: 'draining node 7' };

describe('release request escalation deadline', () => {
  it('reads a stored deadline back, and falls back to the default for anything else', () => {
    expect(parseEscalateAfter('5000')).toBe(5000);
    expect(parseEscalateAfter('86400000')).toBe(86_400_000);
    for (const raw of [null, '', '999', '86400001', '-5', '1.5', '1e4', 'soon', ' 5000']) {
      expect(parseEscalateAfter(raw), String(raw)).toBe(DEFAULT_ESCALATE_AFTER_MS);
    }
    expect(DEFAULT_ESCALATE_AFTER_MS).toBe(30_000);
  });

  it('refuses a deadline out of bounds before storing anything', () => {
    for (const ms of [0, 999, 1.5e3 + 0.5, 86_400_001, Number.NaN]) {
      expect(() => setEscalateAfterMs(ms), String(ms)).toThrow(RangeError);
    }
  });

  it('is due once the request is the deadline old by the server clock, and says how long until then', () => {
    expect(escalation(request, request.at + 12_000, 30_000)).toEqual({
      ageMs: 12_000,
      due: false,
      inMs: 18_000,
    });
    expect(escalation(request, request.at + 30_000, 30_000)).toEqual({ ageMs: 30_000, due: true, inMs: 0 });
    // A server clock a little behind the request's stamp is not a negative age.
    expect(escalation(request, request.at - 400, 30_000)).toEqual({ ageMs: 0, due: false, inMs: 30_000 });
  });

  it('words the request with its age and the escalation reason citing it', () => {
    expect(describeRequest(request, request.at + 41_000)).toBe(
      'Release requested 41 s ago by alice: draining node 7',
    );
    const reason = escalationReason(request, 95_000);
    expect(reason).toContain('release request by alice');
    expect(reason).toContain('draining node 7');
    expect(reason).toContain('1 min 35 s');
  });
});
