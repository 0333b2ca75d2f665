/**
 * The URL grammar's pure parts (src/backends/url.ts), without I/O. The
 * behaviour on real backends is in the conformance suite ("backend URL query
 * options").
 */
import { describe, expect, it } from 'vitest';
import {
  effectiveUrl,
  migrateCommandFor,
  redactUrl,
  resolveBackendUrl,
  URL_OPTIONS,
  urlOptionNames,
} from '../../src/backends/url.ts';
import { InvalidArgumentError } from '../../src/index.ts';

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidArgumentError);
    return (err as Error).message;
  }
  throw new Error('expected INVALID_ARGUMENT');
}

describe('resolveBackendUrl', () => {
  it('takes open options out of the URL and leaves driver parameters in it, in order', () => {
    const a = resolveBackendUrl(
      'postgres://u:pw@db:5432/app?sslmode=disable&schema=billing&callTimeoutMs=2500',
    );
    expect(a.kind).toBe('postgres');
    expect(a.driverUrl).toBe('postgres://u:pw@db:5432/app?sslmode=disable');
    expect(a.redactedDriverUrl).toBe('postgres://u:***@db:5432/app?sslmode=disable');
    expect(a.options).toEqual({ schema: 'billing', callTimeoutMs: 2500 });
    const r = resolveBackendUrl('redis+cluster://h1:7000,h2:7001?tls=true&keyPrefix=jobs', {
      migrate: false,
    });
    expect(r).toMatchObject({
      kind: 'redis-cluster',
      driverUrl: 'redis+cluster://h1:7000,h2:7001?tls=true',
      options: { keyPrefix: 'jobs', migrate: false },
    });
    expect(resolveBackendUrl('pglite:///var/lib/x%20y?schema=s').driverUrl).toBe('pglite:///var/lib/x%20y');
  });

  it('decodes %-escapes in values and refuses a malformed one', () => {
    expect(resolveBackendUrl('redis://h?keyPrefix=a%3Ab').options.keyPrefix).toBe('a:b');
    expect(refusal(() => resolveBackendUrl('redis://h?keyPrefix=%zz'))).toMatch(/malformed %-escape/);
  });

  it('refuses unknown names, names of another backend, repeats and conflicts, naming what it knows', () => {
    expect(refusal(() => resolveBackendUrl('redis://h?schema=x'))).toBe(
      `unknown option 'schema' in backend URL 'redis://h?schema=x' (known for redis: ${urlOptionNames('redis').join(', ')})`,
    );
    expect(urlOptionNames('redis')).toEqual([
      'keyPrefix',
      'callTimeoutMs',
      'busyPollMs',
      'maxStateBytes',
      'tls',
      'db',
      'sentinelPassword',
    ]);
    expect(urlOptionNames('pglite')).toEqual(['schema', 'callTimeoutMs', 'maxStateBytes']);
    expect(refusal(() => resolveBackendUrl('postgres://h/db?application_name=x'))).toMatch(/unknown option/);
    expect(refusal(() => resolveBackendUrl('postgres://h/db?sslmode=a&sslmode=b'))).toMatch(/given twice/);
    expect(refusal(() => resolveBackendUrl('postgres://h/db?poolSize=5', { poolSize: 6 }))).toBe(
      "option 'poolSize' is '5' in the backend URL but '6' in the options: give it once",
    );
    expect(resolveBackendUrl('postgres://h/db?poolSize=5', { poolSize: 5 }).options.poolSize).toBe(5);
    expect(refusal(() => resolveBackendUrl('postgres://h/db?poolSize=-1'))).toMatch(/must be a whole number/);
    expect(refusal(() => resolveBackendUrl('postgres://h/db', 'schema=x' as never))).toMatch(/options/);
  });

  it('passwords never show: in the authority, and in a password= query value', () => {
    expect(redactUrl('postgres://u:s3cret@h/db?password=s3cret&sslmode=require')).toBe(
      'postgres://u:***@h/db?password=***&sslmode=require',
    );
    expect(refusal(() => resolveBackendUrl('postgres://u:s3cret@h/db?bogus=1'))).not.toContain('s3cret');
  });
});

describe('effectiveUrl and migrateCommandFor', () => {
  it('make the namespace explicit, after the driver parameters', () => {
    const a = resolveBackendUrl('postgres://u:pw@db/app?sslmode=disable&schema=billing');
    const url = effectiveUrl(a, { schema: 'billing', keyPrefix: 'worklease' });
    expect(url).toBe('postgres://u:***@db/app?sslmode=disable&schema=billing');
    expect(migrateCommandFor(url)).toBe(
      'worklease migrate postgres://u:***@db/app?sslmode=disable --schema billing',
    );
    const r = effectiveUrl(resolveBackendUrl('redis://h:6379/2'), {
      schema: 'worklease',
      keyPrefix: 'worklease',
    });
    expect(r).toBe('redis://h:6379/2?keyPrefix=worklease');
    expect(migrateCommandFor(r)).toBe('worklease migrate redis://h:6379/2 --key-prefix worklease');
  });

  it('every row of the table says which backends take it and what it is', () => {
    for (const [name, o] of Object.entries(URL_OPTIONS)) {
      expect(o.kinds.length, name).toBeGreaterThan(0);
      expect(o.about.length, name).toBeGreaterThan(3);
    }
  });
});
