/**
 * Decoded checkpoints in Chromium, on PostgreSQL: msgpack, gzip'd protobuf (schema-less, marked
 * guessed), base64 inside JSON and a 2.2 MiB JSON, each written by its format's own encoder and
 * read in the detail pane; the tree driven by the keyboard, searched, linked (the address holds
 * the view and the node) and exported; a decompression bomb ends as "could not decode" with its
 * hex still there.
 */
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { encode as msgpackEncode } from '@msgpack/msgpack';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBackend } from '../src/index.ts';
import type { LeaseBackend } from '../src/lease/types.ts';
import {
  type ConsoleUnderTest,
  dropNamespace,
  enc,
  gone,
  hasText,
  launchChromium,
  type Namespace,
  namespace,
  shoot,
  startConsole,
  visible,
} from './harness.ts';
import { bigExport, protoBatch } from './payloads.ts';

const TTL = 10 * 60_000;
/** Whether `loc` has the keyboard focus (typed without the DOM's types, which this file lacks). */
const focused = (loc: Locator): Promise<boolean> =>
  loc.evaluate(
    (el) => el === (globalThis as unknown as { document: { activeElement: unknown } }).document.activeElement,
  );
const ORDER = { order: 42, lines: [{ sku: 'A-1', qty: 2 }], paid: true, note: 'rush' };
const BIG = bigExport();

describe('decoded checkpoints in Chromium (PostgreSQL)', () => {
  let ns: Namespace;
  let backend: LeaseBackend;
  let consoleUt: ConsoleUnderTest;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let connId: string;
  const pageErrors: string[] = [];
  const bigBytes = enc.encode(JSON.stringify(BIG));
  const msgpackBytes = msgpackEncode(ORDER);

  const details = () => page.getByRole('complementary', { name: 'Lease details' });
  const tree = () => details().getByRole('tree', { name: 'Decoded checkpoint' });
  const item = (text: RegExp | string) => tree().getByRole('treeitem', { name: text });
  const open = async (workId: string) => {
    await page.goto(
      new URL(`/c/${encodeURIComponent(connId)}/lease/${encodeURIComponent(workId)}`, consoleUt.server.origin)
        .href,
    );
    await visible(details(), 15_000);
  };

  beforeAll(async () => {
    ns = namespace('postgres', 'decode');
    backend = await openBackend(ns.baseUrl, { ...ns.options, migrate: true, maxStateBytes: 4 * 1024 * 1024 });
    const save = async (workId: string, bytes: Uint8Array) => {
      const r = await backend.acquire(workId, 'worker-1', TTL);
      await backend.checkpoint(r, bytes, TTL);
    };
    await save('cp/msgpack', msgpackBytes);
    await save('cp/proto', gzipSync(protoBatch()));
    await save('cp/big', bigBytes);
    await save(
      'cp/envelope',
      enc.encode(
        JSON.stringify({
          type: 'progress',
          body: gzipSync(msgpackEncode({ deep: 'inside', n: 7 })).toString('base64'),
        }),
      ),
    );
    const member = gzipSync(new Uint8Array(64 * 1024 * 1024), { level: 9 });
    await save('cp/bomb', Buffer.concat(Array.from({ length: 16 }, () => member)));
    consoleUt = await startConsole([{ name: 'pg-decode', url: ns.consoleUrl, environment: 'staging' }]);
    connId = consoleUt.service.connections()[0]!.id;
    await consoleUt.service.waitLive(connId, 20_000);
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], {
      origin: consoleUt.server.origin,
    });
    page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(consoleUt.server.url);
    await page.getByRole('navigation', { name: 'Views' }).waitFor({ timeout: 15_000 });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await consoleUt?.close();
    await backend?.close();
    if (ns !== undefined) await dropNamespace(ns);
  });

  it('reads a msgpack checkpoint as a tree, and downloads it decoded and raw', async () => {
    await open('cp/msgpack');
    await hasText(details().getByTestId('checkpoint-format'), 'msgpack · token');
    await visible(item(/^order: 42/));
    await visible(item(/^sku: "A-1"/));
    await shoot(page, 'decoded-msgpack');
    const [decoded] = await Promise.all([
      page.waitForEvent('download'),
      details()
        .getByRole('button', { name: /^Download decoded/ })
        .click(),
    ]);
    expect(JSON.parse(readFileSync((await decoded.path())!, 'utf8'))).toEqual(ORDER);
    const [raw] = await Promise.all([
      page.waitForEvent('download'),
      details()
        .getByRole('button', { name: /^Download raw/ })
        .click(),
    ]);
    expect(raw.suggestedFilename()).toMatch(/^worklease-checkpoint-cp_msgpack-token-\d+\.bin$/);
    expect(Buffer.from(readFileSync((await raw.path())!)).equals(Buffer.from(msgpackBytes))).toBe(true);
  });

  it("reads a gzip'd protobuf without a schema, marked guessed, and opens a nested message by keyboard", async () => {
    await open('cp/proto');
    await hasText(details().getByTestId('checkpoint-format'), 'gzip → protobuf (guessed)');
    await visible(item(/^1: "batch-0042" len string guessed/));
    await hasText(tree(), 'guessed');
    // Keyboard: the root row, down to field 4, open it, into it.
    await tree().getByRole('treeitem').first().focus();
    const field4 = item(/^4: \{2\} len message/);
    for (let i = 0; i < 10 && !(await focused(field4)); i++) {
      await page.keyboard.press('ArrowDown');
    }
    // A small message opens by itself: ← closes it, → opens it, → again goes to its first field.
    await expect.poll(() => field4.getAttribute('aria-expanded')).toBe('true');
    await page.keyboard.press('ArrowLeft');
    await expect.poll(() => field4.getAttribute('aria-expanded')).toBe('false');
    await gone(item(/^1: "eu-west\/7"/));
    await page.keyboard.press('ArrowRight');
    await expect.poll(() => field4.getAttribute('aria-expanded')).toBe('true');
    await page.keyboard.press('ArrowRight');
    await visible(item(/^1: "eu-west\/7"/));
    await expect.poll(() => focused(item(/^1: "eu-west\/7"/))).toBe(true);
    await hasText(details(), 'field 1, len read as string');
    // ← on a leaf goes to its parent.
    await page.keyboard.press('ArrowLeft');
    await expect.poll(() => focused(field4)).toBe(true);
    await expect.poll(() => new URL(page.url()).searchParams.get('cp')).toBe('/4');
    await shoot(page, 'decoded-protobuf');
  });

  it('shows base64 inside JSON decoded, with how it was decoded', async () => {
    await open('cp/envelope');
    await visible(item(/base64 → gzip → msgpack/));
    await visible(item(/^deep: "inside"/));
  });

  it('shows a 2.2 MiB JSON as a tree at once, pages a wide array, searches it, and links to a node', async () => {
    const t0 = Date.now();
    await open('cp/big');
    await visible(item(/^rows: \[52000\]/), 15_000);
    const firstTreeMs = Date.now() - t0;
    console.log(
      `2.2 MiB JSON: first tree ${firstTreeMs} ms after opening the lease (before: 15 s of Load more for 1.6 MiB of text)`,
    );
    expect(firstTreeMs).toBeLessThan(10_000);
    // Open the array: 200 rows and a "Show more"; End goes to it, Enter shows 200 more.
    await item(/^rows: \[52000\]/).click();
    await page.keyboard.press('ArrowRight');
    await visible(item(/^199: \{3\}/));
    await page.keyboard.press('End');
    await visible(tree().getByRole('treeitem', { name: /^Show more \(51,800 left\)/ }));
    await page.keyboard.press('Enter');
    await visible(item(/^399: \{3\}/));
    // Search, then a result opens the tree down to it, and the address names the node.
    await details().getByRole('searchbox', { name: 'Search in checkpoint' }).fill('SKU-043210');
    await page.keyboard.press('Enter');
    await details().getByRole('button', { name: '/rows/43210/sku' }).click();
    const hit = item(/^sku: "SKU-043210"/);
    await visible(hit);
    expect(await hit.getAttribute('aria-selected')).toBe('true');
    await expect.poll(() => new URL(page.url()).searchParams.get('cp')).toBe('/rows/43210/sku');
    await hasText(details(), 'Path /rows/43210/sku');
    await details()
      .getByRole('button', { name: /^Copy path/ })
      .click();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe('/rows/43210/sku');
    await item(/^43210: \{3\}/).click();
    await details()
      .getByRole('button', { name: /^Copy value/ })
      .click();
    await expect
      .poll(async () => JSON.parse((await page.evaluate('navigator.clipboard.readText()')) as string))
      .toEqual(BIG.rows[43210]);
    await shoot(page, 'decoded-big-json');
    // The link, in a new tab: the same node, opened and selected.
    const link = page.url();
    const tab = await context.newPage();
    try {
      await tab.goto(link);
      const again = tab
        .getByRole('tree', { name: 'Decoded checkpoint' })
        .getByRole('treeitem', { name: /^43210: \{3\}/ });
      await visible(again, 15_000);
      expect(await again.getAttribute('aria-selected')).toBe('true');
    } finally {
      await tab.close();
    }
    // Pretty JSON of the same document, a MiB at a time.
    await details().getByRole('radio', { name: 'Pretty JSON' }).check();
    await expect.poll(() => new URL(page.url()).searchParams.get('cv')).toBe('json');
    await hasText(details().getByRole('region', { name: 'Checkpoint content' }), '"sku": "SKU-000000"');
    await visible(details().getByRole('button', { name: /^Load more \(\d+ % shown\)/ }));
  }, 60_000);

  it('ends a decompression bomb as "could not decode", with its hex still shown', async () => {
    await open('cp/bomb');
    await hasText(details(), 'Could not decode: gzip expands past 16 MiB');
    expect(await details().getByRole('radio', { name: 'Hex' }).isChecked()).toBe(true);
    await hasText(details().getByRole('region', { name: 'Checkpoint content' }), '00000000  1f 8b 08');
  });

  it('logged no page error', () => {
    expect(pageErrors).toEqual([]);
  });
});
