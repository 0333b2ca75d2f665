/**
 * The shared call-deadline watch (src/backends/deadlines.ts): one coarse timer for all calls in
 * flight. On vitest's fake clock, so what it checks is the order of events, not the machine's speed.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeadlineWatch, tickFor } from '../../src/backends/deadlines.ts';

interface Item {
  id: string;
  deadline: number;
}

describe('DeadlineWatch', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('expires each item once, not before its deadline and at most a tick after it', () => {
    const expired: { id: string; at: number }[] = [];
    const watch = new DeadlineWatch<Item>(10, (item) => expired.push({ id: item.id, at: Date.now() }));
    const t0 = Date.now();
    watch.add({ id: 'soon', deadline: t0 + 25 });
    watch.add({ id: 'later', deadline: t0 + 80 });
    expect(watch.size).toBe(2);
    vi.advanceTimersByTime(24);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(10);
    expect(expired).toEqual([{ id: 'soon', at: t0 + 30 }]);
    expect(watch.size).toBe(1);
    vi.advanceTimersByTime(100);
    expect(expired).toEqual([
      { id: 'soon', at: t0 + 30 },
      { id: 'later', at: t0 + 80 },
    ]);
    expect(watch.size).toBe(0);
    // Empty: the timer stopped.
    expect(vi.getTimerCount()).toBe(0);
  });

  it('never expires an item deleted before its deadline, and starts again after it emptied', () => {
    const expired: string[] = [];
    const watch = new DeadlineWatch<Item>(5, (item) => expired.push(item.id));
    const answered = { id: 'answered', deadline: Date.now() + 20 };
    watch.add(answered);
    expect(vi.getTimerCount()).toBe(1);
    watch.delete(answered);
    vi.advanceTimersByTime(50);
    expect(expired).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
    watch.add({ id: 'next', deadline: Date.now() + 10 });
    vi.advanceTimersByTime(10);
    expect(expired).toEqual(['next']);
  });

  it('ticks at a tenth of the call timeout, between 5 and 100 ms', () => {
    expect([10, 400, 5000, 60_000].map(tickFor)).toEqual([5, 40, 100, 100]);
  });
});
