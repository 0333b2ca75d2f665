import { describe, expect, it } from 'vitest';
import { describeError } from '../../renderer/app/error-text.ts';
import type { ErrorDataWire } from '../../src/console/api.ts';

const mismatch = (details: Record<string, unknown>): ErrorDataWire => ({
  name: 'SchemaMismatchError',
  code: 'SCHEMA_MISMATCH',
  message: 'schema mismatch',
  details,
});

describe('the console text of a schema mismatch', () => {
  it('a missing or older schema: the migrate command for this connection', () => {
    const pgUrl = 'postgres://db.internal:5432/jobs?schema=billing';
    for (const details of [
      { schema: 'billing', version: 0, expected: 10 },
      { schema: 'billing', version: 9, expected: 10, missing: [10] },
    ]) {
      expect(describeError(mismatch(details), 'connection', pgUrl)).toMatchObject({
        headline: 'This backend has no worklease schema here, or an older one.',
        command: 'worklease migrate postgres://db.internal:5432/jobs --schema billing',
      });
    }
    const redisUrl = 'redis://cache.internal:6379?keyPrefix=jobs';
    for (const found of [null, '3']) {
      expect(
        describeError(mismatch({ keyPrefix: 'jobs', found, expected: 4 }), 'connection', redisUrl).command,
      ).toBe('worklease migrate redis://cache.internal:6379 --key-prefix jobs');
    }
    const sentinelUrl = 'redis+sentinel://s1:26379,s2:26379/main?keyPrefix=jobs';
    expect(
      describeError(mismatch({ keyPrefix: 'jobs', found: null, expected: 4 }), 'connection', sentinelUrl)
        .command,
    ).toBe('worklease migrate redis+sentinel://s1:26379,s2:26379/main --key-prefix jobs');
  });

  it('a schema a newer worklease wrote: upgrade, and no migrate command (it cannot help)', () => {
    for (const [details, url] of [
      [{ schema: 'billing', version: 11, expected: 10 }, 'postgres://db.internal:5432/jobs?schema=billing'],
      [{ keyPrefix: 'jobs', found: '5', expected: 4 }, 'redis://cache.internal:6379?keyPrefix=jobs'],
    ] as const) {
      const d = describeError(mismatch(details), 'connection', url);
      expect(d.command).toBeNull();
      expect(d.headline).toMatch(/newer worklease/);
      expect(d.advice).toMatch(/^Upgrade the worklease/);
    }
  });
});
