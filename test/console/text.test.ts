/**
 * The policy for invisible and bidi characters: new ids refuse them in the
 * library (before any I/O), stored ones stay reachable, and everything shown
 * escapes them (src/console/text.ts) while the stored bytes stay the same.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgliteRefusal } from '../../src/console/access.ts';
import { visible } from '../../src/console/text.ts';
import { type LeaseBackend, openBackend } from '../../src/index.ts';
import { checkNewId } from '../../src/lease/validate.ts';
import { PG_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';

const ns = uniqueNamespace('text');
let backend: LeaseBackend;

beforeAll(async () => {
  backend = await openBackend(PG_URL, { schema: ns });
});
afterAll(async () => {
  await backend?.close();
  await dropNamespace({ kind: 'postgres', url: PG_URL }, ns);
});

describe('ids with invisible or bidi characters', () => {
  const tricky = ['job\u202E7', 'job\u200B7', '\uFEFFjob7', 'job\u2066x\u2069', 'job\u00AD7', 'job\u{E0041}'];

  it.each(tricky)('acquire refuses %j with INVALID_ARGUMENT and writes nothing', async (id) => {
    await expect(backend.acquire(id, 'w', 1000)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(backend.acquire('ok-id', id, 1000)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await backend.admin.get(id)).toBeNull();
    expect(() => checkNewId('workId', id)).toThrow(/invisible or bidi characters \(found U\+/);
  });

  it('accepts visible Unicode ids (accents, CJK, emoji without joiners)', async () => {
    for (const id of ['café-1', '作业-2', 'job-🚀']) {
      const rec = await backend.acquire(id, 'w', 60_000);
      await backend.release(rec);
    }
  });

  it('lookups still take any id without control characters (stored before the rule)', async () => {
    expect(await backend.admin.get('job\u202E7')).toBeNull();
  });
});

describe('visible()', () => {
  it('escapes control, format and separator characters as \\uXXXX, and nothing else', () => {
    expect(visible('plain café 作业 🚀')).toBe('plain café 作业 🚀');
    expect(visible('a\u202Eb\u200Bc\uFEFF')).toBe('a\\u202Eb\\u200Bc\\uFEFF');
    expect(visible('\u001b[2J\r\n\u009b\u2028')).toBe('\\u001B[2J\\u000D\\u000A\\u009B\\u2028');
    expect(visible('line1\nline2\tx', '\n\t')).toBe('line1\nline2\tx');
    expect(visible('tag\u{E0041}')).toBe('tag\\uDB40\\uDC41');
    expect(visible('lone\uD800')).toBe('lone\\uD800');
  });

  it('keeps JSON valid and equal in value', () => {
    const value = { note: '\u202Eevil\u200B\u009b', ok: 'café' };
    const text = visible(JSON.stringify(value));
    expect(text).not.toMatch(/[\u202E\u200B\u009b]/);
    expect(JSON.parse(text)).toEqual(value);
  });
});

describe('pglite URLs on a shared console', () => {
  it('allows memory up to the limit, paths only strictly inside the data dir', () => {
    expect(pgliteRefusal('postgres://db/app', undefined, 0, 2)).toBeNull();
    expect(pgliteRefusal('pglite://memory', undefined, 1, 2)).toBeNull();
    expect(pgliteRefusal('pglite://memory', undefined, 2, 2)).toMatch(/at most 2/);
    expect(pgliteRefusal('pglite:///data/x', undefined, 0, 2)).toMatch(/--pglite-dir/);
    expect(pgliteRefusal('pglite:///data/x', '/data', 0, 2)).toBeNull();
    expect(pgliteRefusal('pglite:///data/a/b', '/data', 0, 2)).toBeNull();
    for (const bad of [
      'pglite:///data',
      'pglite:///data/',
      'pglite:///database',
      'pglite:///data/../etc',
      'pglite:///data/%2e%2e/etc',
      'pglite:///etc/x',
    ]) {
      expect(pgliteRefusal(bad, '/data', 0, 2), bad).not.toBeNull();
    }
  });
});
