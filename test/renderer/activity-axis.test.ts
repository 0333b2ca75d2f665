import { describe, expect, it } from 'vitest';
import {
  binMinutes,
  binPoints,
  countTicks,
  fitWindow,
  isWindow,
  perBinLabel,
  timeTicks,
} from '../../renderer/features/activity/axis.ts';
import type { RatePoint } from '../../src/console/api.ts';

const MIN = 60_000;
/** 2026-12-01 09:00:00 UTC, a whole hour. */
const HOUR = Date.UTC(2026, 11, 1, 9, 0, 0);

const point = (minute: number, acquires = 1, releases = 0): RatePoint => ({
  minute,
  acquires,
  takeovers: 0,
  releases,
  forceReleases: 0,
});

describe('activity chart window', () => {
  it('picks the smallest window that holds the oldest minute with data', () => {
    const end = HOUR + 60 * MIN;
    expect(fitWindow(null, end)).toBe(15);
    expect(fitWindow(end - MIN, end)).toBe(15);
    expect(fitWindow(end - 15 * MIN, end)).toBe(15);
    expect(fitWindow(end - 16 * MIN, end)).toBe(60);
    // 7 minutes of data no longer sit in the right edge of an hour.
    expect(fitWindow(end - 7 * MIN, end)).toBe(15);
    expect(fitWindow(end - 60 * MIN, end)).toBe(60);
    expect(fitWindow(end - 61 * MIN, end)).toBe(1440);
    expect(fitWindow(end - 3 * 24 * 60 * MIN, end)).toBe(1440);
  });

  it('accepts only the offered windows (a remembered value may be anything)', () => {
    expect([15, 60, 1440].every(isWindow)).toBe(true);
    for (const bad of [0, 30, '15', null, undefined, Number.NaN]) expect(isWindow(bad)).toBe(false);
  });

  it('bins minutes into one bar per minute up to an hour and ten-minute bars over 24 h', () => {
    expect(binMinutes(15)).toBe(1);
    expect(binMinutes(60)).toBe(1);
    expect(binMinutes(1440)).toBe(10);
    expect(perBinLabel(60)).toBe('events / min');
    expect(perBinLabel(1440)).toBe('events / 10 min');
  });

  it('sums points into bins covering exactly the window, dropping minutes outside it', () => {
    const end = HOUR + 60 * MIN;
    const points = [
      point(end - 61 * MIN, 100), // before the hour window
      point(end - 60 * MIN, 1),
      point(end - 55 * MIN, 2, 1),
      point(end - 51 * MIN, 4),
      point(end - MIN, 8),
      point(end, 1000), // a minute after the end
    ];
    const hour = binPoints(points, end, 60);
    expect(hour).toHaveLength(60);
    expect(hour[0]).toEqual({
      start: end - 60 * MIN,
      acquires: 1,
      takeovers: 0,
      releases: 0,
      forceReleases: 0,
    });
    expect(hour[59]?.acquires).toBe(8);
    expect(hour.reduce((n, b) => n + b.acquires, 0)).toBe(15);

    const day = binPoints(points, end, 1440);
    expect(day).toHaveLength(144);
    expect(day[day.length - 1]?.start).toBe(end - 10 * MIN);
    // end−61 and end−60 min share a ten-minute bin (…−70 to −60 is the bin before).
    const sum = day.reduce((n, b) => n + b.acquires, 0);
    expect(sum).toBe(115);
    expect(day.find((b) => b.start === end - 60 * MIN)).toMatchObject({ acquires: 7, releases: 1 });

    const quarter = binPoints(points, end, 15);
    expect(quarter).toHaveLength(15);
    expect(quarter.reduce((n, b) => n + b.acquires, 0)).toBe(8);
  });
});

describe('activity chart ticks', () => {
  it('puts time ticks on round clock minutes: 2 min over 15 min, 10 min over an hour, 3 h over a day', () => {
    const end = HOUR + 7 * MIN;
    expect(timeTicks(end - 15 * MIN, end)).toEqual({
      step: 2,
      ticks: [-8, -6, -4, -2, 0, 2, 4, 6].map((m) => HOUR + m * MIN),
    });
    const hour = timeTicks(end - 60 * MIN, end);
    expect(hour.step).toBe(10);
    expect(hour.ticks.map((t) => (t - HOUR) / MIN)).toEqual([-50, -40, -30, -20, -10, 0]);
    const day = timeTicks(end - 1440 * MIN, end);
    expect(day.step).toBe(180);
    expect(day.ticks.length).toBeGreaterThanOrEqual(8);
    for (const t of day.ticks) expect(new Date(t).getUTCHours() % 3).toBe(0);
    for (const t of day.ticks) expect(t % (180 * MIN)).toBe(0);
  });

  it('aligns clock ticks to the display zone, not to UTC', () => {
    const end = HOUR + 24 * 60 * MIN;
    const plus1 = 60 * MIN;
    const { ticks } = timeTicks(end - 1440 * MIN, end, plus1);
    // 3 h steps in UTC+1 fall on 00:00, 03:00 … local, i.e. 23:00, 02:00 … UTC.
    for (const t of ticks) expect(new Date(t + plus1).getUTCHours() % 3).toBe(0);
    expect(new Date(ticks[0]!).getUTCHours() % 3).toBe(2);
  });

  it('keeps every tick inside the window and never more than asked for', () => {
    for (const w of [15, 60, 1440]) {
      for (let shift = 0; shift < 37; shift += 7) {
        const end = HOUR + shift * MIN + 13_000;
        const start = end - w * MIN;
        const { ticks } = timeTicks(start, end, 0, 8);
        expect(ticks.length).toBeGreaterThanOrEqual(2);
        expect(ticks.length).toBeLessThanOrEqual(8);
        for (const t of ticks) expect(t >= start && t <= end).toBe(true);
      }
    }
  });

  it('rounds the count axis up to 1/2/5×10ⁿ steps with whole numbers only', () => {
    expect(countTicks(0)).toEqual({ top: 1, ticks: [0, 1] });
    expect(countTicks(1)).toEqual({ top: 1, ticks: [0, 1] });
    expect(countTicks(3)).toEqual({ top: 3, ticks: [0, 1, 2, 3] });
    expect(countTicks(7)).toEqual({ top: 8, ticks: [0, 2, 4, 6, 8] });
    expect(countTicks(105)).toEqual({ top: 150, ticks: [0, 50, 100, 150] });
    expect(countTicks(53)).toEqual({ top: 60, ticks: [0, 20, 40, 60] });
    expect(countTicks(1234)).toEqual({ top: 1500, ticks: [0, 500, 1000, 1500] });
    for (const max of [2, 9, 11, 99, 101, 4999]) {
      const { top, ticks } = countTicks(max);
      expect(top).toBeGreaterThanOrEqual(max);
      expect(ticks.length).toBeLessThanOrEqual(6);
      const step = ticks[1]! - ticks[0]!;
      expect(String(step)).toMatch(/^[125]0*$/);
    }
  });
});
