/**
 * The console end to end, once per backend: a simulated fleet writes through
 * the real backend (own namespace), the real console service and web server
 * run in-process, and Chromium drives the built renderer by role and name.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectionInfo } from '../src/console/api.ts';
import { hasCode } from '../src/lease/errors.ts';
import type { LeaseBackend, LeaseRecord } from '../src/lease/types.ts';
import {
  type BackendFlavour,
  type ConsoleUnderTest,
  closeAll,
  enc,
  escapeRegExp,
  gone,
  hasText,
  launchChromium,
  type Namespace,
  namespace,
  openNamespace,
  PG_URL,
  shoot,
  startConsole,
  visible,
  watchForRow,
} from './harness.ts';

const TTL = 60_000;
const STUCK_AFTER_MS = 1500;

export function consoleSuite(flavour: BackendFlavour): void {
  describe(`console in Chromium on ${flavour}`, () => {
    let ns: Namespace;
    let backend: LeaseBackend;
    let consoleUt: ConsoleUnderTest;
    let browser: Browser;
    let page: Page;
    let readOnly: ConnectionInfo;
    const records = new Map<string, LeaseRecord>();
    const pageErrors: string[] = [];

    const acquire = async (workId: string, holder: string) => {
      const r = await backend.acquire(workId, holder, TTL);
      records.set(workId, r);
      return r;
    };
    const shot = (name: string) => shoot(page, `${name}-${flavour}`);
    const row = (workId: string) =>
      page.getByRole('row', { name: new RegExp(`\\b${escapeRegExp(workId)}\\b`) });
    const details = () => page.getByRole('complementary', { name: 'Lease details' });

    beforeAll(async () => {
      ns = namespace(flavour, 'ui');
      backend = await openNamespace(ns);
      const json = await acquire('orders/json-1', 'worker-a');
      await backend.checkpoint(
        json,
        enc.encode(
          JSON.stringify({
            order: 42,
            lines: [{ sku: 'A-1', qty: 2 }],
            paid: true,
            note: 'rush',
            'tag\u202E': 'x\u200By',
          }),
        ),
        TTL,
      );
      const bin = await acquire('orders/bin-1', 'worker-b');
      await backend.checkpoint(
        bin,
        Uint8Array.from({ length: 40 }, (_, i) => (i * 37) % 256),
        TTL,
      );
      const big = await acquire('orders/big-1', 'worker-b');
      await backend.checkpoint(big, enc.encode('line of progress text\n'.repeat(5000)), TTL);
      await acquire('orders/victim-1', 'worker-d');
      await acquire('orders/conflict-1', 'worker-e');
      await acquire('orders/stuck-1', 'worker-c');
      for (let i = 0; i < 12; i++) await acquire(`batch/${String(i).padStart(3, '0')}`, `worker-${i % 3}`);
      const gone = await acquire('batch/done', 'worker-z');
      await backend.release(gone);

      consoleUt = await startConsole([
        {
          name: `${flavour}-main`,
          url: ns.consoleUrl,
          environment: 'staging',
          thresholds: { stuckAfterMs: STUCK_AFTER_MS },
        },
        {
          name: `${flavour}-audit`,
          url: ns.consoleUrl,
          readOnly: true,
          environment: 'prod',
          thresholds: { stuckAfterMs: STUCK_AFTER_MS },
        },
        // A backend whose schema was never created: the console must say so, not crash or migrate it.
        {
          name: 'unmigrated',
          url: `${PG_URL}?schema=${ns.options.schema ?? ns.options.keyPrefix}_missing`,
          environment: 'dev',
        },
      ]);
      const [a, b] = consoleUt.service.connections();
      await consoleUt.service.waitLive(a!.id, 20_000);
      readOnly = await consoleUt.service.waitLive(b!.id, 20_000);
      browser = await launchChromium();
      // A context of its own, so a second tab of the same browser (sharing its cookies) can be opened.
      page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
      page.on('pageerror', (e) => pageErrors.push(e.message));
      await page.goto(consoleUt.server.url);
    });

    afterAll(() => closeAll({ browser, consoleUt, backend, ns }));

    it('loads the fleet, keeps the token out of the address bar, and shows a new lease within 1 s', async () => {
      expect(new URL(page.url()).searchParams.has('token')).toBe(false);
      // The first rows of the whole fleet (the table draws the rows in view; later ones scroll in).
      await visible(row('batch/000').first(), 10_000);
      await page.getByRole('tab', { name: new RegExp(`${flavour}-main`) }).click();
      await visible(row('batch/000'));

      // Timed in the page, from before the write to the moment the page drew the row (watchForRow).
      const appeared = await watchForRow(page, 'late/arrival-1');
      await acquire('late/arrival-1', 'worker-late');
      const tookMs = await appeared(1000);
      console.log(`[${flavour}] a lease acquired after load appeared in ${tookMs.toFixed(0)} ms`);
      expect(tookMs).toBeLessThan(1000);
      await visible(row('late/arrival-1'));
      await shot('fleet');
    });

    it('keeps a new tab of the same browser signed in (session cookie, no token in its URL)', async () => {
      const tab = await page.context().newPage();
      try {
        await tab.goto(new URL('/', consoleUt.server.origin).href);
        // Its rows show only if its calls are signed in: all connections first (main and audit read
        // the same backend, so each lease has two rows), then the main connection's tab.
        const batch0 = tab.getByRole('row', { name: /\bbatch\/000\b/ });
        await expect.poll(() => batch0.count(), { timeout: 10_000 }).toBe(2);
        // Every DOM change while the main connection's tab is selected is counted: no frame may draw
        // the audit connection's rows under it while the new view is computed.
        // (A string, as in agreement.e2e.ts: the page runs it as written.)
        await tab.evaluate(`(() => {
          window.mostBatch0 = 0;
          new MutationObserver(() => {
            const tab = document.querySelector('[role=tab][aria-selected=true]');
            if (!tab || !tab.textContent.includes(${JSON.stringify(`${flavour}-main`)})) return;
            const n = [...document.querySelectorAll('tbody tr .c-work')].filter((c) => c.textContent === 'batch/000').length;
            window.mostBatch0 = Math.max(window.mostBatch0, n);
          }).observe(document.body, { childList: true, subtree: true, characterData: true, attributes: true });
        })()`);
        await tab.getByRole('tab', { name: new RegExp(`${flavour}-main`) }).click();
        await visible(batch0);
        expect(await tab.evaluate<number>('window.mostBatch0')).toBe(1);
      } finally {
        await tab.close();
      }
    });

    it('flags a lease that renews without checkpoint progress as stuck', async () => {
      const r = records.get('orders/stuck-1')!;
      await backend.checkpoint(r, enc.encode('{"step":1}'), TTL);
      await new Promise((res) => setTimeout(res, STUCK_AFTER_MS + 200));
      await backend.renew(r, TTL);
      await visible(row('orders/stuck-1').getByText('stuck', { exact: true }), 3000);
      // The count chip is a filter: only stuck rows remain.
      await page.getByRole('button', { name: /^stuck \d+/ }).click();
      await visible(row('orders/stuck-1'));
      await gone(row('orders/json-1'));
      await shot('fleet-stuck-filter');
      await page.getByRole('button', { name: 'Clear filters' }).click();
      await visible(row('orders/json-1'));
    });

    it('shows a JSON checkpoint as a tree and as pretty JSON, a binary one as hex, and pages large ones', async () => {
      await row('orders/json-1').click();
      // The detail says how current heartbeats are: when the console last checked, how often, at what cost.
      await expect
        .poll(() => details().getByTestId('heartbeats-checked').textContent(), { timeout: 5000 })
        .toMatch(/ago .*· every 2 s · the last check read [\d,]+ leases? in \d+ ms$/);
      const body = details().getByRole('region', { name: 'Checkpoint content' });
      await hasText(body, 'order');
      await hasText(body, '42');
      // A key and a string with bidi / zero-width characters show them escaped, never raw.
      await hasText(body, 'tag\\u202E');
      await hasText(body, '"x\\u200By"');
      expect(await body.textContent()).not.toMatch(/[\u202E\u200B]/);
      await shot('detail-json-tree');
      await details().getByRole('radio', { name: 'Pretty JSON' }).check();
      await hasText(body, '"order": 42');
      await hasText(body, '"sku": "A-1"');

      await row('orders/bin-1').click();
      await expect.poll(() => details().getByRole('radio', { name: 'Hex' }).isChecked()).toBe(true);
      await hasText(body, '00000000  00 25 4a 6f 94 b9 de 03');
      await shot('detail-hex');

      await row('orders/big-1').click();
      await hasText(details(), '64.0 KiB of 107.4 KiB');
      await details().getByRole('button', { name: 'Load more' }).click();
      await hasText(details(), '107.4 KiB of 107.4 KiB');
      await gone(details().getByRole('button', { name: 'Load more' }));
    });

    it('force-releases through the typed dialog: the holder is fenced, the row and the audit log show it', async () => {
      const victim = records.get('orders/victim-1')!;
      await row('orders/victim-1').click();
      await details().getByRole('button', { name: 'Force release' }).click();
      const dialog = page.getByRole('dialog', { name: 'Force release this lease?' });
      await visible(dialog);
      await hasText(dialog, `${flavour}-main`);
      await hasText(dialog, 'worker-d');
      await hasText(dialog, victim.fencingToken.toString());
      const confirm = dialog.getByRole('button', { name: 'Force release' });
      await expect.poll(() => confirm.isDisabled()).toBe(true);
      await dialog.getByLabel('Work ID').fill('orders/victim-2');
      await dialog.getByLabel('Reason').fill('worker-d wedged on a poison message (e2e)');
      await expect.poll(() => confirm.isDisabled()).toBe(true);
      await dialog.getByLabel('Work ID').fill('orders/victim-1');
      await expect.poll(() => confirm.isDisabled()).toBe(false);
      await shot('force-release-dialog');
      await confirm.click();
      await gone(dialog);
      await visible(row('orders/victim-1').getByText('force-released', { exact: true }));

      const err = await backend.checkpoint(victim, enc.encode('late write'), TTL).then(
        () => null,
        (e: unknown) => e,
      );
      expect(hasCode(err, 'FENCED')).toBe(true);

      await hasText(details().getByRole('region', { name: 'Audit history' }), 'e2e-operator');
      await page.getByRole('button', { name: 'Audit log' }).click();
      const audit = page.getByRole('table');
      await hasText(audit, 'orders/victim-1');
      await hasText(audit, 'e2e-operator');
      await hasText(audit, 'worker-d wedged on a poison message (e2e)');
      await shot('audit-log');
      await page.getByRole('button', { name: 'Fleet' }).click();
    });

    it('explains a CONFLICT in plain words: force-released, or changed hands, while the dialog was open', async () => {
      const r = records.get('orders/conflict-1')!;
      await row('orders/conflict-1').click();
      await details().getByRole('button', { name: 'Force release' }).click();
      const dialog = page.getByRole('dialog');
      // Another operator acts first, straight on the backend.
      const moved = await backend.admin.forceRelease('orders/conflict-1', {
        expectedToken: r.fencingToken,
        operator: 'someone-else',
        reason: 'raced',
      });
      await dialog.getByLabel('Work ID').fill('orders/conflict-1');
      await dialog.getByLabel('Reason').fill('too late');
      await dialog.getByRole('button', { name: 'Force release' }).click();
      await hasText(
        dialog.getByRole('alert'),
        `The lease was force-released since you opened this dialog: token ${r.fencingToken} is now ${moved.fencingToken}. There is nothing left to release.`,
      );
      // The facts show the lease as read again, not as it was when the dialog opened.
      await visible(dialog.getByText('force-released', { exact: true }));
      await hasText(dialog, `Token now${moved.fencingToken}`);
      await hasText(dialog, '(ended)');
      await shot('force-release-conflict');
      await page.keyboard.press('Escape');
      await gone(page.getByRole('dialog'));

      // A new holder takes it; while the dialog is open on that lease it changes hands again.
      const taken = await acquire('orders/conflict-1', 'worker-f');
      await visible(row('orders/conflict-1').getByText('worker-f'));
      await row('orders/conflict-1').click();
      await details().getByRole('button', { name: 'Force release' }).click();
      await backend.release(taken);
      const again = await acquire('orders/conflict-1', 'worker-g');
      await dialog.getByLabel('Work ID').fill('orders/conflict-1');
      await dialog.getByLabel('Reason').fill('too late again');
      await dialog.getByRole('button', { name: 'Force release' }).click();
      await hasText(
        dialog.getByRole('alert'),
        `The lease changed hands since you opened this dialog: token ${taken.fencingToken} is now ${again.fencingToken}. Review and try again.`,
      );
      await page.keyboard.press('Escape');
      await gone(page.getByRole('dialog'));
    });

    it('offers no force release on a read-only connection, and its API refuses one with FORBIDDEN', async () => {
      await page.getByRole('tab', { name: new RegExp(`${flavour}-audit`) }).click();
      await row('orders/json-1').click();
      await hasText(details(), 'This connection is read-only');
      await gone(page.getByRole('button', { name: 'Force release', exact: true }));
      await shot('detail-read-only');

      const r = records.get('orders/json-1')!;
      const res = await fetch(new URL('/api/call', consoleUt.server.url), {
        method: 'POST',
        headers: { authorization: `Bearer ${consoleUt.server.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          method: 'lease.forceRelease',
          params: {
            connectionId: readOnly.id,
            workId: 'orders/json-1',
            expectedToken: r.fencingToken.toString(),
            reason: 'must be refused',
          },
        }),
      });
      expect(res.status).toBe(403);
      const body = (await res.json()) as { ok: boolean; error?: { code: string } };
      expect(body).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
      expect((await backend.admin.get('orders/json-1'))?.fencingToken).toBe(r.fencingToken);
    });

    it('is driven by the keyboard: / focuses search, arrows and Enter open a lease, Escape closes it', async () => {
      await page.getByRole('tab', { name: new RegExp(`${flavour}-main`) }).click();
      await page.getByRole('button', { name: 'Close details' }).click();
      await page.getByRole('grid', { name: 'Leases' }).focus();
      await page.keyboard.press('/');
      await expect
        .poll(() => page.evaluate('document.activeElement?.getAttribute("aria-label")'))
        .toBe('Search leases');
      await page.keyboard.type('batch/00');
      await gone(page.getByRole('row', { name: /batch\/010/ }));
      await page.getByRole('grid', { name: 'Leases' }).focus();
      await page.keyboard.press('ArrowDown');
      await page.keyboard.press('ArrowDown');
      await page.keyboard.press('Enter');
      await hasText(details(), 'batch/001');
      await page.keyboard.press('Escape');
      await gone(details());
      await page.getByRole('searchbox', { name: 'Search leases' }).fill('');
    });

    it('renders the remaining screens (connections, activity, dark theme) without page errors', async () => {
      await page.getByRole('button', { name: 'Connections' }).click();
      await hasText(page.getByRole('article', { name: `${flavour}-main` }), 'live');
      await hasText(page.getByRole('article', { name: `${flavour}-audit` }), 'read-only');
      const unmigrated = page.getByRole('article', { name: 'unmigrated' });
      await hasText(unmigrated, 'SCHEMA_MISMATCH');
      await hasText(unmigrated, 'worklease migrate');
      await shot('connections');
      await page.getByRole('button', { name: 'Activity' }).click();
      await visible(page.getByRole('img', { name: /Lease events/ }), 15_000);
      await shot('activity');
      await page.emulateMedia({ colorScheme: 'dark' });
      await page.getByRole('button', { name: 'Fleet' }).click();
      await row('orders/stuck-1').click();
      await shot('fleet-dark');
      await page.emulateMedia({ colorScheme: 'light' });
      expect(pageErrors).toEqual([]);
    });
  });
}
