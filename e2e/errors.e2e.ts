/**
 * One message per error state, in Chromium, each with a screenshot: no or a wrong access token
 * (the sign-in screen and nothing else), an unmigrated schema (the exact migrate command, no
 * empty-fleet text), an unknown database, an unknown role, refused credentials, and a one-off
 * connection test (that test's result, not "keeps retrying").
 */
import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, type RedisServer, startRedisServer } from '../src/chaos/servers.ts';
import {
  type ConsoleUnderTest,
  dropNamespace,
  launchChromium,
  namespace,
  openNamespace,
  PG_URL,
  shoot,
  startConsole,
} from './harness.ts';

/** What the page says, as an operator reads it (collapsed "Details" included, as textContent does). */
const bodyText = (page: Page) => page.evaluate<string>('document.body.innerText');

describe('one message per error state (Chromium)', () => {
  let browser: Browser;
  let consoleUt: ConsoleUnderTest;
  let redis: RedisServer;
  const missingSchema = `e2e_missing_${randomBytes(4).toString('hex')}`;
  const noDb = new URL(PG_URL);
  noDb.pathname = `/e2e_no_such_db_${randomBytes(3).toString('hex')}`;
  const noRole = new URL(PG_URL);
  noRole.username = `e2e_no_such_role_${randomBytes(3).toString('hex')}`;
  const pageErrors: string[] = [];
  const reachable = namespace('postgres', 'errors');

  beforeAll(async () => {
    // A private redis-server that requires a password the console is not given.
    redis = await startRedisServer({ args: ['--requirepass', randomBytes(12).toString('hex')] });
    await (await openNamespace(reachable)).close();
    consoleUt = await startConsole(
      [
        { name: 'unmigrated', url: `${PG_URL}?schema=${missingSchema}` },
        { name: 'no-such-db', url: noDb.toString() },
        { name: 'no-such-role', url: noRole.toString() },
        { name: 'wrong-password', url: `redis://127.0.0.1:${redis.port}` },
      ],
      { profilesEditable: true },
    );
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await consoleUt?.close();
    await redis?.stop();
    await dropNamespace(reachable);
  });

  const open = async (url: string) => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 760 } });
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    await page.goto(url);
    return page;
  };

  it('no token, then a wrong one: the sign-in screen asks for the token and nothing else', async () => {
    const origin = new URL(consoleUt.server.url).origin;
    const page = await open(`${origin}/`);
    const form = page.getByRole('form', { name: 'Sign in' });
    await form.waitFor({ timeout: 10_000 });
    const text = await bodyText(page);
    expect(text).toContain('Sign in to the worklease console');
    for (const other of ['Reconnecting', 'No leases', 'FORBIDDEN', 'read-only', 'Fleet', 'refused']) {
      expect(text).not.toContain(other);
    }
    await shoot(page, 'error-sign-in');
    // A wrong token: the same screen, saying only that the token was refused.
    await page.getByLabel('Access token').fill('not-the-token-at-all');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('The token this page had was refused.').waitFor({ timeout: 10_000 });
    expect(await bodyText(page)).not.toContain('Reconnecting');
    await shoot(page, 'error-sign-in-refused');
    // The right one: the console.
    await page.getByLabel('Access token').fill(consoleUt.server.token ?? '');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Views' }).waitFor({ timeout: 10_000 });
    expect(new URL(page.url()).searchParams.has('token')).toBe(false);
    await page.close();
  });

  const fleetOf = async (name: string) => {
    const page = await open(consoleUt.server.url);
    await page.getByRole('tab', { name: new RegExp(`^${name}`) }).click();
    await page.getByRole('alert').first().waitFor({ timeout: 20_000 });
    return page;
  };

  it('unmigrated schema: the exact migrate command with its --schema flag, no empty-fleet text', async () => {
    const page = await fleetOf('unmigrated');
    const command = `worklease migrate ${PG_URL}`;
    // The command to run, in its own code block (the collapsed Details repeat the server's error).
    await page.locator('code.command', { hasText: `--schema ${missingSchema}` }).waitFor({ timeout: 10_000 });
    const text = await bodyText(page);
    expect(text).toContain(`${command} --schema ${missingSchema}`);
    expect(text).not.toContain('No leases in this fleet yet');
    expect(text).not.toContain('whole fleet');
    await shoot(page, 'error-unmigrated');
    await page.close();
  });

  for (const [name, words] of [
    ['no-such-db', 'Unknown database: the database named in the URL does not exist on this server.'],
    ['no-such-role', 'Unknown role: the server has no such user'],
    ['wrong-password', 'Authentication failed: the backend refused these credentials.'],
  ] as const) {
    it(`${name}: says so in words`, async () => {
      const page = await fleetOf(name);
      await page.getByText(words).waitFor({ timeout: 20_000 });
      const text = await bodyText(page);
      expect(text).not.toContain('No leases in this fleet yet');
      expect(text).not.toContain('keeps retrying');
      await shoot(page, `error-${name}`);
      await page.close();
    });
  }

  it("a one-off connection test reports that test's result, not the console's retrying", async () => {
    const page = await open(consoleUt.server.url);
    await page.getByRole('button', { name: 'Connections' }).click();
    await page.getByRole('button', { name: 'Add connection' }).click();
    const form = page.getByRole('form', { name: 'New connection' });
    await form.getByLabel('Name').fill('nowhere');
    await form.getByLabel('Backend URL').fill(`redis://127.0.0.1:${await freePort()}`);
    await form.getByRole('button', { name: 'Test connection' }).click();
    const result = form.getByRole('alert');
    await result.getByText('The test could not reach the backend at this URL.').waitFor({ timeout: 20_000 });
    expect(await result.textContent()).not.toContain('keeps retrying');
    await shoot(page, 'error-connection-test');
    // And a test that reaches its backend says that.
    await form.getByLabel('Backend URL').fill(reachable.consoleUrl);
    await form.getByRole('button', { name: 'Test connection' }).click();
    await form
      .getByRole('status')
      .getByText(/Reached postgres in \d+ ms/)
      .waitFor({ timeout: 20_000 });
    await page.close();
    expect(pageErrors).toEqual([]);
  });
});
