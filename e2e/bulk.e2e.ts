/**
 * Fleet-scale actions end to end on PostgreSQL: bulk force release of the
 * filtered selection (typed count, Ctrl+Enter, a lease that changed hands
 * while the dialog was open refused on its own row, one batch id in the
 * audit), export downloads of the fleet and the audit (CSV and JSON), and the
 * settings page (versions, theme remembered, thresholds edited).
 */
import { readFile } from 'node:fs/promises';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FLEET_COLUMNS } from '../src/console/export.ts';
import type { LeaseBackend, LeaseRecord } from '../src/lease/types.ts';
import {
  type ConsoleUnderTest,
  closeAll,
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

const TTL = 60_000;

describe('fleet-scale actions in Chromium on postgres', () => {
  let ns: Namespace;
  let backend: LeaseBackend;
  let consoleUt: ConsoleUnderTest;
  let browser: Browser;
  let page: Page;
  const records = new Map<string, LeaseRecord>();
  const pageErrors: string[] = [];
  const shot = (name: string) => shoot(page, `${name}-postgres`);

  beforeAll(async () => {
    ns = namespace('postgres', 'bulk');
    backend = await openNamespace(ns);
    for (let i = 0; i < 10; i++) {
      const id = `bulk/${String(i).padStart(3, '0')}`;
      records.set(id, await backend.acquire(id, `worker-${i % 2}`, TTL));
    }
    await backend.acquire('=cmd|"x",y', 'worker-9', TTL);
    const done = await backend.acquire('bulk/released', 'worker-0', TTL);
    await backend.release(done);
    consoleUt = await startConsole([{ name: 'pg-main', url: ns.consoleUrl, environment: 'staging' }], {
      profilesEditable: true,
    });
    await consoleUt.service.waitLive(consoleUt.service.connections()[0]!.id, 20_000);
    browser = await launchChromium();
    const context = await browser.newContext({
      viewport: { width: 1440, height: 900 },
      acceptDownloads: true,
    });
    page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(consoleUt.server.url);
  });

  afterAll(() => closeAll({ browser, consoleUt, backend, ns }));

  it('force-releases what the filters match on the server: counted when opened, typed count, Ctrl+Enter, progress, one batch id', async () => {
    await visible(page.getByRole('row', { name: /bulk\/000/ }), 15_000);
    await page.getByRole('textbox', { name: 'Work ID prefix' }).fill('bulk/');
    await expect
      .poll(() => page.getByTestId('fleet-total').textContent(), { timeout: 10_000 })
      .toMatch(/^11 of 12 leases shown/);
    const open = page.getByRole('button', { name: 'Force release…' });
    await visible(open);
    await shot('bulk-toolbar');
    await open.click();
    // 10 unreleased leases match (bulk/released matches the prefix but has no holder to fence).
    const dialog = page.getByRole('dialog', { name: 'Force release 10 leases?' });
    await visible(dialog, 10_000);
    // bulk/003 changes hands while the operator reads the dialog: still one of the 10 matched.
    const moved = records.get('bulk/003')!;
    await backend.admin.forceRelease(moved.workId, {
      expectedToken: moved.fencingToken,
      operator: 'someone-else',
      reason: 'meanwhile',
    });
    await backend.acquire(moved.workId, 'worker-new', TTL);
    const submit = dialog.getByRole('button', { name: 'Force release 10' });
    await dialog.getByLabel('Number of leases').fill('9');
    await dialog.getByLabel('Reason').fill('zone b lost power (e2e)');
    expect(await submit.isDisabled()).toBe(true);
    await dialog.getByLabel('Number of leases').fill('10');
    await shot('bulk-dialog');
    await dialog.getByLabel('Reason').press('Control+Enter');
    const done = page.getByRole('dialog', { name: 'Force release: 10 released, 0 refused' });
    await visible(done, 15_000);
    await hasText(done.getByRole('region', { name: 'Result per connection' }), '10 of 10');
    await shot('bulk-results');
    await done.getByRole('button', { name: 'Close' }).click();
    await gone(done);

    const audit = await backend.admin.audit({ limit: 100 });
    const batch = audit.filter((e) => e.reason === 'zone b lost power (e2e)');
    expect(batch).toHaveLength(10);
    expect(new Set(batch.map((e) => e.batchId)).size).toBe(1);
    expect(batch[0]!.batchId).toMatch(/^b_/);
    // Nothing unreleased is left under the prefix: the dialog finds nothing to release.
    await expect
      .poll(() => page.getByRole('button', { name: /^live/ }).textContent(), { timeout: 10_000 })
      .toMatch(/live\s*1$/);
  });

  it('refuses a bulk force release whose count moved between the dialog and the confirmation', async () => {
    await page.getByRole('textbox', { name: 'Work ID prefix' }).fill('late/');
    await backend.acquire('late/1', 'worker-0', TTL);
    await expect
      .poll(() => page.getByTestId('fleet-total').textContent(), { timeout: 10_000 })
      .toMatch(/^1 of /);
    await shot('bulk-count-moved-before');
    await page.getByRole('button', { name: 'Force release…' }).click({ timeout: 10_000 });
    const dialog = page.getByRole('dialog', { name: 'Force release 1 leases?' });
    await visible(dialog, 10_000);
    await backend.acquire('late/2', 'worker-0', TTL);
    await dialog.getByLabel('Number of leases').fill('1');
    await dialog.getByLabel('Reason').fill('count moved (e2e)');
    await dialog.getByRole('button', { name: 'Force release 1' }).click();
    await hasText(dialog, '2 leases match the filter now, not the 1 confirmed');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(
      (await backend.admin.audit({ limit: 100 })).filter((e) => e.reason === 'count moved (e2e)'),
    ).toEqual([]);
    // Back to the prefix the export below reads.
    await page.getByRole('textbox', { name: 'Work ID prefix' }).fill('bulk/');
  });

  it('exports the filtered fleet as CSV and JSON, and the audit log', async () => {
    const csv = await downloadText(page, page.getByRole('button', { name: 'Export CSV' }));
    expect(csv.name).toMatch(/^worklease-fleet-.*\.csv$/);
    const lines = csv.text.trimEnd().split('\r\n');
    expect(lines[0]).toBe(FLEET_COLUMNS.join(','));
    // The prefix filter holds: 10 bulk rows plus bulk/released, and not the '=cmd' row.
    expect(lines).toHaveLength(12);
    expect(lines.slice(1).every((l) => l.startsWith('pg-main,bulk/'))).toBe(true);
    const json = await downloadText(page, page.getByRole('button', { name: 'Export JSON' }));
    const rows = JSON.parse(json.text) as Array<{ workId: string; status: string }>;
    expect(rows.map((r) => r.workId).sort()).toEqual(
      [...Array.from({ length: 10 }, (_, i) => `bulk/${String(i).padStart(3, '0')}`), 'bulk/released'].sort(),
    );
    expect(rows.filter((r) => r.status === 'force-released')).toHaveLength(10);
    expect(rows.find((r) => r.workId === 'bulk/003')?.status).toBe('force-released');

    // The formula-looking work id is neutralised and quoted.
    await page.getByRole('textbox', { name: 'Work ID prefix' }).fill('=');
    await visible(page.getByRole('row', { name: /=cmd/ }));
    const risky = await downloadText(page, page.getByRole('button', { name: 'Export CSV' }));
    expect(risky.text.split('\r\n')[1]).toMatch(/^pg-main,"'=cmd\|""x"",y",live,worker-9,/);
    await page.getByRole('button', { name: 'Clear filters' }).click();

    await page.getByRole('button', { name: 'Audit log' }).click();
    await visible(page.getByText('zone b lost power (e2e)').first());
    const auditCsv = await downloadText(page, page.getByRole('button', { name: 'Export CSV' }));
    expect(auditCsv.name).toMatch(/^worklease-audit-.*\.csv$/);
    const batchLines = auditCsv.text.split('\r\n').filter((l) => l.includes('zone b lost power (e2e)'));
    expect(batchLines).toHaveLength(10);
    // The batch id is shown on each entry, and filtering by it leaves the batch alone.
    const batchId = (await backend.admin.audit({ workId: 'bulk/000' }))[0]!.batchId!;
    await page.getByRole('searchbox', { name: 'Filter audit log' }).fill(batchId);
    await expect.poll(() => page.getByRole('row', { name: new RegExp(`batch ${batchId}`) }).count()).toBe(10);
    const filtered = await downloadText(page, page.getByRole('button', { name: 'Export JSON' }));
    expect((JSON.parse(filtered.text) as Array<{ batchId: string }>).map((e) => e.batchId)).toEqual(
      Array(10).fill(batchId),
    );
    await shot('audit-export');
  });

  it('shows versions on the settings page, remembers the theme, and edits thresholds', async () => {
    await page.getByRole('button', { name: 'Settings' }).click();
    const pgSection = page.getByRole('region', { name: /pg-main/ });
    await visible(pgSection);
    const version = await backend.admin.serverVersion();
    await hasText(pgSection, version);
    await hasText(pgSection, 'postgres');
    await hasText(page.getByRole('region', { name: 'About' }), '0.');
    await shot('settings');

    await page.getByRole('radio', { name: 'Dark' }).check();
    expect(await page.evaluate('document.documentElement.dataset.theme')).toBe('dark');
    const bg = await page.evaluate('getComputedStyle(document.documentElement).backgroundColor');
    await shot('settings-dark');
    await page.reload();
    await page.getByRole('button', { name: 'Settings' }).click();
    expect(await page.evaluate('document.documentElement.dataset.theme')).toBe('dark');
    expect(await page.getByRole('radio', { name: 'Dark' }).isChecked()).toBe(true);
    await page.getByRole('radio', { name: 'Light' }).check();
    expect(await page.evaluate('getComputedStyle(document.documentElement).backgroundColor')).not.toBe(bg);
    await page.getByRole('radio', { name: 'System' }).check();
    expect(await page.evaluate('document.documentElement.dataset.theme ?? null')).toBeNull();

    await pgSection.getByLabel('Stuck after (s)').fill('5');
    await pgSection.getByRole('button', { name: 'Save thresholds' }).click();
    await hasText(pgSection, '5 s without a checkpoint');
    expect(consoleUt.service.connections()[0]!.thresholds.stuckAfterMs).toBe(5000);

    // The console's own load on the backend, as /metrics reports it, on the Connections page.
    await page.getByRole('button', { name: 'Connections' }).click();
    const card = page.getByRole('article', { name: 'pg-main' });
    await expect
      .poll(() => card.textContent().then((t) => /console load (?!0 calls)[\d.]+ calls\/s/.test(t ?? '')), {
        timeout: 15_000,
      })
      .toBe(true);
    await shot('connections-load');
    expect(pageErrors).toEqual([]);
  });
});

async function downloadText(page: Page, button: Locator): Promise<{ name: string; text: string }> {
  const [download] = await Promise.all([page.waitForEvent('download', { timeout: 10_000 }), button.click()]);
  const path = await download.path();
  return { name: download.suggestedFilename(), text: await readFile(path, 'utf8') };
}
