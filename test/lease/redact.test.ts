/**
 * The URL redactor (src/lease/redact.ts) that every shown or stored URL goes
 * through, reached here by `redactUrl` of src/backends/url.ts as the rest of the
 * code reaches it: multi-host authorities, odd passwords, secret parameters.
 */
import { describe, expect, it } from 'vitest';
import { redactUrl } from '../../src/backends/url.ts';
import { redactUrlsIn, splitUrlText } from '../../src/lease/redact.ts';

describe('redactUrl', () => {
  it.each([
    [
      'postgres://u:p@h1:5432,h2:5432/db?sslmode=require',
      'postgres://u:***@h1:5432,h2:5432/db?sslmode=require',
    ],
    [
      'postgres://u:p@h1:5432,h2:5432/db?target_session_attrs=read-write&password=p',
      'postgres://u:***@h1:5432,h2:5432/db?target_session_attrs=read-write&password=***',
    ],
    [
      'redis+sentinel://u:p@h1:26379,h2:26379/mymaster?keyPrefix=jobs&sentinelPassword=s3',
      'redis+sentinel://u:***@h1:26379,h2:26379/mymaster?keyPrefix=jobs&sentinelPassword=***',
    ],
    ['redis+cluster://:p@h1:7000,h2:7001?tls=true', 'redis+cluster://:***@h1:7000,h2:7001?tls=true'],
    ['rediss://default:p@cache.internal:6380/2', 'rediss://default:***@cache.internal:6380/2'],
    ['postgres://user:p@ss@host/db', 'postgres://user:***@host/db'],
    ['postgres://user:pa/ss@host/db', 'postgres://user:***@host/db'],
    ['postgres://user:pa:ss@host:5432/db', 'postgres://user:***@host:5432/db'],
    ['postgres://user:pa?ss@host/db', 'postgres://user:***@host/db'],
    ['postgres://user:pa#ss@host/db', 'postgres://user:***@host/db'],
    ['postgres://user:p@ss/w:rd@[::1]:5432/db', 'postgres://user:***@[::1]:5432/db'],
    ['postgres://u:@h/db', 'postgres://u:***@h/db'],
    ['postgres://app@db.internal/app', 'postgres://app@db.internal/app'],
    ['postgres://db.internal:5432/app?schema=x', 'postgres://db.internal:5432/app?schema=x'],
    ['pglite://memory', 'pglite://memory'],
    ['pglite:///var/lib/a@b:c', 'pglite:///var/lib/a@b:c'],
    ['REDIS://:p@h', 'REDIS://:***@h'],
  ])('%s', (url, shown) => {
    expect(redactUrl(url)).toBe(shown);
  });

  it('never shows any part of the password, whatever it holds', () => {
    for (const password of ['p@ss', 'pa/ss', 'a:b', 'x?y=1', 'h#1', '@@', '/@/', 'p%40ss']) {
      for (const hosts of ['h', 'h1:5432,h2:5432', '[::1]:6379']) {
        const url = `postgres://user:${password}@${hosts}/db`;
        const shown = redactUrl(url);
        expect(shown, url).toBe(`postgres://user:***@${hosts}/db`);
      }
    }
  });

  it('hides more than the password rather than less when a path or query holds an @', () => {
    // The database name holds `@` and a port precedes it: the port and the path are hidden too.
    expect(redactUrl('postgres://h:5432/db?user=me@x')).toBe('postgres://h:***@x');
  });

  it('redacts URLs inside free text (error messages, stacks)', () => {
    expect(redactUrlsIn("could not connect to 'postgres://u:pa/ss@h1:5432,h2:5432/db' (ECONNREFUSED)")).toBe(
      "could not connect to 'postgres://u:***@h1:5432,h2:5432/db' (ECONNREFUSED)",
    );
  });

  it('splits the text of a URL without decoding it', () => {
    expect(splitUrlText('postgres://u:p%40s@h1:5432,h2:5432/db?a=1#f')).toEqual({
      scheme: 'postgres:',
      userinfo: 'u:p%40s',
      hosts: 'h1:5432,h2:5432',
      path: '/db',
      query: 'a=1',
      fragment: 'f',
    });
    expect(splitUrlText('pglite:///dir')).toMatchObject({ hosts: '', path: '/dir', userinfo: null });
    expect(splitUrlText('not a url')).toBeNull();
  });
});
