import { describe, expect, it } from 'vitest';
import { duration, relative } from '../../src/cli/format.ts';
import { formatDuration, formatExpiry, formatRelative } from '../../src/console/format.ts';

describe('the one duration format (CLI and console)', () => {
  it('writes whole units, rounded down, with their names', () => {
    expect(formatDuration(0)).toBe('0 ms');
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(1999)).toBe('1 s');
    expect(formatDuration(44_000)).toBe('44 s');
    expect(formatDuration(250_000)).toBe('4 min 10 s');
    expect(formatDuration((119 * 60 + 59) * 1000)).toBe('1 h 59 min');
    expect(formatDuration(76 * 3600_000)).toBe('3 d 04 h');
    expect(formatDuration(-44_000)).toBe('44 s');
    expect(formatDuration(Number.NaN)).toBe('—');
  });

  it('says "expired … ago" for a passed expiry, never a negative "in"', () => {
    const now = 1_764_581_446_000;
    expect(formatExpiry(now + 12_000, now)).toBe('in 12 s');
    expect(formatExpiry(now - 44_000, now)).toBe('expired 44 s ago');
    expect(formatExpiry(now, now)).toBe('expired 0 ms ago');
    expect(formatRelative(now - 184_000, now)).toBe('3 min 04 s ago');
  });

  it('is what the CLI prints', () => {
    const now = 1_764_581_446_000;
    expect(duration(7_140_000)).toBe('1 h 59 min');
    expect(relative(new Date(now + 7_140_000), now)).toBe('in 1 h 59 min');
    expect(relative(new Date(now - 3_000), now)).toBe('3 s ago');
    expect(relative(null, now)).toBe('-');
  });
});
