/**
 * A cookie alone is never a session, in Chromium, with two local origins: the console on one port
 * of 127.0.0.1, and "another local web server" on another port, which (cookies are not isolated
 * by port, and SameSite counts every port of a host as one site) receives the console's cookie
 * and can set it. Neither replaying the received cookie nor planting the attacker's own
 * (fixation) acts as anyone; a `/?token=` link never replaces a signed-in session without asking.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { type ConsoleService, createConsoleService } from '../src/console/index.ts';
import { startWebServer, type WebServer } from '../src/server/index.ts';
import { launchChromium, STATIC_DIR } from './harness.ts';

const sha = (t: string): string => createHash('sha256').update(t).digest('hex');
const tokens = { adam: randomBytes(32).toString('hex'), mallory: randomBytes(32).toString('hex') };

/** What the other local server saw and what it answers: a page, with the Set-Cookie it is told to send. */
interface Evil {
  server: Server;
  origin: string;
  cookies: string[];
  setCookie: string | null;
}

async function startEvil(): Promise<Evil> {
  const evil: Evil = { server: createServer(), origin: '', cookies: [], setCookie: null };
  evil.server.on('request', (req, res) => {
    evil.cookies.push(req.headers.cookie ?? '');
    if (evil.setCookie !== null) res.setHeader('Set-Cookie', evil.setCookie);
    res.setHeader('Content-Type', 'text/html');
    res.end('<!doctype html><title>another local page</title><p>hello</p>');
  });
  await new Promise<void>((r) => evil.server.listen(0, '127.0.0.1', r));
  evil.origin = `http://127.0.0.1:${(evil.server.address() as AddressInfo).port}`;
  return evil;
}

describe('a cookie alone is never a session (Chromium, two local origins)', () => {
  let service: ConsoleService;
  let server: WebServer;
  let evil: Evil;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let consoleOrigin: string;

  /** Who the page's own requests act as (the page's storage and this browser's cookies), or the HTTP status. */
  const pageUser = (): Promise<string | number> =>
    page.evaluate(`(async () => {
      const secret = localStorage.getItem('worklease.session');
      const res = await fetch('/api/call', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(secret ? { 'x-worklease-session': secret } : {}) },
        body: JSON.stringify({ method: 'console.session', params: {} }),
      });
      return res.ok ? (await res.json()).result.user : res.status;
    })()`);

  const signedInView = () => page.getByRole('navigation', { name: 'Views' }).waitFor({ timeout: 20_000 });

  beforeAll(async () => {
    service = createConsoleService({
      connections: [{ name: 'demo', url: 'pglite://memory' }],
      shared: {},
      feed: { pollMaxMs: 200 },
    });
    server = await startWebServer({
      service,
      port: 0,
      staticDir: STATIC_DIR,
      auth: {
        sharedToken: null,
        sharedRoles: {},
        users: [
          { name: 'adam', tokenSha256: sha(tokens.adam), roles: { '*': 'admin' } },
          { name: 'mallory', tokenSha256: sha(tokens.mallory), roles: { '*': 'viewer' } },
        ],
      },
      securityLog: () => {},
    });
    consoleOrigin = server.origin;
    evil = await startEvil();
    browser = await launchChromium();
    context = await browser.newContext();
    page = await context.newPage();
    // The first navigation of a fresh Chromium is slow on a loaded machine (27 s measured here
    // with a load average of 10): taken here, outside the tests' time.
    await page.goto(`${consoleOrigin}/`);
    await page.getByRole('form', { name: 'Sign in' }).waitFor({ timeout: 60_000 });
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((r) => (evil?.server ? evil.server.close(() => r()) : r()));
    await server?.close();
    await service?.close();
  });

  it('the other origin receives the cookie, and replaying it (with a forged Origin) is refused', async () => {
    await page.goto(`${consoleOrigin}/?token=${tokens.adam}`);
    await signedInView();
    expect(await pageUser()).toBe('adam');
    await page.goto(`${evil.origin}/`);
    const received = evil.cookies.at(-1) ?? '';
    const cookie = /wl_session=[\w-]+/.exec(received)?.[0];
    // The threat is real: another port of the same host got the session cookie.
    expect(cookie).toBeDefined();
    const replay = await fetch(`${consoleOrigin}/api/call`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: cookie!, origin: consoleOrigin },
      body: JSON.stringify({ method: 'console.session', params: {} }),
    });
    expect(replay.status).toBe(401);
    const upgrade = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`${consoleOrigin.replace('http', 'ws')}/api/events`, ['worklease'], {
        headers: { cookie: cookie!, origin: consoleOrigin },
      });
      ws.on('unexpected-response', (_req, res) => {
        resolve(res.statusCode ?? 0);
        ws.terminate();
      });
      ws.on('open', () => {
        resolve(101);
        ws.close();
      });
      ws.on('error', () => {});
    });
    expect(upgrade).toBe(401);
    // The page itself, holding the secret in its own origin's storage, is still signed in.
    await page.goto(`${consoleOrigin}/`);
    await signedInView();
    expect(await pageUser()).toBe('adam');
  }, 60_000);

  it('a cookie planted by the other origin never makes the page act as the attacker', async () => {
    const exchange = await fetch(`${consoleOrigin}/api/session`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.mallory}`, origin: consoleOrigin },
    });
    const planted = (exchange.headers.get('set-cookie') ?? '').split(';')[0]!;
    expect(planted).toMatch(/^wl_session=/);
    // Tossed with a longer path, it is sent before the page's own: the page stays who it was.
    evil.setCookie = `${planted}; Path=/api`;
    await page.goto(`${evil.origin}/plant`);
    await page.goto(`${consoleOrigin}/`);
    await signedInView();
    expect(await pageUser()).toBe('adam');
    // Overwriting the page's own cookie: the page is signed out, never mallory.
    evil.setCookie = `${planted}; Path=/`;
    await page.goto(`${evil.origin}/plant`);
    await page.goto(`${consoleOrigin}/`);
    await page.getByRole('form', { name: 'Sign in' }).waitFor({ timeout: 20_000 });
    expect(await pageUser()).toBe(401);
    evil.setCookie = null;
    await context.clearCookies();
  }, 60_000);

  it('a /?token= link asks before it replaces a signed-in session', async () => {
    await page.goto(`${consoleOrigin}/?token=${tokens.adam}`);
    await signedInView();
    expect(await pageUser()).toBe('adam');
    await page.goto(`${consoleOrigin}/?token=${tokens.mallory}`);
    const ask = page.getByRole('dialog', { name: "Sign in with the link's token?" });
    await ask.waitFor({ timeout: 20_000 });
    expect(await ask.textContent()).toContain('signed in as adam');
    expect(new URL(page.url()).searchParams.has('token')).toBe(false);
    await ask.getByRole('button', { name: 'Stay signed in as adam' }).click();
    await ask.waitFor({ state: 'hidden' });
    expect(await pageUser()).toBe('adam');
    await page.goto(`${consoleOrigin}/?token=${tokens.mallory}`);
    await page.getByRole('dialog', { name: "Sign in with the link's token?" }).waitFor({ timeout: 20_000 });
    await page.getByRole('button', { name: "Sign in with the link's token" }).click();
    await page.waitForLoadState('load');
    await signedInView();
    await expect.poll(() => pageUser(), { timeout: 10_000 }).toBe('mallory');
  }, 60_000);
});
