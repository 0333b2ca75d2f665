/**
 * The Groups view in Chromium: a consumer group of real `joinGroup` members on PostgreSQL,
 * shown balanced; one member leaves and the view shows the others taking its work items
 * over, the departed member "gone", and the group balanced again.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DemoGroup, startDemoGroup } from '../src/demo/group.ts';
import type { LeaseBackend } from '../src/lease/types.ts';
import {
  type ConsoleUnderTest,
  dropNamespace,
  launchChromium,
  type Namespace,
  namespace,
  openNamespace,
  shoot,
  startConsole,
} from './harness.ts';

describe('groups view (Chromium, postgres)', () => {
  let ns: Namespace;
  let backend: LeaseBackend;
  let group: DemoGroup;
  let consoleUt: ConsoleUnderTest;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    ns = namespace('postgres', 'groups');
    backend = await openNamespace(ns);
    group = await startDemoGroup(backend, {
      group: 'orders',
      members: 3,
      partitions: 6,
      ttlMs: 4000,
      tickMs: 300,
      cycleMs: 0,
      prefix: 'e2e/',
      holderPrefix: 'consumer-',
    });
    consoleUt = await startConsole([{ name: 'groups', url: ns.consoleUrl }]);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    await page.goto(consoleUt.server.url);
  });
  afterAll(async () => {
    await browser?.close();
    await consoleUt?.close();
    await group?.stop();
    await backend?.close();
    if (ns !== undefined) await dropNamespace(ns);
  });

  const card = () => page.getByRole('region', { name: 'Group orders' });

  it('shows each member and what it holds, balanced', async () => {
    await page
      .getByRole('button', { name: 'Groups', exact: true })
      .or(page.getByRole('link', { name: 'Groups', exact: true }))
      .first()
      .click();
    await card()
      .getByText('3 live members hold 6 work items · balanced: 2 each')
      .waitFor({ timeout: 20_000 });
    for (const m of ['consumer-1', 'consumer-2', 'consumer-3']) {
      const cells = card()
        .getByRole('row', { name: new RegExp(`^${m}\\b`) })
        .getByRole('cell');
      // A row whose expiry passed since the last heartbeat check (every 2 s) reads "live · due,
      // awaiting heartbeat check" until the next one: wait longer than a check interval.
      await expect
        .poll(() => cells.allTextContents(), { timeout: 5000 })
        .toEqual([
          m,
          expect.stringMatching(/^live · runs out in \d+ s$/),
          '2',
          expect.stringMatching(/^e2e\/orders-p\d\d, e2e\/orders-p\d\d$/),
        ]);
    }
    await shoot(page, 'groups-balanced');
  });

  it('a member leaves: the others take its items over and the group is balanced again', async () => {
    const leaving = group.members().find((m) => m.holderId === 'consumer-3');
    expect(leaving).toBeDefined();
    await leaving!.leave();
    await card()
      .getByText('2 live members hold 6 work items · balanced: 3 each')
      .waitFor({ timeout: 20_000 });
    const gone = card()
      .getByRole('row', { name: /^consumer-3\b/ })
      .getByRole('cell');
    // The departure's age is judged at the last heartbeat check (every 2 s), so between two checks
    // it may still read in milliseconds.
    await expect
      .poll(() => gone.allTextContents(), { timeout: 5000 })
      .toEqual(['consumer-3', expect.stringMatching(/^gone · \d+ (ms|s) ago$/), '0', '']);
    await shoot(page, 'groups-after-leave');
    expect(pageErrors).toEqual([]);
  });
});
