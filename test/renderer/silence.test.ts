import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SILENT_MS, SilenceWatch } from '../../renderer/api/silence.ts';

/** The console server's silence is noticed when it happens, not at the page's next one-second tick. */
describe('the silence watch', () => {
  let watch: SilenceWatch;
  let changes: number;

  beforeEach(() => {
    vi.useFakeTimers({ now: 0, toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    watch = new SilenceWatch(0);
    changes = 0;
    watch.subscribe(() => changes++);
  });
  afterEach(() => {
    watch.stop();
    vi.useRealTimers();
  });

  it(`marks a connection silent ${SILENT_MS} ms after it was last heard of, and not before`, async () => {
    watch.heard('a');
    await vi.advanceTimersByTimeAsync(SILENT_MS);
    expect(changes).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(changes).toBe(1);
    expect(Date.now() - watch.lastHeard('a')).toBeGreaterThan(SILENT_MS);
  });

  it('a connection announced every second never turns silent, whatever else is quiet', async () => {
    for (let s = 0; s < 10; s++) {
      watch.heard('a');
      await vi.advanceTimersByTimeAsync(1000);
    }
    expect(changes).toBe(0);
  });

  it('the deadline follows the latest word: heard again at 1 s, silent at 2.5 s, not 1.5 s', async () => {
    watch.heard('a');
    await vi.advanceTimersByTimeAsync(1000);
    watch.heard('a');
    await vi.advanceTimersByTimeAsync(SILENT_MS);
    expect(changes).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(changes).toBe(1);
    expect(Date.now()).toBe(1000 + SILENT_MS + 1);
  });

  it('reports a second connection going silent while the first is, and each coming back', async () => {
    watch.heard('a');
    await vi.advanceTimersByTimeAsync(500);
    watch.heard('b');
    await vi.advanceTimersByTimeAsync(SILENT_MS + 1 - 500);
    expect(changes).toBe(1);
    await vi.advanceTimersByTimeAsync(500);
    expect(changes).toBe(2);
    watch.heard('a');
    expect(changes).toBe(3);
    watch.heard('b');
    expect(changes).toBe(4);
    // Heard again: the watch is armed again.
    await vi.advanceTimersByTimeAsync(SILENT_MS + 1);
    expect(changes).toBe(5);
  });

  it('holds one timer whatever the event rate', async () => {
    for (let i = 0; i < 1000; i++) watch.heard(`c${i % 10}`);
    expect(vi.getTimerCount()).toBe(1);
  });
});

describe('the silence watch with nobody listening', () => {
  afterEach(() => vi.useRealTimers());

  it('holds no timer until someone subscribes, and none after the last one leaves', async () => {
    vi.useFakeTimers({ now: 0, toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const watch = new SilenceWatch(0);
    watch.heard('a');
    expect(vi.getTimerCount()).toBe(0);
    let changes = 0;
    const off = watch.subscribe(() => changes++);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(SILENT_MS + 1);
    expect(changes).toBe(1);
    off();
    watch.heard('a');
    expect(vi.getTimerCount()).toBe(0);
  });
});
