import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  REFRESH_MAX_GAP_MS,
  refreshGapMs,
  shownView,
  ViewRunner,
} from '../../renderer/features/fleet/view-runner.ts';

/**
 * The fleet view's recomputations, on fake timers: a job "costs" what it moves the fake clock by
 * while it runs, and `starts` records when the runner started each job.
 */
describe('the fleet view runner', () => {
  let starts: number[];
  let published: number[];
  let cost: number;
  let runner: ViewRunner<number>;

  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
    starts = [];
    published = [];
    cost = 1;
    runner = new ViewRunner<number>(
      () => {
        starts.push(Date.now());
        return {
          key: 'k',
          job: (function* () {
            yield;
            vi.setSystemTime(Date.now() + cost);
            return starts.length;
          })(),
        };
      },
      (view) => published.push(view),
      () => Date.now(),
    );
  });
  afterEach(() => {
    runner.stop();
    vi.useRealTimers();
  });

  /** Runs the timers set so far, not those they set (a job's slices are tasks of their own). */
  const settle = () => vi.runOnlyPendingTimersAsync();

  it('gap: ten times the last job, at most 500 ms', () => {
    expect(refreshGapMs(0)).toBe(0);
    expect(refreshGapMs(1)).toBe(10);
    expect(refreshGapMs(20)).toBe(200);
    expect(refreshGapMs(50)).toBe(REFRESH_MAX_GAP_MS);
    expect(refreshGapMs(400)).toBe(REFRESH_MAX_GAP_MS);
  });

  it('after a cheap job, a refresh (a row came) starts 10 times its cost after it started, not 500 ms', async () => {
    cost = 1;
    runner.restart();
    await settle();
    expect(published).toEqual([1]);
    runner.refresh();
    await vi.advanceTimersByTimeAsync(8);
    expect(starts).toEqual([0]);
    await vi.advanceTimersByTimeAsync(1);
    expect(starts).toEqual([0, 10]);
    await settle();
    expect(published).toEqual([1, 2]);
  });

  it.each([
    { job: 100, next: 500, what: 'a costly job: refreshes keep 500 ms apart' },
    { job: 20, next: 200, what: 'a job of 20 ms: the next refresh 200 ms after it started' },
  ])('$what', async ({ job, next }) => {
    cost = job;
    runner.restart();
    await settle();
    expect(Date.now()).toBe(job);
    runner.refresh();
    await vi.advanceTimersByTimeAsync(next - job - 1);
    expect(starts).toEqual([0]);
    await vi.advanceTimersByTimeAsync(1);
    expect(starts).toEqual([0, next]);
  });

  it('a refresh asked for while a job runs starts after it, paced by that job', async () => {
    cost = 5;
    runner.restart();
    runner.refresh();
    runner.refresh();
    await settle();
    expect(starts).toEqual([0]);
    await vi.advanceTimersByTimeAsync(45);
    expect(starts).toEqual([0, 50]);
    await settle();
    expect(published).toEqual([1, 2]);
  });

  it('restart drops a pending refresh and starts at once', async () => {
    cost = 100;
    runner.restart();
    await settle();
    runner.refresh();
    runner.restart();
    await settle();
    expect(starts).toEqual([0, 100]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(starts).toEqual([0, 100]);
  });
});

describe('the view the fleet table shows', () => {
  const empty = { rows: [] as string[] };
  const all = {
    view: { rows: ['main:batch/000', 'audit:batch/000'] },
    key: 'main#1|audit#1',
    scope: 'main|audit',
  };

  it('keeps the last view while only the inputs of the same connections moved, saying a newer one comes', () => {
    expect(shownView(all, 'main#2|audit#1', 'main|audit', empty)).toEqual({
      view: all.view,
      computing: true,
    });
    expect(shownView(all, 'main#1|audit#1', 'main|audit', empty)).toEqual({
      view: all.view,
      computing: false,
    });
  });

  it('shows no row of a view computed for other connections (all connections, then one tab)', () => {
    expect(shownView(all, 'main#1', 'main', empty)).toEqual({ view: empty, computing: true });
    expect(shownView(null, 'main#1', 'main', empty)).toEqual({ view: empty, computing: true });
  });
});
