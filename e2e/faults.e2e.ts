/**
 * The console under faults, in Chromium: a private Redis (own port, own folder) is killed or
 * frozen, and separately the console server process is killed, while holders keep leases with a
 * 3 s ttl. Sampled every 100 ms, the page must never show expired a lease the backend holds live,
 * and must mark the connection stale within 2 s of losing it.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startRedisServer } from '../src/chaos/servers.ts';
import { openBackend } from '../src/index.ts';
import type { LeaseBackend, LeaseRecord } from '../src/lease/types.ts';
import { dropNamespace, launchChromium, namespace, openNamespace, shoot, startConsole } from './harness.ts';

const TTL_MS = 3000;
const RENEW_MS = 400;
const HOLDERS = 6;
/** The bound: stale mark within 2 s of losing the link. */
const STALE_WITHIN_MS = 2000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Holders that keep `HOLDERS` leases renewed until stopped (renew failures are the weather). */
function holders(backend: LeaseBackend, prefix: string) {
  let stopped = false;
  const records = new Map<string, LeaseRecord>();
  const ready = (async () => {
    for (let i = 0; i < HOLDERS; i++) {
      const id = `${prefix}/${i}`;
      records.set(id, await backend.acquire(id, `holder-${i}`, TTL_MS));
    }
  })();
  const loop = (async () => {
    await ready;
    while (!stopped) {
      await sleep(RENEW_MS);
      await Promise.all(
        [...records].map(async ([id, r]) => {
          try {
            records.set(id, await backend.renew(r, TTL_MS));
          } catch {
            // The backend is down: the lease stays live in its store until its expiry.
          }
        }),
      );
    }
  })();
  return {
    ready,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

interface Sample {
  at: number;
  rows: Array<{ work: string; status: string; stale: boolean }>;
  note: string | null;
}

async function sampleOnce(page: Page): Promise<Sample> {
  // A string, so this Node-typed file needs no DOM types.
  const s = await page.evaluate<Omit<Sample, 'at'>>(`(() => ({
    rows: [...document.querySelectorAll('.fleet-table tbody tr')]
      .filter((tr) => tr.querySelector('.c-work') !== null)
      .map((tr) => ({
        work: tr.querySelector('.c-work')?.textContent ?? '',
        status: tr.querySelector('.c-status')?.textContent ?? '',
        stale: tr.classList.contains('stale'),
      })),
    note: document.querySelector('.stale-note')?.textContent ?? null,
  }))()`);
  return { at: Date.now(), ...s };
}

/** Samples the page every 100 ms for `ms`; a page that went away mid-sample is skipped. */
async function sampleFor(page: Page, ms: number): Promise<Sample[]> {
  const out: Sample[] = [];
  for (const end = Date.now() + ms; Date.now() < end; ) {
    out.push(await sampleOnce(page));
    await sleep(100);
  }
  return out;
}

async function waitLiveRows(page: Page, prefix: string): Promise<void> {
  for (const deadline = Date.now() + 20_000; ; ) {
    const s = await sampleOnce(page);
    const mine = s.rows.filter((r) => r.work.startsWith(prefix));
    if (mine.length === HOLDERS && mine.every((r) => r.status === 'live' && !r.stale) && s.note === null)
      return;
    if (Date.now() > deadline) throw new Error(`rows of ${prefix} never all live: ${JSON.stringify(s)}`);
    await sleep(100);
  }
}

/** What every fault test asserts about the samples taken after the fault at `lostAt`. */
function judge(samples: Sample[], lostAt: number, prefix: string) {
  const expiredShown = samples.flatMap((s) =>
    s.rows.filter((r) => r.work.startsWith(prefix) && r.status === 'expired').map((r) => r.work),
  );
  const firstStale = samples.find(
    (s) =>
      s.note !== null &&
      s.rows.filter((r) => r.work.startsWith(prefix)).length === HOLDERS &&
      s.rows.filter((r) => r.work.startsWith(prefix)).every((r) => r.stale),
  );
  return {
    expiredShown,
    staleAfterMs: firstStale === undefined ? Number.POSITIVE_INFINITY : firstStale.at - lostAt,
    lastNote: samples.at(-1)?.note ?? null,
  };
}

describe('the console under faults (Chromium)', () => {
  let browser: Browser;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  for (const fault of ['killed', 'frozen'] as const) {
    it(`backend ${fault}: stale within 2 s, no held lease ever shown expired`, async () => {
      const redis = await startRedisServer();
      const prefix = `wl_faults_${randomBytes(3).toString('hex')}`;
      const backend = await openBackend(redis.url, {
        keyPrefix: prefix,
        migrate: true,
        callTimeoutMs: 10_000,
      });
      const fleet = holders(backend, 'held');
      await fleet.ready;
      const consoleUt = await startConsole([
        { name: 'private-redis', url: `${redis.url}?keyPrefix=${prefix}` },
      ]);
      const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
      page.on('pageerror', (e) => pageErrors.push(String(e)));
      try {
        await page.goto(consoleUt.server.url);
        await waitLiveRows(page, 'held/');
        // Let the leases' 3 s ttl pass at least twice while live: the rows stay live because they are renewed.
        const live = await sampleFor(page, 1500);
        expect(live.every((s) => s.note === null)).toBe(true);
        const lostAt = Date.now();
        if (fault === 'killed') void redis.kill();
        else redis.pause();
        // Well past the ttl by the local clock: 3 s ttl, 7 s outage.
        const during = await sampleFor(page, 7000);
        await shoot(page, `stale-backend-${fault}`);
        const verdict = judge(during, lostAt, 'held/');
        console.log(
          `backend ${fault}: stale mark after ${verdict.staleAfterMs} ms; ${during.length} samples`,
        );
        expect(verdict.expiredShown).toEqual([]);
        expect(verdict.staleAfterMs).toBeLessThanOrEqual(STALE_WITHIN_MS);
        expect(verdict.lastNote).toMatch(/as of \d\d:\d\d:\d\d — \d+ s ago/);
        // Force release is off, and says why.
        await page.getByRole('row', { name: /held\/0/ }).click();
        const button = page
          .getByRole('complementary', { name: 'Lease details' })
          .getByRole('button', { name: 'Force release' });
        expect(await button.isDisabled()).toBe(true);
        expect(await page.getByText(/Force release is off: this view is not current/).count()).toBe(1);
        await shoot(page, `stale-backend-${fault}-detail`);
      } finally {
        await page.close();
        await fleet.stop();
        await consoleUt.close();
        await redis.stop();
        await backend.close().catch(() => {});
      }
      expect(pageErrors).toEqual([]);
    }, 60_000);
  }

  /** `worklease serve` in its own process on a free loopback port; resolves once it listens. */
  async function spawnServe(consoleUrl: string) {
    const port = await freePort();
    const token = randomBytes(18).toString('base64url');
    const bin = fileURLToPath(new URL('../bin/worklease', import.meta.url));
    const server = spawn(
      process.execPath,
      [bin, 'serve', '--connect', consoleUrl, '--port', String(port), '--token', token],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    // The URL to open is printed once the server listens.
    await new Promise<void>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`serve did not start: ${out}`)), 30_000);
      server.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes(`:${port}`)) {
          clearTimeout(timer);
          resolve();
        }
      });
      server.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${out}`)));
    }).catch((err) => {
      server.kill('SIGKILL');
      throw err;
    });
    return {
      server,
      url: `http://127.0.0.1:${port}/?token=${token}`,
      stop() {
        if (server.exitCode === null && server.signalCode === null) {
          // A stopped process must be continued to act on anything but SIGKILL; SIGKILL ends it either way.
          server.kill('SIGKILL');
        }
      },
    };
  }

  it('console server killed: stale within 2 s, no held lease ever shown expired', async () => {
    const ns = namespace('redis', 'faults');
    const backend = await openNamespace(ns);
    const fleet = holders(backend, 'held');
    await fleet.ready;
    const serve = await spawnServe(ns.consoleUrl);
    const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    try {
      await page.goto(serve.url);
      await waitLiveRows(page, 'held/');
      await sampleFor(page, 1000);
      const lostAt = Date.now();
      serve.server.kill('SIGKILL');
      // The holders keep renewing on the backend all along: every lease stays live there.
      const during = await sampleFor(page, 7000);
      await shoot(page, 'stale-console-server-killed');
      const verdict = judge(during, lostAt, 'held/');
      console.log(
        `console server killed: stale mark after ${verdict.staleAfterMs} ms; ${during.length} samples`,
      );
      expect(verdict.expiredShown).toEqual([]);
      expect(verdict.staleAfterMs).toBeLessThanOrEqual(STALE_WITHIN_MS);
      expect(verdict.lastNote).toMatch(/as of \d\d:\d\d:\d\d — \d+ s ago.*console server cannot be reached/);
    } finally {
      await page.close();
      serve.stop();
      await fleet.stop();
      await backend.close().catch(() => {});
      await dropNamespace(ns);
    }
    expect(pageErrors).toEqual([]);
  }, 90_000);

  // Frozen (SIGSTOP), the server keeps its sockets open: no close tells the page, only silence
  // does. The page used to notice at its next one-second tick past a 3 s threshold (3.96 s).
  it('console server silent (frozen): stale within 2 s, live again once it speaks', async () => {
    const ns = namespace('redis', 'faults');
    const backend = await openNamespace(ns);
    const fleet = holders(backend, 'quiet');
    await fleet.ready;
    const serve = await spawnServe(ns.consoleUrl);
    const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    try {
      await page.goto(serve.url);
      await waitLiveRows(page, 'quiet/');
      await sampleFor(page, 1000);
      const lostAt = Date.now();
      serve.server.kill('SIGSTOP');
      const during = await sampleFor(page, 4000);
      await shoot(page, 'stale-console-server-silent');
      const verdict = judge(during, lostAt, 'quiet/');
      console.log(
        `console server silent: stale mark after ${verdict.staleAfterMs} ms; ${during.length} samples`,
      );
      expect(verdict.expiredShown).toEqual([]);
      expect(verdict.staleAfterMs).toBeLessThanOrEqual(STALE_WITHIN_MS);
      expect(verdict.lastNote).toMatch(
        /as of \d\d:\d\d:\d\d — \d+ s ago.*console server has sent nothing for/,
      );
      serve.server.kill('SIGCONT');
      // It speaks again: the mark goes, with nothing reloaded by hand.
      await waitLiveRows(page, 'quiet/');
    } finally {
      await page.close();
      serve.stop();
      await fleet.stop();
      await backend.close().catch(() => {});
      await dropNamespace(ns);
    }
    expect(pageErrors).toEqual([]);
  }, 90_000);
});
