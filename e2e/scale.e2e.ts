/**
 * The fleet screen over server views (issue 43), in Chromium, on PostgreSQL and on Redis: the
 * page holds the rows on screen plus a margin, pages and sorts through the console server, keeps
 * every view in its address, and says exactly what a link names when there is no such
 * connection or lease.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LeaseBackend } from '../src/lease/types.ts';
import {
  type BackendFlavour,
  type ConsoleUnderTest,
  closeAll,
  launchChromium,
  type Namespace,
  namespace,
  openNamespace,
  shoot,
  startConsole,
} from './harness.ts';

const LEASES = 2500;
const HOLDERS = 7;
const TTL = 120_000;
const workId = (i: number) => `scale/${String(i).padStart(4, '0')}`;

/** Page code as text: this file is type-checked without the DOM's types. */
const ROWS_JS = `[...document.querySelectorAll('.fleet-table tbody tr')].map((tr) => ({
  work: tr.querySelector('.c-work')?.textContent ?? '',
  holder: tr.querySelector('.c-holder')?.textContent ?? '',
  loading: tr.classList.contains('row-loading'),
}))`;

interface ShownRow {
  work: string;
  holder: string;
  loading: boolean;
}

for (const flavour of ['postgres', 'redis'] as const satisfies readonly BackendFlavour[]) {
  describe(`fleet over server views on ${flavour} (Chromium)`, () => {
    let ns: Namespace;
    let backend: LeaseBackend;
    let consoleUt: ConsoleUnderTest;
    let browser: Browser;
    let page: Page;
    let connId: string;
    const pageErrors: string[] = [];

    const rows = () => page.evaluate<ShownRow[]>(ROWS_JS);
    const totalText = () => page.getByTestId('fleet-total').textContent();
    const go = async (path: string) => {
      await page.goto(new URL(path, consoleUt.server.origin).href);
    };
    const firstRow = async () => (await rows()).find((r) => !r.loading && r.work !== '');

    beforeAll(async () => {
      ns = namespace(flavour, 'scale');
      backend = await openNamespace(ns);
      for (let i = 0; i < LEASES; i += 50) {
        await Promise.all(
          Array.from({ length: Math.min(50, LEASES - i) }, (_, k) =>
            backend.acquire(workId(i + k), `h-${(i + k) % HOLDERS}`, TTL),
          ),
        );
      }
      consoleUt = await startConsole([{ name: `scale-${flavour}`, url: ns.consoleUrl }]);
      connId = consoleUt.service.connections()[0]!.id;
      await consoleUt.service.waitLive(connId, 30_000);
      browser = await launchChromium();
      page = await (await browser.newContext({ viewport: { width: 1400, height: 800 } })).newPage();
      page.on('pageerror', (e) => pageErrors.push(String(e)));
      await page.goto(consoleUt.server.url);
      // Signed in (the token in the address is exchanged for a session) before any other address is opened.
      await page
        .getByTestId('fleet-total')
        .getByText(/leases · whole fleet:$/)
        .waitFor({ timeout: 30_000 });
    }, 180_000);

    afterAll(async () => {
      await closeAll({ browser, consoleUt, backend, ns });
    });

    it('holds only the rows on screen, and pages with the keyboard over server pages', async () => {
      await go(`/c/${encodeURIComponent(connId)}`);
      await expect
        .poll(totalText, { timeout: 20_000 })
        .toBe(`${LEASES.toLocaleString('en-US')} leases · whole fleet:`);
      await expect.poll(async () => (await firstRow())?.work, { timeout: 10_000 }).toBe(workId(0));
      // The DOM holds the screen and the overscan, never 2 500 rows.
      expect((await rows()).length).toBeLessThan(80);
      const grid = page.getByRole('grid', { name: 'Leases' });
      await grid.focus();
      await page.keyboard.press('End');
      await expect
        .poll(async () => (await rows()).some((r) => r.work === workId(LEASES - 1)), { timeout: 10_000 })
        .toBe(true);
      await expect(page.locator('.fleet-table tr.active .c-work').textContent()).resolves.toBe(
        workId(LEASES - 1),
      );
      await shoot(page, `scale-end-${flavour}`);
      await page.keyboard.press('Home');
      await expect.poll(async () => (await firstRow())?.work, { timeout: 10_000 }).toBe(workId(0));
      // PageDown moves a screen at a time; far pages come from the server as the screen reaches them.
      for (let k = 0; k < 5; k++) await page.keyboard.press('PageDown');
      const active = await page.locator('.fleet-table tr.active .c-work').textContent();
      const at = Number(active?.slice('scale/'.length));
      expect(at).toBeGreaterThan(50);
      expect((await rows()).every((r) => r.loading || /^scale\/\d{4}$/.test(r.work))).toBe(true);
      expect(pageErrors).toEqual([]);
    }, 60_000);

    it('sorts on the server, both ways, and the address holds the sort', async () => {
      await go(`/c/${encodeURIComponent(connId)}`);
      await expect.poll(async () => (await firstRow())?.work, { timeout: 10_000 }).toBe(workId(0));
      const holderHead = page.getByRole('button', { name: /^Holder/ });
      await holderHead.click();
      await expect.poll(() => new URL(page.url()).searchParams.get('sort')).toBe('holderId');
      await expect.poll(async () => (await firstRow())?.holder, { timeout: 10_000 }).toBe('h-0');
      await holderHead.click();
      await expect.poll(() => new URL(page.url()).searchParams.get('dir')).toBe('desc');
      await expect.poll(async () => (await firstRow())?.holder, { timeout: 10_000 }).toBe(`h-${HOLDERS - 1}`);
      // Every row drawn is in the server's order: holders never rise going down a descending sort.
      const holders = (await rows()).filter((r) => !r.loading).map((r) => r.holder);
      expect(holders).toEqual([...holders].sort().reverse());
      await page.getByRole('grid', { name: 'Leases' }).focus();
      await page.keyboard.press('End');
      await expect
        .poll(async () => (await rows()).filter((r) => !r.loading).at(-1)?.holder, { timeout: 10_000 })
        .toBe('h-0');
      expect(pageErrors).toEqual([]);
    }, 60_000);

    it('the address round-trips every filter and the sort, through a reload', async () => {
      const path = `/c/${encodeURIComponent(connId)}?q=scale%2F00&status=live&sort=holderId&dir=desc`;
      await go(path);
      const check = async () => {
        await expect.poll(totalText, { timeout: 20_000 }).toBe('100 of 2,500 leases shown · whole fleet:');
        expect(await page.getByRole('searchbox', { name: 'Search leases' }).inputValue()).toBe('scale/00');
        expect(await page.getByRole('button', { name: /^live/ }).getAttribute('aria-pressed')).toBe('true');
        expect(await page.locator('th[data-col="holderId"]').getAttribute('aria-sort')).toBe('descending');
        await expect
          .poll(async () => (await firstRow())?.holder, { timeout: 10_000 })
          .toBe(`h-${HOLDERS - 1}`);
      };
      await check();
      await page.reload();
      await check();
      // Typing goes to the address at once and to the server after a pause.
      await page.getByRole('searchbox', { name: 'Search leases' }).fill('scale/001');
      await expect.poll(() => new URL(page.url()).searchParams.get('q')).toBe('scale/001');
      await expect.poll(totalText, { timeout: 10_000 }).toBe('10 of 2,500 leases shown · whole fleet:');
      await shoot(page, `scale-filtered-${flavour}`);
      expect(pageErrors).toEqual([]);
    }, 60_000);

    it('a link to an unknown connection says so, never "0 leases"', async () => {
      await go('/c/no-such-connection');
      await expect
        .poll(() => page.getByRole('alert').filter({ hasText: 'Unknown connection' }).count())
        .toBe(1);
      expect(await page.locator('body').textContent()).not.toMatch(/0 leases|No leases in this fleet/);
      await shoot(page, `scale-unknown-connection-${flavour}`);
      await go('/c/no-such-connection/lease/scale%2F0001');
      await expect
        .poll(() => page.getByRole('alert').filter({ hasText: 'Unknown connection' }).count())
        .toBe(1);
    }, 30_000);

    it('a link to a lease that never existed says so; one that leaves while open says it left', async () => {
      await go(`/c/${encodeURIComponent(connId)}/lease/${encodeURIComponent('never/was')}`);
      const pane = page.getByRole('complementary', { name: 'Lease details' });
      await expect
        .poll(() => pane.textContent(), { timeout: 10_000 })
        .toContain(`No lease with the work id “never/was” exists on scale-${flavour}.`);
      expect(await pane.textContent()).not.toContain('pruned');
      await shoot(page, `scale-unknown-lease-${flavour}`);
      const id = 'scale/leaving';
      const r = await backend.acquire(id, 'h-x', TTL);
      await go(`/c/${encodeURIComponent(connId)}/lease/${encodeURIComponent(id)}`);
      await expect.poll(() => pane.textContent(), { timeout: 10_000 }).toContain('h-x');
      await backend.release(r);
      await expect
        .poll(() => backend.admin.prune({ olderThanMs: 0 }), { timeout: 10_000 })
        .toBeGreaterThan(0);
      await expect
        .poll(() => pane.textContent(), { timeout: 15_000 })
        .toContain(`The lease “${id}” left the fleet`);
      expect(pageErrors).toEqual([]);
    }, 60_000);
  });
}
