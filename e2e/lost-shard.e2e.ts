/**
 * A lost shard in the console, on Redis, in Chromium: a prefix loses one bucket (its keys deleted,
 * as a Cluster master that came back empty loses its buckets' keys; the Cluster itself:
 * test/backends/redis-cluster-lost-shard.test.ts). The connection's DATASET_LOST error carries the
 * lost-shard panel: the lost bucket, the affected work items among those shown, and the Recover
 * button, whose dialog asks for the key prefix typed and a reason; after it the panel says nothing
 * is lost and the work item can be acquired again.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Layout } from '../src/backends/redis/layout.ts';
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

describe('a lost shard in the console (Redis, Chromium)', () => {
  let ns: Namespace;
  let backend: LeaseBackend;
  let consoleUt: ConsoleUnderTest;
  let browser: Browser;
  let page: Page;
  const items = Array.from({ length: 30 }, (_, i) => `shard-item-${i}`);
  const pageErrors: string[] = [];

  beforeAll(async () => {
    ns = namespace('redis', 'lost');
    backend = await openNamespace(ns);
    for (const w of items) await backend.acquire(w, 'worker', 300_000);
    consoleUt = await startConsole([{ name: 'redis-main', url: ns.consoleUrl, environment: 'prod' }]);
    await consoleUt.service.waitLive(consoleUt.service.connections()[0]!.id, 20_000);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(consoleUt.server.url);
  });
  afterAll(async () => {
    await browser?.close();
    await consoleUt?.close();
    await backend?.close();
    if (ns !== undefined) await dropNamespace(ns);
  });

  it('names the lost bucket and the affected rows; Recover brings it back', { timeout: 90_000 }, async () => {
    const prefix = ns.options.keyPrefix!;
    const L = new Layout(prefix, 32);
    const victim = items[0]!;
    const b = L.bucketOf(victim);
    const affected = items.filter((w) => L.bucketOf(w) === b);
    await page.getByText('shard-item-1').first().waitFor({ timeout: 20_000 });
    const { Redis } = await import('ioredis');
    const redis = new Redis(ns.baseUrl);
    try {
      for (const w of affected) await redis.hdel(L.m[b]!, w);
      for (const key of L.keysOf(victim)) await redis.del(key);
    } finally {
      redis.disconnect();
    }
    const panel = page.getByRole('region', { name: 'redis-main: part of the data is lost' });
    await panel.waitFor({ timeout: 30_000 });
    await panel.getByText(`(b${b})`).waitFor({ timeout: 10_000 });
    const text = (await panel.textContent()) ?? '';
    expect(text).toContain(`${affected.length} of the rows shown fail DATASET_LOST`);
    for (const w of affected) expect(text).toContain(w);
    await shoot(page, 'lost-shard-panel');

    await panel.getByRole('button', { name: 'Recover lost buckets…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Recover the lost buckets?' });
    const submit = dialog.getByRole('button', { name: 'Recover', exact: true });
    await dialog.getByLabel('Reason').fill('node came back empty');
    expect(await submit.isDisabled()).toBe(true);
    await dialog.getByLabel('Key prefix').fill(prefix);
    await submit.click();
    await dialog.getByText(`Recovered 1 bucket(s) (b${b})`).waitFor({ timeout: 10_000 });
    await shoot(page, 'lost-shard-recovered');
    await dialog.getByRole('button', { name: 'Close' }).click();
    await expect(backend.acquire(victim, 'next', 60_000)).resolves.toMatchObject({ holderId: 'next' });
    const audit = await backend.admin.audit();
    expect(audit.filter((e) => e.action === 'recover')).toMatchObject([{ operator: 'e2e-operator' }]);
    expect(pageErrors).toEqual([]);
  });
});
