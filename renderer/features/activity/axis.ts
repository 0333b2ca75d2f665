/**
 * The activity chart's geometry as pure functions: which window fits the
 * data, how minutes are binned into bars, and where the ticks go. Times are
 * backend times (the minutes the console reported), never this machine's
 * clock; `zoneOffsetMs` only places clock labels on round local times.
 */
import type { RatePoint } from '../../../src/console/common/index.ts';

const MINUTE = 60_000;

/** The windows the chart offers, smallest first. */
export const WINDOWS = [
  { minutes: 15, label: '15 min' },
  { minutes: 60, label: '1 h' },
  { minutes: 1440, label: '24 h' },
] as const;
export type WindowMinutes = (typeof WINDOWS)[number]['minutes'];

export function isWindow(n: unknown): n is WindowMinutes {
  return WINDOWS.some((w) => w.minutes === n);
}

/**
 * The smallest window that holds everything from the oldest minute with data (`since`, a minute's
 * start) up to the end of the current minute (`end`); the smallest window when there is no data.
 */
export function fitWindow(since: number | null, end: number): WindowMinutes {
  if (since === null) return WINDOWS[0].minutes;
  const span = end - since;
  for (const w of WINDOWS) if (span <= w.minutes * MINUTE) return w.minutes;
  return WINDOWS[WINDOWS.length - 1]!.minutes;
}

/** Minutes per bar: one bar per minute up to an hour, ten-minute bars over 24 h (144 bars). */
export function binMinutes(window: WindowMinutes): number {
  return window <= 60 ? 1 : 10;
}

export interface Bin extends Omit<RatePoint, 'minute'> {
  /** Start of the bin (backend clock, ms). */
  start: number;
}

/**
 * Sums per-minute points into `window / binMinutes` bins covering [end − window, end), oldest
 * first; minutes outside the window are left out, bins without data are zero.
 */
export function binPoints(points: readonly RatePoint[], end: number, window: WindowMinutes): Bin[] {
  const width = binMinutes(window) * MINUTE;
  const start = end - window * MINUTE;
  const bins: Bin[] = [];
  for (let t = start; t < end; t += width) {
    bins.push({ start: t, acquires: 0, takeovers: 0, releases: 0, forceReleases: 0 });
  }
  for (const p of points) {
    if (p.minute < start || p.minute >= end) continue;
    const b = bins[Math.floor((p.minute - start) / width)]!;
    b.acquires += p.acquires;
    b.takeovers += p.takeovers;
    b.releases += p.releases;
    b.forceReleases += p.forceReleases;
  }
  return bins;
}

/** Steps for the time axis, in minutes: 1/2/5×10ⁿ up to ten minutes, then round clock steps. */
const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 180, 240, 360, 720];

/**
 * Tick times within [start, end] on round clock times of a `step`-minute grid, `step` the smallest
 * of TIME_STEPS that gives at most `maxTicks` ticks. `zoneOffsetMs` is the display zone's offset
 * from UTC (local time = UTC + offset), so a 3 h step lands on 00:00, 03:00, … of that zone.
 */
export function timeTicks(
  start: number,
  end: number,
  zoneOffsetMs = 0,
  maxTicks = 9,
): { step: number; ticks: number[] } {
  const span = Math.max(0, end - start);
  const step =
    TIME_STEPS.find((s) => Math.floor(span / (s * MINUTE)) + 1 <= maxTicks) ??
    TIME_STEPS[TIME_STEPS.length - 1]!;
  const ms = step * MINUTE;
  const ticks: number[] = [];
  for (let t = Math.ceil((start + zoneOffsetMs) / ms) * ms - zoneOffsetMs; t <= end; t += ms) ticks.push(t);
  return { step, ticks };
}

/**
 * A count axis from 0 to a round top at or above `max`: the step is 1, 2 or 5 × 10ⁿ (never below
 * 1, counts are whole), chosen so there are at most `maxSteps` steps.
 */
export function countTicks(max: number, maxSteps = 5): { top: number; ticks: number[] } {
  const m = Math.max(1, Math.ceil(max));
  let step = 1;
  for (let p = 1; ; p *= 10) {
    const s = [1, 2, 5].map((k) => k * p).find((c) => Math.ceil(m / c) <= maxSteps);
    if (s !== undefined) {
      step = s;
      break;
    }
  }
  const top = Math.ceil(m / step) * step;
  const ticks: number[] = [];
  for (let t = 0; t <= top; t += step) ticks.push(t);
  return { top, ticks };
}

/** "events / min", "events / 10 min": what one bar counts. */
export function perBinLabel(window: WindowMinutes): string {
  const n = binMinutes(window);
  return n === 1 ? 'events / min' : `events / ${n} min`;
}
