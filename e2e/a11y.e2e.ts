/**
 * Every screen of the console through axe-core, at 1400 and 800 px wide, in the light and the dark
 * colour scheme: zero violations, or the rule, its impact and the offending nodes. With
 * WORKLEASE_SCREENSHOTS=1 (`npm run screenshots`) the same visits write docs/screenshots/.
 *
 * The screens are one table (SCREENS): a new screen is one entry, visited at each width and checked
 * there in each colour scheme.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { encode as msgpackEncode } from '@msgpack/msgpack';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, startRedisServer } from '../src/chaos/servers.ts';
import { type DemoGroup, startDemoGroup } from '../src/demo/group.ts';
import { openBackend } from '../src/index.ts';
import type { LeaseBackend } from '../src/lease/types.ts';
import {
  type ConsoleUnderTest,
  dropNamespace,
  enc,
  launchChromium,
  type Namespace,
  namespace,
  PG_URL,
  startConsole,
} from './harness.ts';
import { bigExport, protoBatch } from './payloads.ts';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const SHOTS = process.env.WORKLEASE_SCREENSHOTS === '1';
const SHOT_DIR = fileURLToPath(new URL('../docs/screenshots', import.meta.url));
const TTL = 10 * 60_000;
const MAIN = 'prod-orders';

interface Screen {
  /** File-name stem and test name: `<name>-<width>-<scheme>.png`. */
  name: string;
  /** Opened on a page that has no console session (the sign-in screen). */
  signedOut?: boolean;
  /** A path to open once signed in (a route of its own), instead of the console's start page. */
  path?: string;
  /**
   * Which screenshots it gets: every screen at 1400 px light and dark; 'narrow' adds 800 px light
   * (where the layout differs most), 'none' takes none (a near twin of another screen's: the
   * pictures stay under about 3 MB together).
   */
  shots?: 'narrow' | 'none';
  /** Brings the page to the screen and waits until its data has settled. */
  open(page: Page): Promise<void>;
}

const tab = (page: Page, name: string) => page.getByRole('tab', { name: new RegExp(`^${name}`) });
const row = (page: Page, workId: string) => page.getByRole('row', { name: new RegExp(`\\b${workId}\\b`) });
const details = (page: Page) => page.getByRole('complementary', { name: 'Lease details' });
const view = (page: Page, name: string) =>
  page.getByRole('navigation', { name: 'Views' }).getByRole('button', { name });

async function hasText(loc: Locator, text: string, timeout = 15_000): Promise<void> {
  await expect.poll(() => loc.textContent().then((t) => t ?? ''), { timeout }).toContain(text);
}

/** A connection's fleet tab, then (if given) waits for `until` to show, and for `text` in it. */
async function inFleet(page: Page, connection: string, until?: Locator, text?: string): Promise<void> {
  await tab(page, connection).click({ timeout: 15_000 });
  if (until !== undefined) await until.first().waitFor({ timeout: 20_000 });
  if (until !== undefined && text !== undefined) await hasText(until.first(), text);
}

/** A view of the navigation, then waits for `until` to show, and for `text` in it. */
async function inView(page: Page, name: string, until: Locator, text?: string): Promise<void> {
  await view(page, name).click();
  await until.first().waitFor({ timeout: 20_000 });
  if (text !== undefined) await hasText(until.first(), text);
}

/** A lease of the main connection in the detail pane, its checkpoint showing `text`. */
async function withLease(page: Page, workId: string, text: string): Promise<void> {
  await inFleet(page, MAIN, row(page, workId));
  await openLease(page, workId);
  await hasText(details(page).getByRole('region', { name: 'Checkpoint content' }), text);
}

/**
 * A lease of the main connection opened by its address (as a pasted link would), its checkpoint
 * showing `text`: the decoded views' leases sort after the others, out of view at 800 px.
 */
async function leaseByAddress(page: Page, workId: string, text: string): Promise<void> {
  await tab(page, MAIN).click({ timeout: 15_000 });
  await expect.poll(() => new URL(page.url()).pathname, { timeout: 15_000 }).toMatch(/^\/c\/[^/]+$/);
  const url = new URL(page.url());
  url.pathname = `${url.pathname}/lease/${encodeURIComponent(workId)}`;
  await page.goto(url.href);
  await hasText(details(page).getByRole('region', { name: 'Checkpoint content' }), text);
}

/** Clicks the lease's row until the detail pane shows it. */
async function openLease(page: Page, workId: string): Promise<void> {
  // The group's members come and go, so a row can move under the pointer and the click open another
  // lease: click until it is this one. At 800 px the detail pane is an overlay that then covers the
  // table, and a click on a covered row waits for the row to be clickable; so a wrong lease is
  // closed first (Escape), and each click gives up after a while instead of outlasting the poll.
  // No wait for a pane that is not there: the poll comes back for it.
  const shown = async (): Promise<string> =>
    (await details(page).count()) === 0
      ? ''
      : ((await details(page)
          .textContent({ timeout: 1000 })
          .catch(() => '')) ?? '');
  await expect
    .poll(
      async () => {
        const before = await shown();
        if (before.includes(`Lease ${workId}`)) return before;
        if (before !== '') await page.keyboard.press('Escape');
        await row(page, workId)
          .first()
          .click({ timeout: 3000 })
          .catch(() => {});
        return shown();
      },
      { timeout: 15_000 },
    )
    .toContain(`Lease ${workId}`);
}

async function forceReleaseDialog(page: Page): Promise<void> {
  await withLease(page, 'orders/text-1', 'step 3 of 7');
  await details(page).getByRole('button', { name: 'Force release' }).click();
  const dialog = page.getByRole('dialog', { name: 'Force release this lease?' });
  await dialog.getByLabel('Reason').fill('worker wedged on a poison message');
}

/** The activity of the main connection (the read-only one reads the same backend: "All" counts it twice). */
async function activity(page: Page): Promise<void> {
  await inView(page, 'Activity', page.getByRole('img', { name: /Lease events/ }));
  await page
    .getByRole('combobox', { name: 'Connection', exact: true })
    .selectOption({ label: `${MAIN} (prod)` });
  await page.getByRole('img', { name: /Force releases 3$/ }).waitFor({ timeout: 20_000 });
}

/** Every screen the console has, one line each. */
// biome-ignore format: one screen per line
const SCREENS: Screen[] = [
  { name: 'fleet', shots: 'narrow', open: (p) => inFleet(p, MAIN, row(p, 'orders/text-1')) },
  { name: 'fleet-detail-text', shots: 'none', open: (p) => withLease(p, 'orders/text-1', 'step 3 of 7') },
  { name: 'fleet-detail-json', shots: 'none', open: (p) => withLease(p, 'orders/json-1', 'sku') },
  { name: 'fleet-detail-hex', open: (p) => withLease(p, 'orders/blob-1', '00000000  00 25 4a 6f') },
  { name: 'fleet-detail-protobuf', shots: 'narrow', open: (p) => leaseByAddress(p, 'payloads/proto-1', 'eu-west/7').then(() => details(p).getByRole('tree', { name: 'Decoded checkpoint' }).scrollIntoViewIfNeeded()) },
  { name: 'fleet-detail-msgpack', shots: 'none', open: (p) => leaseByAddress(p, 'payloads/msgpack-1', 'A-1') },
  { name: 'fleet-detail-large-json', shots: 'narrow', open: (p) => leaseByAddress(p, 'payloads/export-1', 'rows').then(() => details(p).getByRole('searchbox', { name: 'Search in checkpoint' }).fill('SKU-043210')).then(() => p.keyboard.press('Enter')).then(() => details(p).getByRole('button', { name: '/rows/43210/sku' }).click()).then(() => hasText(details(p).getByRole('region', { name: 'Checkpoint content' }), 'SKU-043210')) },
  { name: 'fleet-detail-undecodable', shots: 'none', open: (p) => leaseByAddress(p, 'payloads/corrupt-1', '00000000  1f 8b 08').then(() => hasText(details(p), 'Could not decode: gzip data is corrupt')) },
  { name: 'fleet-detail-read-only', shots: 'none', open: (p) => inFleet(p, 'audit-readonly', row(p, 'orders/text-1')).then(() => openLease(p, 'orders/text-1')).then(() => hasText(details(p), 'This connection is read-only')) },
  { name: 'force-release', open: forceReleaseDialog },
  { name: 'request-release', shots: 'none', open: (p) => withLease(p, 'orders/text-1', 'step 3 of 7').then(() => details(p).getByRole('button', { name: 'Request release' }).click()).then(() => p.getByRole('dialog', { name: 'Request release of this lease?' }).getByLabel('Reason').fill('draining node 7')) },
  { name: 'audit', open: (p) => inView(p, 'Audit log', p.getByRole('table'), 'drained before the deploy') },
  { name: 'activity', open: activity },
  { name: 'activity-numbers', shots: 'none', open: (p) => activity(p).then(() => p.getByText('Show the numbers').click()) },
  { name: 'connection-form', open: (p) => inView(p, 'Connections', p.getByRole('button', { name: 'Add connection' })).then(() => p.getByRole('button', { name: 'Add connection' }).click()).then(() => p.getByRole('form', { name: 'New connection' }).waitFor()) },
  { name: 'groups', open: (p) => inView(p, 'Groups', p.getByRole('region', { name: 'Group orders' }), 'balanced') },
  { name: 'connections', shots: 'none', open: (p) => inView(p, 'Connections', p.getByRole('article', { name: 'staging-unmigrated' }), 'worklease migrate') },
  { name: 'error-unmigrated', open: (p) => inFleet(p, 'staging-unmigrated', p.locator('code.command'), '--schema') },
  { name: 'error-no-such-db', open: (p) => inFleet(p, 'dev-no-such-db', p.getByText('Unknown database')) },
  { name: 'stale-backend-down', open: (p) => inFleet(p, 'cache-down', p.locator('.stale-note'), 'as of') },
  { name: 'settings', open: (p) => inView(p, 'Settings', p.getByRole('heading', { name: 'About' })) },
  { name: 'shortcuts', shots: 'none', open: (p) => inFleet(p, MAIN, row(p, 'orders/text-1')).then(() => p.keyboard.press('?')).then(() => p.getByRole('dialog', { name: 'Keyboard shortcuts' }).waitFor()) },
  { name: 'bulk-force-release', open: (p) => inFleet(p, MAIN, row(p, 'orders/text-1')).then(() => p.getByLabel('Work ID prefix').fill('orders/')).then(() => p.getByRole('button', { name: 'Force release…' }).click()).then(() => p.getByRole('dialog', { name: /^Force release \d+ leases\?$/ }).waitFor()) },
  { name: 'sign-in', signedOut: true, open: (p) => p.getByRole('form', { name: 'Sign in' }).waitFor({ timeout: 15_000 }) },
];

const WIDTHS = [1400, 800] as const;
const SCHEMES = ['light', 'dark'] as const;
/** Whether a visit writes a screenshot (see Screen.shots); the total stays under 3 MB. */
const shotOf = (screen: Screen, width: number, scheme: (typeof SCHEMES)[number]) =>
  screen.shots !== 'none' && (width === 1400 || (screen.shots === 'narrow' && scheme === 'light'));

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string; summary: string }>;
}

async function axe(page: Page): Promise<Violation[]> {
  if (!(await page.evaluate('typeof window.axe !== "undefined"'))) {
    // Evaluated, not added as a <script>: the console's Content-Security-Policy refuses inline scripts.
    await page.evaluate(AXE_SOURCE);
  }
  // A string, not a function: this file is compiled without the DOM's types.
  return page.evaluate<Violation[]>(`axe.run(document, { resultTypes: ['violations'] }).then((r) =>
    r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target.join(' '), summary: n.failureSummary ?? '' })),
    })))`);
}

function report(where: string, violations: Violation[]): string {
  return violations
    .map(
      (v) =>
        `${where}: ${v.id} (${v.impact}) ${v.help}\n${v.nodes
          .map((n) => `    ${n.target}\n      ${n.summary.replace(/\n/g, '\n      ')}`)
          .join('\n')}`,
    )
    .join('\n');
}

/** Screenshots that do not change from one run to the next for no reason: no caret, no animation. */
const STEADY_CSS =
  '*, *::before, *::after { caret-color: transparent !important; transition: none !important; animation: none !important; }';

describe('every screen has zero axe-core violations (1400 px, 800 px, light and dark)', () => {
  let ns: Namespace;
  let backend: LeaseBackend;
  let redis: RedisServer;
  let group: DemoGroup;
  let consoleUt: ConsoleUnderTest;
  let browser: Browser;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    ns = namespace('postgres', 'a11y');
    // Room for the 2.2 MiB JSON checkpoint (the default limit is 1 MiB).
    backend = await openBackend(ns.baseUrl, { ...ns.options, migrate: true, maxStateBytes: 4 * 1024 * 1024 });
    const text = await backend.acquire('orders/text-1', 'worker-a', TTL);
    await backend.checkpoint(text, enc.encode('step 3 of 7: 1,204 rows copied\n'), TTL);
    const json = await backend.acquire('orders/json-1', 'worker-b', TTL);
    await backend.checkpoint(
      json,
      enc.encode(JSON.stringify({ order: 42, lines: [{ sku: 'A-1', qty: 2 }], paid: true, note: 'rush' })),
      TTL,
    );
    // Large and binary: the hex view scrolls.
    const blob = await backend.acquire('orders/blob-1', 'worker-c', TTL);
    await backend.checkpoint(
      blob,
      Uint8Array.from({ length: 6000 }, (_, i) => (i * 37) % 256),
      TTL,
    );
    // Decoded views: msgpack, gzip'd protobuf (guessed), a 2.2 MiB JSON, and a gzip that is corrupt
    // (after the other leases in work-id order, so the rows other screens wait for stay in view).
    for (const [workId, bytes] of [
      ['payloads/msgpack-1', msgpackEncode({ order: 42, lines: [{ sku: 'A-1', qty: 2 }], paid: true })],
      ['payloads/proto-1', gzipSync(protoBatch())],
      ['payloads/export-1', enc.encode(JSON.stringify(bigExport()))],
      [
        'payloads/corrupt-1',
        Uint8Array.from([0x1f, 0x8b, 0x08, ...Array.from({ length: 40 }, (_, i) => (i * 53) % 256)]),
      ],
    ] as const) {
      const r = await backend.acquire(workId, 'worker-e', TTL);
      await backend.checkpoint(r, bytes, TTL);
    }
    for (let i = 0; i < 14; i++)
      await backend.acquire(`batch/${String(i).padStart(3, '0')}`, `worker-${i % 4}`, TTL);
    const done = await backend.acquire('batch/done', 'worker-z', TTL);
    await backend.release(done);
    for (const [workId, operator, reason] of [
      ['orders/drained-1', 'alice', 'drained before the deploy'],
      ['orders/wedged-1', 'bob', 'holder wedged on a poison message, INC-2291'],
      ['orders/wedged-2', 'bob', 'same incident, second shard'],
    ] as const) {
      const r = await backend.acquire(workId, 'worker-d', TTL);
      await backend.admin.forceRelease(workId, { expectedToken: r.fencingToken, operator, reason });
    }

    // A consumer group of real members, for the Groups view.
    group = await startDemoGroup(backend, {
      group: 'orders',
      members: 3,
      partitions: 6,
      // Members rebalance every ttlMs / 3: 2 s, so the group is balanced when its screen is visited.
      ttlMs: 6000,
      tickMs: 1000,
      cycleMs: 0,
      prefix: 'groups/',
      holderPrefix: 'consumer-',
    });

    // A backend that goes away: its connection shows the stale state.
    redis = await startRedisServer();
    const down = await openBackend(`redis://127.0.0.1:${redis.port}`, { keyPrefix: 'a11y', migrate: true });
    for (let i = 0; i < 3; i++) await down.acquire(`jobs/down-${i}`, `holder-${i}`, TTL);
    await down.close();

    const noDb = new URL(PG_URL);
    noDb.pathname = '/e2e_a11y_no_such_db';
    consoleUt = await startConsole(
      [
        { name: MAIN, url: ns.consoleUrl, environment: 'prod' },
        { name: 'audit-readonly', url: ns.consoleUrl, readOnly: true, environment: 'prod' },
        {
          name: 'staging-unmigrated',
          url: `${PG_URL}?schema=${ns.options.schema}_missing`,
          environment: 'staging',
        },
        { name: 'dev-no-such-db', url: noDb.toString(), environment: 'dev' },
        { name: 'cache-down', url: `redis://127.0.0.1:${redis.port}?keyPrefix=a11y`, environment: 'prod' },
      ],
      { profilesEditable: true },
    );
    const [main, , , , cache] = consoleUt.service.connections();
    await consoleUt.service.waitLive(main!.id, 20_000);
    await consoleUt.service.waitLive(cache!.id, 20_000);
    await redis.kill();
    browser = await launchChromium();
    if (SHOTS) mkdirSync(SHOT_DIR, { recursive: true });
  });

  afterAll(async () => {
    await browser?.close();
    await consoleUt?.close();
    await redis?.stop();
    await group?.stop();
    await backend?.close();
    if (ns !== undefined) await dropNamespace(ns);
  });

  it('activity: the window fits the data, ticks are clock times, the choice is remembered', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    try {
      await page.goto(consoleUt.server.url);
      await view(page, 'Activity').click();
      const chart = page.getByRole('img', { name: /Lease events/ });
      await chart.waitFor({ timeout: 20_000 });
      // One connection (the read-only one reads the same backend: "All connections" would count it twice).
      await page
        .getByRole('combobox', { name: 'Connection', exact: true })
        .selectOption({ label: `${MAIN} (prod)` });
      // Everything happened in the last minutes: the smallest window, not an hour with the data at its edge.
      const window = page.getByRole('group', { name: 'Window' });
      expect(await window.getByRole('radio', { name: '15 min' }).isChecked()).toBe(true);
      await page.getByRole('heading', { name: 'Lease events, last 15 min' }).waitFor();
      const ticks = async () =>
        (await chart.locator('text.axis').allTextContents()).filter((t) => /^\d\d:\d\d$/.test(t));
      const quarter = await ticks();
      expect(quarter.length).toBeGreaterThanOrEqual(7);
      // Two-minute steps on round clock minutes.
      for (const t of quarter) expect(Number(t.slice(3)) % 2).toBe(0);
      expect(await chart.locator('text.unit').textContent()).toBe('events / min');
      await expect
        .poll(() => chart.getAttribute('aria-label'))
        .toMatch(/Acquires \d+, Takeovers \d+, Releases \d+, Force releases 3/);

      await window.getByText('24 h').click();
      await page.getByRole('heading', { name: 'Lease events, last 24 h' }).waitFor();
      await expect.poll(() => chart.locator('text.unit').textContent()).toBe('events / 10 min');
      const day = await ticks();
      expect(day.length).toBeGreaterThanOrEqual(8);
      for (const t of day) expect([t.slice(3), Number(t.slice(0, 2)) % 3]).toEqual(['00', 0]);

      await page.reload();
      await view(page, 'Activity').click();
      await page.getByRole('heading', { name: 'Lease events, last 24 h' }).waitFor({ timeout: 20_000 });
      expect(await page.getByRole('radio', { name: '24 h' }).isChecked()).toBe(true);
      // The holders' numbers say what they count.
      await hasText(page.getByRole('region', { name: 'Busiest holders' }), 'Leases per holder now');
      await page.getByRole('columnheader', { name: 'Leases', exact: true }).waitFor({ timeout: 15_000 });
    } finally {
      await page.close();
    }
  });

  for (const width of WIDTHS) {
    for (const screen of SCREENS) {
      // Opened once, then checked in each colour scheme: the palette follows the system's scheme
      // live (styles.css, light-dark()), so switching it needs no reload; a visit per scheme cost
      // twice the 1.8 s a load and an open take.
      it(`${screen.name}-${width}`, async () => {
        const context = await browser.newContext({
          viewport: { width, height: 900 },
          colorScheme: SCHEMES[0],
        });
        try {
          const page = await context.newPage();
          page.on('pageerror', (e) => pageErrors.push(`${screen.name}-${width}: ${e.message}`));
          const origin = new URL(consoleUt.server.url).origin;
          await page.goto(screen.signedOut === true ? `${origin}/` : consoleUt.server.url);
          if (screen.path !== undefined) {
            // Signed in by the first visit (its session cookie); now the screen's own route.
            await page.getByRole('navigation', { name: 'Views' }).waitFor({ timeout: 15_000 });
            await page.goto(new URL(screen.path, origin).href);
          }
          await screen.open(page);
          const found: string[] = [];
          const backgrounds = new Set<string>();
          for (const scheme of SCHEMES) {
            const where = `${screen.name}-${width}-${scheme}`;
            await page.emulateMedia({ colorScheme: scheme });
            expect(await page.evaluate(`matchMedia('(prefers-color-scheme: ${scheme})').matches`)).toBe(true);
            // The palette itself switched (checked by axe's colour-contrast rule in both).
            backgrounds.add(
              await page.evaluate<string>('getComputedStyle(document.documentElement).backgroundColor'),
            );
            const violations = await axe(page);
            if (violations.length > 0) console.error(report(where, violations));
            for (const x of violations) {
              found.push(`${scheme}: ${x.id} (${x.impact}): ${x.nodes.map((n) => n.target).join(', ')}`);
            }
            if (SHOTS && shotOf(screen, width, scheme)) {
              // A constructed sheet: the console's CSP refuses inline <style>.
              await page.evaluate(`if (!window.__steady) {
                const sheet = new CSSStyleSheet();
                sheet.replaceSync(${JSON.stringify(STEADY_CSS)});
                document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
                window.__steady = true;
              }`);
              // Let pending renders and the one-second tickers land before the picture.
              await page.waitForTimeout(300);
              await page.screenshot({
                path: `${SHOT_DIR}/${where}.png`,
                animations: 'disabled',
                caret: 'hide',
              });
            }
          }
          expect(backgrounds.size).toBe(SCHEMES.length);
          expect(found).toEqual([]);
          expect(pageErrors).toEqual([]);
        } finally {
          await context.close();
        }
      });
    }
  }
});
