/**
 * The console at operator speed, on PostgreSQL: every view and lease has an
 * address (reload, back/forward, a new tab), and a lease is fenced from page
 * open with the keyboard alone. Keys that are not typing text are counted.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasCode } from '../src/lease/errors.ts';
import type { LeaseBackend, LeaseRecord } from '../src/lease/types.ts';
import {
  type ConsoleUnderTest,
  dropNamespace,
  enc,
  escapeRegExp,
  gone,
  hasText,
  launchChromium,
  type Namespace,
  namespace,
  openNamespace,
  shoot,
  startConsole,
  visible,
} from './harness.ts';

const TTL = 120_000;
/** A long id, as real ones are: typing it is text, not keystrokes to count. */
const TARGET = 'incidents/payments-eu-west-1/reconcile-batch-2026-12-01T09:30';
const HOSTILE = '<img src=x onerror=alert(1)>/../%2e%2e?x=1#y';

describe('console keyboard path and addresses on postgres', () => {
  let ns: Namespace;
  let backend: LeaseBackend;
  let consoleUt: ConsoleUnderTest;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let connId: string;
  const records = new Map<string, LeaseRecord>();
  const pageErrors: string[] = [];
  const dialogs: string[] = [];

  const acquire = async (workId: string, holder: string) => {
    const r = await backend.acquire(workId, holder, TTL);
    records.set(workId, r);
    return r;
  };
  const row = (workId: string) => page.getByRole('row', { name: new RegExp(escapeRegExp(workId)) });
  const details = () => page.getByRole('complementary', { name: 'Lease details' });
  const origin = () => consoleUt.server.origin;
  const leaseUrl = (workId: string) =>
    `${origin()}/c/${encodeURIComponent(connId)}/lease/${encodeURIComponent(workId)}`;

  beforeAll(async () => {
    ns = namespace('postgres', 'kbd');
    backend = await openNamespace(ns);
    const target = await acquire(TARGET, 'worker-pay-7');
    await backend.checkpoint(target, enc.encode('{"batch":9,"done":412}'), TTL);
    for (let i = 0; i < 6; i++) await acquire(`incidents/other-${i}`, `worker-${i}`);
    await acquire(HOSTILE, 'worker-x');
    const bin = await acquire('incidents/bin-1', 'worker-b');
    await backend.checkpoint(
      bin,
      Uint8Array.from({ length: 64 }, (_, i) => (i * 37) % 256),
      TTL,
    );
    const done = await acquire('incidents/done-1', 'worker-z');
    await backend.release(done);
    consoleUt = await startConsole([{ name: 'pg-main', url: ns.consoleUrl, environment: 'prod' }]);
    const [c] = consoleUt.service.connections();
    connId = c!.id;
    await consoleUt.service.waitLive(connId, 20_000);
    browser = await launchChromium();
    // A zone with an offset, so the screenshots show "UTC+1" beside local times.
    context = await browser.newContext({
      viewport: { width: 1400, height: 900 },
      timezoneId: 'Europe/Berlin',
    });
    page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
  });

  afterAll(async () => {
    await browser?.close();
    await consoleUt?.close();
    await backend?.close();
    if (ns !== undefined) await dropNamespace(ns);
  });

  it(`fences a lease from page open in at most 8 non-typing keystrokes`, async () => {
    let keystrokes = 0;
    const press = async (key: string) => {
      keystrokes++;
      await page.keyboard.press(key);
    };
    /** Text typed into a field: the operator's words, not navigation. */
    const type = (text: string) => page.keyboard.type(text);

    await page.goto(consoleUt.server.url);
    await visible(row('incidents/other-0'), 10_000);
    await shoot(page, 'kbd-fleet-1400');

    await press('/');
    await type('reconcile-batch');
    await hasText(page.locator('#fleet-search-hint'), `Enter opens ${TARGET}`);
    await press('Enter');
    await hasText(details(), 'worker-pay-7');
    expect(new URL(page.url()).pathname).toBe(
      `/c/${encodeURIComponent(connId)}/lease/${encodeURIComponent(TARGET)}`,
    );
    expect(await page.title()).toBe(`lease ${TARGET} · fleet · worklease`);
    await shoot(page, 'kbd-lease-1400');

    await press('f');
    const dialog = page.getByRole('dialog', { name: 'Force release this lease?' });
    await visible(dialog);
    const token = records.get(TARGET)!.fencingToken.toString();
    for (const text of [
      'worker-pay-7',
      token,
      'live',
      'Last heartbeat',
      'Last checkpoint',
      'Expires',
      'in ',
    ]) {
      await hasText(dialog, text);
    }
    await shoot(page, 'kbd-dialog-1400');
    // The work id field has focus: the confirmation is typed, then Tab to the reason.
    await type(TARGET);
    await press('Tab');
    await type('holder wedged on a poison message (keyboard e2e)');
    await press('Control+Enter');
    await gone(dialog);

    const toast = page.getByRole('status').filter({ hasText: 'Force-released' });
    await hasText(toast, `Force-released ${TARGET}: new fencing token`);
    const after = await backend.admin.get(TARGET);
    expect(after?.fencingToken).toBeGreaterThan(records.get(TARGET)!.fencingToken);
    await hasText(toast, after!.fencingToken.toString());
    const err = await backend.checkpoint(records.get(TARGET)!, enc.encode('late'), TTL).then(
      () => null,
      (e: unknown) => e,
    );
    expect(hasCode(err, 'FENCED')).toBe(true);
    // Focus is back on the table, on the fenced lease's row.
    await expect.poll(() => page.evaluate('document.activeElement?.getAttribute("role")')).toBe('grid');
    const activeId = await page.evaluate<string | null>(
      'document.activeElement?.getAttribute("aria-activedescendant") ?? null',
    );
    expect(activeId).toBeTruthy();
    expect(await page.locator(`#${activeId}`).textContent()).toContain(TARGET);
    await visible(row(TARGET).getByText('force-released', { exact: true }));
    await shoot(page, 'kbd-toast-1400');

    console.log(`[keyboard] page open to a fenced lease: ${keystrokes} non-typing keystrokes`);
    expect(keystrokes).toBeLessThanOrEqual(8);

    // The toast links the audit entry.
    await toast.getByRole('link', { name: 'Audit entry' }).click();
    expect(new URL(page.url()).pathname).toBe(`/c/${encodeURIComponent(connId)}/audit`);
    await hasText(page.getByRole('table'), 'holder wedged on a poison message (keyboard e2e)');
    expect(await page.title()).toBe('audit log · worklease');
    await page.goBack();
    await hasText(details(), TARGET);
  });

  it('restores view, lease, filters and sort on reload and walks history back and forward', async () => {
    await page.goto(`${origin()}/?q=other-&status=live&sort=holderId&dir=desc`);
    await visible(row('incidents/other-5'), 10_000);
    expect(await page.getByRole('searchbox', { name: 'Search leases' }).inputValue()).toBe('other-');
    expect(await page.getByRole('button', { name: /^live \d+/ }).getAttribute('aria-pressed')).toBe('true');
    await gone(row('incidents/done-1'));
    // Sorted by holder, descending.
    await hasText(page.getByRole('row').nth(1), 'worker-5');

    await row('incidents/other-3').click();
    await hasText(details(), 'worker-3');
    const leaseAddress = page.url();
    expect(new URL(leaseAddress).searchParams.get('sort')).toBe('holderId');
    await page.reload();
    await hasText(details(), 'worker-3');
    expect(await page.getByRole('searchbox', { name: 'Search leases' }).inputValue()).toBe('other-');

    await page.getByRole('button', { name: 'Connections' }).click();
    expect(new URL(page.url()).pathname).toBe('/connections');
    expect(await page.title()).toBe('connections · worklease');
    await page.goBack();
    await hasText(details(), 'worker-3');
    expect(page.url()).toBe(leaseAddress);
    await page.goBack();
    await gone(details());
    await page.goForward();
    await hasText(details(), 'worker-3');
    await page.goForward();
    expect(new URL(page.url()).pathname).toBe('/connections');
  });

  it('opens a pasted lease link in a new tab of the same browser, hostile work ids as plain text', async () => {
    const tab = await context.newPage();
    tab.on('pageerror', (e) => pageErrors.push(e.message));
    try {
      await tab.goto(leaseUrl(HOSTILE));
      const pane = tab.getByRole('complementary', { name: 'Lease details' });
      await expect
        .poll(() => pane.textContent().then((t) => t ?? ''), { timeout: 10_000 })
        .toContain('worker-x');
      expect(await pane.getByRole('heading', { level: 2 }).textContent()).toContain(HOSTILE);
      expect(await tab.title()).toBe(`lease ${HOSTILE} · fleet · worklease`);
      expect(await tab.locator('img').count()).toBe(0);
      await tab.goto(
        `${origin()}/c/${encodeURIComponent(connId)}/lease/${encodeURIComponent('incidents/other-1')}`,
      );
      await expect
        .poll(() => pane.textContent().then((t) => t ?? ''), { timeout: 10_000 })
        .toContain('worker-1');
    } finally {
      await tab.close();
    }
    expect(dialogs).toEqual([]);
  });

  it('does not offer force release on a released lease: the button says why, so does f', async () => {
    await page.goto(leaseUrl('incidents/done-1'));
    await hasText(details(), 'worker-z');
    const button = details().getByRole('button', { name: 'Force release' });
    expect(await button.isDisabled()).toBe(true);
    await hasText(details(), 'Force release is not offered: this lease is released');
    await page.getByRole('grid', { name: 'Leases' }).focus();
    await page.keyboard.press('f');
    await hasText(details().getByRole('status'), 'Force release is not offered: this lease is released');
    expect(await page.getByRole('dialog').count()).toBe(0);
  });

  it('keeps the sort header to one tab stop, moved with the arrows; Enter with several matches opens the first', async () => {
    await page.goto(`${origin()}/`);
    const grid = page.getByRole('grid', { name: 'Leases' });
    await visible(row('incidents/other-0'), 10_000);
    await grid.focus();
    await page.keyboard.press('Tab');
    const focused = () => page.evaluate<string>('document.activeElement?.textContent ?? ""');
    expect(await focused()).toMatch(/^Work ID/);
    await page.keyboard.press('ArrowRight');
    expect(await focused()).toMatch(/^Status/);
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.classList.contains("sort")')).toBe(false);

    await page.keyboard.press('/');
    await page.keyboard.type('other-');
    await hasText(page.locator('#fleet-search-hint'), 'Enter opens the first of 6: incidents/other-0');
    await page.keyboard.press('Enter');
    await hasText(details(), 'worker-0');
  });

  it('lists the shortcuts with ?, and shows times in Local, UTC or relative with the zone, remembered', async () => {
    await page.goto(leaseUrl('incidents/other-2'));
    await hasText(details(), 'worker-2');
    await page.getByRole('grid', { name: 'Leases' }).focus();
    await page.keyboard.press('?');
    const help = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
    await visible(help);
    await hasText(help, 'Force release the open lease');
    await shoot(page, 'kbd-shortcuts-1400');
    await page.keyboard.press('Escape');
    await gone(help);

    const acquiredRow = details().locator('dd').filter({ hasText: / ago/ }).first();
    await page.getByText('UTC', { exact: true }).click();
    await hasText(acquiredRow, ' UTC (');
    await page.getByText('Local', { exact: true }).click();
    await hasText(acquiredRow, ' UTC+1 (');
    await shoot(page, 'kbd-time-local-1400');
    await page.getByText('UTC', { exact: true }).click();
    await page.reload();
    await hasText(details(), 'worker-2');
    expect(await page.getByRole('radio', { name: 'UTC' }).isChecked()).toBe(true);
    await hasText(row('incidents/other-2'), ' UTC');
    await shoot(page, 'kbd-time-utc-1400');
    await page.getByText('Relative', { exact: true }).click();
    await hasText(row('incidents/other-2'), 'in ');
  });

  it('copies work id, holder, token and checkpoint bytes (clipboard API, and the fallback without it)', async () => {
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: origin() });
    await page.goto(leaseUrl('incidents/bin-1'));
    await hasText(details(), 'worker-b');
    const clipboard = () => page.evaluate<string>('navigator.clipboard.readText()');
    await details().getByRole('button', { name: 'Copy work id' }).click();
    await expect.poll(clipboard).toBe('incidents/bin-1');
    await details().getByRole('button', { name: 'Copy holder' }).click();
    await expect.poll(clipboard).toBe('worker-b');
    await details().getByRole('button', { name: 'Copy token' }).click();
    await expect.poll(clipboard).toBe(records.get('incidents/bin-1')!.fencingToken.toString());
    const bytes = Buffer.from(Uint8Array.from({ length: 64 }, (_, i) => (i * 37) % 256));
    await details().getByRole('button', { name: 'Copy hex of the checkpoint' }).click();
    await expect.poll(clipboard).toBe(bytes.toString('hex'));
    await details().getByRole('button', { name: 'Copy base64 of the checkpoint' }).click();
    await expect.poll(clipboard).toBe(bytes.toString('base64'));
    // A page where the Clipboard API refuses: the textarea fallback still copies.
    await page.evaluate('navigator.clipboard.writeText = () => Promise.reject(new Error("denied"))');
    await details().getByRole('button', { name: 'Copy work id' }).click();
    await expect.poll(clipboard).toBe('incidents/bin-1');
    await hasText(details(), 'Copied');
  });

  it('hides and resizes columns, remembered in this browser; Work ID and Status cannot be hidden', async () => {
    await page.goto(`${origin()}/`);
    await visible(row('incidents/other-0'), 10_000);
    await page.getByText('Columns', { exact: true }).click();
    const menu = page.getByRole('group', { name: 'Columns shown' });
    expect(await menu.getByRole('checkbox', { name: 'Work ID' }).count()).toBe(0);
    expect(await menu.getByRole('checkbox', { name: 'Status' }).count()).toBe(0);
    await menu.getByRole('checkbox', { name: 'Token' }).uncheck();
    await gone(page.getByRole('columnheader', { name: 'Token' }));
    const expires = page.getByRole('columnheader', { name: 'Expires' });
    const before = (await expires.boundingBox())!.width;
    const handle = expires.locator('.col-resize');
    const box = (await handle.boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + 120, box.y + box.height / 2, { steps: 4 });
    await page.mouse.up();
    await expect.poll(async () => (await expires.boundingBox())!.width).toBeGreaterThan(before + 60);
    await page.reload();
    await visible(row('incidents/other-0'), 10_000);
    expect(await page.getByRole('columnheader', { name: 'Token' }).count()).toBe(0);
    expect((await expires.boundingBox())!.width).toBeGreaterThan(before + 60);
    await page.getByText('Columns', { exact: true }).click();
    await menu.getByRole('button', { name: 'Reset columns' }).click();
    await visible(page.getByRole('columnheader', { name: 'Token' }));
    await page.getByText('Columns', { exact: true }).click();
  });

  it('keeps Work ID, Status and Expires in sight at 800 px, the detail as an overlay', async () => {
    await page.setViewportSize({ width: 800, height: 900 });
    await page.goto(`${origin()}/`);
    await visible(row('incidents/other-0'), 10_000);
    await shoot(page, 'kbd-fleet-800');
    const inView = async (name: string) => {
      const box = await page.getByRole('columnheader', { name }).boundingBox();
      return box !== null && box.x >= 0 && box.x + box.width <= 800;
    };
    for (const name of ['Work ID', 'Status', 'Expires']) expect(await inView(name), name).toBe(true);
    // Tabbing into the header does not scroll Work ID away.
    await page.getByRole('grid', { name: 'Leases' }).focus();
    await page.keyboard.press('Tab');
    for (let i = 0; i < 6; i++) await page.keyboard.press('ArrowRight');
    expect(await inView('Work ID')).toBe(true);
    expect(await inView('Status')).toBe(true);
    expect(await page.evaluate<number>('document.querySelector(".fleet-table").scrollLeft')).toBeGreaterThan(
      0,
    );
    await shoot(page, 'kbd-fleet-800-scrolled');

    await page.goto(leaseUrl('incidents/other-4'));
    await hasText(details(), 'worker-4');
    const pane = await details().boundingBox();
    expect(pane?.width).toBeGreaterThan(500);
    await shoot(page, 'kbd-lease-800');
    await details().getByRole('button', { name: 'Force release' }).click();
    await visible(page.getByRole('dialog', { name: 'Force release this lease?' }));
    await shoot(page, 'kbd-dialog-800');
    await page.keyboard.press('Escape');
    await page.keyboard.press('?');
    await visible(page.getByRole('dialog', { name: 'Keyboard shortcuts' }));
    await shoot(page, 'kbd-shortcuts-800');
    await page.keyboard.press('Escape');
    await gone(page.getByRole('dialog'));
    await page.getByText('UTC', { exact: true }).click();
    await hasText(row('incidents/other-4'), ' UTC');
    await shoot(page, 'kbd-time-utc-800');
    await page.getByText('Relative', { exact: true }).click();

    // The hex dump's text column fits the overlay: nothing of it is cut.
    await page.goto(leaseUrl('incidents/bin-1'));
    await expect.poll(() => details().getByRole('radio', { name: 'Hex' }).isChecked()).toBe(true);
    const body = details().getByRole('region', { name: 'Checkpoint content' });
    await hasText(body, '|');
    const fits = await page.evaluate<boolean>(
      '(() => { const el = document.querySelector(".checkpoint-body"); return el.scrollWidth <= el.clientWidth; })()',
    );
    expect(fits).toBe(true);
    await shoot(page, 'kbd-hex-800');
    await page.setViewportSize({ width: 1400, height: 900 });
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
