/**
 * Console links from the CLI: `show` prints the lease's console URL and `ls --urls` adds a URL
 * column, when a console is given (`--console-url` or WORKLEASE_CONSOLE_URL). The connection in the
 * link is the id the console itself gives a connection started with the same URL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConsoleService } from '../../src/console/index.ts';
import { connectionIdFor } from '../../src/console/links.ts';
import { type LeaseBackend, openBackend } from '../../src/index.ts';
import { PG_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';
import { run } from './support.ts';

const schema = uniqueNamespace('links');
const url = `${PG_URL}?schema=${schema}`;
let backend: LeaseBackend;
let consoleId: string;

beforeAll(async () => {
  backend = await openBackend(PG_URL, { schema });
  await backend.acquire('jobs/a b#1', 'w-1', 60_000);
  await backend.acquire('jobs/c', 'w-2', 60_000);
  // The id `serve --connect <url>` gives the connection (same derivation in the service).
  const service = createConsoleService({
    connections: [
      { name: 'x', url },
      { name: 'y', url },
    ],
  });
  const ids = service.connections().map((c) => c.id);
  await service.close();
  consoleId = ids[0]!;
  expect(consoleId).toBe(connectionIdFor(backend.url));
  expect(ids[1]).toBe(`${consoleId}-2`);
});
afterAll(async () => {
  await backend?.close();
  await dropNamespace({ kind: 'postgres', url: PG_URL }, schema);
});

describe('console links', () => {
  it('show prints the lease URL, with the work id encoded and no token from the given URL', async () => {
    const r = await run(['show', url, 'jobs/a b#1', '--console-url', 'http://127.0.0.1:7420/?token=sekrit']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(`^console\\s+http://127\\.0\\.0\\.1:7420/c/${consoleId}/lease/jobs%2Fa%20b%231$`, 'm'),
    );
    expect(r.stdout).not.toContain('sekrit');
    const json = await run(['show', url, 'jobs/c', '--json'], {
      WORKLEASE_CONSOLE_URL: 'https://ops.example.com/console',
    });
    expect(JSON.parse(json.stdout).consoleUrl).toBe(
      `https://ops.example.com/console/c/${consoleId}/lease/jobs%2Fc`,
    );
    // Without a console: no link.
    const plain = await run(['show', url, 'jobs/c']);
    expect(plain.stdout).not.toMatch(/^console/m);
  });

  it('ls --urls adds a URL column (and a consoleUrl in JSON)', async () => {
    const env = { WORKLEASE_CONSOLE_URL: 'http://127.0.0.1:7420' };
    const r = await run(['ls', url, '--urls'], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^WORK ID\s+STATUS\s+HOLDER\s+TOKEN\s+EXPIRES\s+CHECKPOINT\s+STEP\s+URL$/m);
    expect(r.stdout).toMatch(
      new RegExp(`^jobs/c\\s.*\\shttp://127\\.0\\.0\\.1:7420/c/${consoleId}/lease/jobs%2Fc$`, 'm'),
    );
    const json = await run(['ls', url, '--urls', '--json'], env);
    expect((JSON.parse(json.stdout) as Array<{ consoleUrl: string }>).map((x) => x.consoleUrl)).toEqual([
      `http://127.0.0.1:7420/c/${consoleId}/lease/jobs%2Fa%20b%231`,
      `http://127.0.0.1:7420/c/${consoleId}/lease/jobs%2Fc`,
    ]);
    const without = await run(['ls', url]);
    expect(without.stdout).not.toContain('URL');
  });

  it('refuses --urls without a console and a console URL that is not http(s), before any I/O', async () => {
    const unreachable = 'redis://127.0.0.1:1';
    const noConsole = await run(['ls', unreachable, '--urls']);
    expect(noConsole.code).not.toBe(0);
    expect(noConsole.stderr).toContain('--console-url');
    expect(noConsole.stderr).not.toMatch(/ECONNREFUSED|unavailable/i);
    const bad = await run(['show', unreachable, 'x', '--console-url', 'ftp://host/']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('http:// or https://');
    const notUrl = await run(['ls', unreachable, '--urls', '--console-url', 'not a url']);
    expect(notUrl.stderr).toContain('is not a URL');
  });
});
