/**
 * End-to-end harness: the real console service and web server in this
 * process (what `worklease serve` runs), real backends in their own
 * namespace, and Debian's Chromium driven by playwright-core.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Locator, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { type ConnectionInput, type ConsoleService, createConsoleService } from '../src/console/index.ts';
import type { FleetModelOptions } from '../src/console/model.ts';
import { openBackend } from '../src/index.ts';
import type { LeaseBackend, OpenOptions } from '../src/lease/types.ts';
import { startWebServer, type WebServer } from '../src/server/index.ts';

export const PG_URL = process.env.WORKLEASE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.WORKLEASE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export const STATIC_DIR = fileURLToPath(new URL('../dist/renderer', import.meta.url));
export const SCREENSHOT_DIR = fileURLToPath(new URL('../test-results/screenshots', import.meta.url));

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.WORKLEASE_CHROMIUM ?? '/usr/bin/chromium',
    args: CHROMIUM_ARGS,
    headless: true,
  });
}

export type BackendFlavour = 'postgres' | 'redis';

export interface Namespace {
  flavour: BackendFlavour;
  /** The URL the console is given (namespace in the query, as profiles carry it). */
  consoleUrl: string;
  /** Options for opening the same namespace directly. */
  options: OpenOptions;
  baseUrl: string;
}

export function namespace(flavour: BackendFlavour, tag: string): Namespace {
  const name = `e2e_${tag}_${randomBytes(4).toString('hex')}`;
  return flavour === 'postgres'
    ? { flavour, baseUrl: PG_URL, options: { schema: name }, consoleUrl: `${PG_URL}?schema=${name}` }
    : {
        flavour,
        baseUrl: REDIS_URL,
        options: { keyPrefix: name },
        consoleUrl: `${REDIS_URL}?keyPrefix=${name}`,
      };
}

/**
 * Closes what an end-to-end file opened, browser first; each part may be missing (a `beforeAll`
 * that failed half-way), and the namespace's data is removed last.
 */
export async function closeAll(parts: {
  browser?: Browser | undefined;
  consoleUt?: ConsoleUnderTest | undefined;
  backend?: LeaseBackend | undefined;
  ns?: Namespace | undefined;
}): Promise<void> {
  await parts.browser?.close();
  await parts.consoleUt?.close();
  await parts.backend?.close();
  if (parts.ns !== undefined) await dropNamespace(parts.ns);
}

/** Opens (and migrates) a namespace for the simulated fleet to write through. */
export function openNamespace(ns: Namespace): Promise<LeaseBackend> {
  return openBackend(ns.baseUrl, { ...ns.options, migrate: true });
}

/** Removes everything a namespace created: the Postgres schema or the Redis keys under the prefix. */
export async function dropNamespace(ns: Namespace): Promise<void> {
  if (ns.flavour === 'postgres') {
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      await client.query(`DROP SCHEMA IF EXISTS "${ns.options.schema}" CASCADE`);
    } finally {
      await client.end();
    }
  } else {
    const { Redis } = await import('ioredis');
    const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    try {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${ns.options.keyPrefix}*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) await redis.del(...keys);
      } while (cursor !== '0');
    } finally {
      redis.disconnect();
    }
  }
}

export interface ConsoleUnderTest {
  service: ConsoleService;
  server: WebServer;
  close(): Promise<void>;
}

/** What `worklease serve --connect …` runs, in-process on a free port, serving the built renderer. */
export async function startConsole(
  connections: ConnectionInput[],
  options: {
    readOnly?: boolean;
    feed?: FleetModelOptions;
    operator?: string;
    profilesEditable?: boolean;
  } = {},
): Promise<ConsoleUnderTest> {
  const service = createConsoleService({
    connections,
    profilesEditable: options.profilesEditable ?? false,
    operator: options.operator ?? 'e2e-operator',
    readOnly: options.readOnly ?? false,
    // Quick idle polling so "appears within 1 s" measures the console, not the poll interval.
    feed: options.feed ?? { pollMaxMs: 200 },
  });
  const server = await startWebServer({
    service,
    port: 0,
    staticDir: STATIC_DIR,
    readOnly: options.readOnly ?? false,
    // The shared token's holder is who the audit log names for actions from the page.
    auth: {
      sharedToken: randomBytes(32).toString('base64url'),
      sharedRoles: { '*': 'admin' },
      sharedUser: options.operator ?? 'e2e-operator',
    },
  });
  return {
    service,
    server,
    async close() {
      await server.close();
      await service.close();
    },
  };
}

export function screenshotPath(name: string): string {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  return `${SCREENSHOT_DIR}/${name}.png`;
}

export async function shoot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: screenshotPath(name), fullPage: false });
}

export const enc = new TextEncoder();

/** Waits until `loc` is visible (5 s by default). */
export async function visible(loc: Locator, timeout = 5000): Promise<void> {
  await loc.waitFor({ state: 'visible', timeout });
}

/**
 * Starts watching the page for a visible table row whose text contains `text`, and returns a
 * function that waits (up to `timeoutMs`) until one shows and resolves with the ms from its own
 * call to the moment the page drew the row. A MutationObserver in the page notices the row in the
 * same task that adds it; a locator's wait polls at 20, 50, 100, 100 and then 500 ms intervals, so
 * a row drawn 250 ms after a write was reported at 320 or 820 ms (measured: the WebSocket frame
 * arrived 15–200 ms after the write, the locator saw the row 200–830 ms after it).
 */
export async function watchForRow(page: Page, text: string): Promise<(timeoutMs: number) => Promise<number>> {
  // Page code as text: this file is type-checked without the DOM's types.
  // `void`: evaluate would otherwise wait for the promise itself.
  await page.evaluate(`void (window.__rowSeen = new Promise((resolve) => {
    const wanted = ${JSON.stringify(text)};
    const shown = () => Array.from(document.querySelectorAll('tr, [role="row"]')).some(
      (r) => (r.textContent ?? '').includes(wanted) && r.checkVisibility());
    const observer = new MutationObserver(() => check());
    const check = () => {
      if (!shown()) return false;
      observer.disconnect();
      resolve(performance.now());
      return true;
    };
    if (!check()) observer.observe(document.body, { subtree: true, childList: true, characterData: true });
  }))`);
  const startedAt = (await page.evaluate('performance.now()')) as number;
  return async (timeoutMs) => {
    const seenAt = (await page.evaluate(
      `Promise.race([window.__rowSeen, new Promise((resolve) => setTimeout(() => resolve(null), ${timeoutMs}))])`,
    )) as number | null;
    if (seenAt === null) throw new Error(`no visible row containing '${text}' within ${timeoutMs} ms`);
    return seenAt - startedAt;
  };
}

/** Waits until nothing matches `loc`. */
export async function gone(loc: Locator): Promise<void> {
  await expect.poll(() => loc.count(), { timeout: 5000 }).toBe(0);
}

/** Waits until `loc`'s text contains `text`. */
export async function hasText(loc: Locator, text: string): Promise<void> {
  await expect.poll(() => loc.textContent().then((t) => t ?? ''), { timeout: 5000 }).toContain(text);
}

/** `s` as a literal inside a RegExp. */
export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
