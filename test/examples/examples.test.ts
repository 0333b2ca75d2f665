/**
 * The runnable examples under examples/ (shown in docs/), run as they are on
 * pglite://memory, with their results checked.
 */
import { describe, expect, it } from 'vitest';
import { main as election } from '../../examples/election.ts';
import { main as group } from '../../examples/group.ts';
import { main as requestRelease } from '../../examples/request-release.ts';
import { main as waiting } from '../../examples/waiting.ts';

describe('examples on pglite://memory', () => {
  it('waiting.ts: the waiter takes the report when it is released, cleanly, from its checkpoint', async () => {
    const r = await waiting('pglite://memory');
    expect(r.cleanHandoff).toBe(true);
    expect(r.state).toBe('{"pages":40}');
    expect(r.tokens[1]! > r.tokens[0]!).toBe(true);
    expect(r.waitedMs).toBeGreaterThanOrEqual(250);
  }, 60_000);

  it('request-release.ts: the asked worker saves and releases; the next resumes from it cleanly; audited', async () => {
    const r = await requestRelease('pglite://memory');
    expect(r.asked).toEqual({
      at: expect.any(Date),
      operator: 'alice',
      reason: 'draining node 7 for an upgrade',
    });
    expect(r.rows).toBeGreaterThanOrEqual(300);
    expect(r.state).toBe(JSON.stringify({ rows: r.rows }));
    expect(r.cleanHandoff).toBe(true);
    expect(r.audit).toEqual(['request-release']);
  }, 60_000);

  it('election.ts: the second term is higher and the deposed leader is refused', async () => {
    const r = await election('pglite://memory');
    expect(r.second > r.first).toBe(true);
    expect(r.lateWriteAccepted).toBe(false);
    expect(r.writes).toEqual(['plan by the first leader', 'plan by the second leader']);
  }, 60_000);

  it('group.ts: 3 members hold 4 partitions each, then 2 hold 6 each', async () => {
    const r = await group('pglite://memory');
    expect(r.three).toEqual([4, 4, 4]);
    expect(r.two).toEqual([6, 6]);
  }, 90_000);
});
