import { describe, expect, it } from 'vitest';
import { MAX_SCROLL_PX, rowWindow, scrollTopFor } from '../../renderer/features/fleet/fixed-rows.ts';

describe('fixed-height rows on screen', () => {
  it('draws the rows under the scroll position plus the overscan, padded to their place', () => {
    expect(rowWindow(1000, 32, 3200, 640, 5)).toEqual({
      first: 95,
      last: 125,
      padTop: 95 * 32,
      height: 32_000,
    });
    expect(rowWindow(1000, 32, 0, 640, 5)).toMatchObject({ first: 0, last: 25, padTop: 0 });
    expect(rowWindow(0, 32, 0, 640, 5)).toEqual({ first: 0, last: 0, padTop: 0, height: 0 });
  });

  it('compresses the scroll range of a million-row table under the browser cap, reaching both ends', () => {
    const n = 2_000_000;
    const top = rowWindow(n, 32, 0, 800, 3);
    expect(top).toMatchObject({ first: 0, padTop: 0, height: MAX_SCROLL_PX });
    const end = rowWindow(n, 32, MAX_SCROLL_PX - 800, 800, 3);
    expect(end.last).toBe(n);
    const mid = rowWindow(n, 32, (MAX_SCROLL_PX - 800) / 2, 800, 3);
    expect(Math.abs(mid.first - n / 2)).toBeLessThan(50);
  });

  it('scrolls a row into view at the nearest edge, or not at all', () => {
    expect(scrollTopFor(10, 1000, 32, 0, 640)).toBeNull();
    expect(scrollTopFor(30, 1000, 32, 0, 640)).toBe(31 * 32 - 640);
    expect(scrollTopFor(2, 1000, 32, 320, 640)).toBe(64);
    // Compressed: the row asked for is the one drawn in view afterwards.
    const n = 2_000_000;
    const to = scrollTopFor(n - 1, n, 32, 0, 800) as number;
    const w = rowWindow(n, 32, to, 800, 0);
    expect(w.first).toBeLessThanOrEqual(n - 1);
    expect(w.last).toBe(n);
  });
});
