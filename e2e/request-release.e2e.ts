/**
 * Request release from the console, on PostgreSQL: real holders (the holder layer's `claim`,
 * heartbeating) and an operator at the keyboard. A cooperating holder saves and releases, so the
 * next acquire has a clean handoff; one that ignores the request is escalated to a force-release
 * once the deadline (a console setting) passes; a read-only connection does not offer it and says
 * why.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectionInfo } from '../src/console/api.ts';
import { claim, type LeaseHolder } from '../src/lease/holder.ts';
import type { LeaseBackend, ReleaseRequest } from '../src/lease/types.ts';
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

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const TTL = 60_000;
/** A heartbeat this often: the holder hears of a request within about a second. */
const HEARTBEAT_MS = 500;
const COOPERATES = 'drain/node-7/import-2026-12';
const IGNORES = 'drain/node-7/reindex-2026-12';
const QUIET = 'drain/node-8/archive';

describe('request release from the console on postgres', () => {
  let ns: Namespace;
  let backend: LeaseBackend;
  let consoleUt: ConsoleUnderTest;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let main: ConnectionInfo;
  let readOnly: ConnectionInfo;
  const holders: LeaseHolder[] = [];
  const stops: (() => void)[] = [];
  const pageErrors: string[] = [];

  const row = (workId: string) => page.getByRole('row', { name: new RegExp(escapeRegExp(workId)) });
  const details = () => page.getByRole('complementary', { name: 'Lease details' });
  const leaseUrl = (conn: ConnectionInfo, workId: string) =>
    `${consoleUt.server.origin}/c/${encodeURIComponent(conn.id)}/lease/${encodeURIComponent(workId)}`;
  const heartbeat = (h: LeaseHolder) => {
    holders.push(h);
    stops.push(h.heartbeat({ intervalMs: HEARTBEAT_MS }));
    return h;
  };

  beforeAll(async () => {
    ns = namespace('postgres', 'rr');
    backend = await openNamespace(ns);
    consoleUt = await startConsole([
      { name: 'pg-main', url: ns.consoleUrl, environment: 'prod' },
      { name: 'pg-audit', url: ns.consoleUrl, environment: 'prod', readOnly: true },
    ]);
    const [a, b] = consoleUt.service.connections();
    main = await consoleUt.service.waitLive(a!.id, 20_000);
    readOnly = await consoleUt.service.waitLive(b!.id, 20_000);
    browser = await launchChromium();
    context = await browser.newContext({
      viewport: { width: 1400, height: 900 },
      timezoneId: 'Europe/Berlin',
    });
    page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    // Signed in by the shared token (a session cookie): every test opens addresses without it, so
    // wait until the token in the address was exchanged for the session.
    await page.goto(consoleUt.server.url);
    await page
      .getByTestId('fleet-total')
      .getByText(/leases · whole fleet:$/)
      .waitFor({ timeout: 30_000 });
  });

  afterAll(async () => {
    for (const stop of stops) stop();
    await browser?.close();
    await consoleUt?.close();
    await backend?.close();
    if (ns !== undefined) await dropNamespace(ns);
  });

  it('asks a cooperating holder with the keyboard: it saves, releases, and the next acquire has a clean handoff', async () => {
    // The holder hands over when asked; the test holds it back until the page has shown the request.
    let learnt!: (r: ReleaseRequest) => void;
    const heard = new Promise<ReleaseRequest>((resolve) => {
      learnt = resolve;
    });
    let letGo!: () => void;
    const gate = new Promise<void>((resolve) => {
      letGo = resolve;
    });
    let handedOver!: Promise<void>;
    const holder = heartbeat(
      await claim(backend, COOPERATES, 'worker-node-7', {
        ttlMs: TTL,
        onReleaseRequested: (request, h) => {
          learnt(request);
          handedOver = gate.then(async () => {
            await h.save(enc.encode('{"rows":300,"handedOver":true}'));
            await h.release();
          });
        },
      }),
    );
    await holder.save(enc.encode('{"rows":100}'));

    // The fleet of one connection (the read-only one shows the same namespace).
    await page.goto(`${consoleUt.server.origin}/c/${encodeURIComponent(main.id)}`);
    await visible(row(COOPERATES), 10_000);
    await page.keyboard.press('/');
    await page.keyboard.type('import-2026-12');
    // The search runs on the server: Enter opens the match once the hint names it.
    await hasText(page.locator('#fleet-search-hint'), `Enter opens ${COOPERATES}`);
    await page.keyboard.press('Enter');
    await hasText(details(), 'worker-node-7');

    await page.keyboard.press('r');
    const dialog = page.getByRole('dialog', { name: 'Request release of this lease?' });
    await visible(dialog);
    for (const text of [
      'worker-node-7',
      holder.token.toString(),
      'live',
      'Last heartbeat',
      'Expires',
      'in ',
    ]) {
      await hasText(dialog, text);
    }
    expect(await dialog.getByRole('button', { name: 'Request release' }).isDisabled()).toBe(true);
    await shoot(page, 'rr-dialog-1400');
    await page.setViewportSize({ width: 800, height: 900 });
    await shoot(page, 'rr-dialog-800');
    await page.setViewportSize({ width: 1400, height: 900 });
    // The reason has focus: typed, then Ctrl+Enter.
    await page.keyboard.type('draining node 7 for an upgrade');
    await page.keyboard.press('Control+Enter');
    await gone(dialog);

    const toast = page.getByRole('status').filter({ hasText: 'Release requested for' });
    await hasText(toast, `Release requested for ${COOPERATES}: worker-node-7 is asked to hand over`);
    // Focus is back on the table, on this lease's row.
    await expect.poll(() => page.evaluate('document.activeElement?.getAttribute("role")')).toBe('grid');
    const activeId = await page.evaluate<string | null>(
      'document.activeElement?.getAttribute("aria-activedescendant") ?? null',
    );
    expect(await page.locator(`#${activeId}`).textContent()).toContain(COOPERATES);

    // The holder heard it from its heartbeat; the page shows the request, its age and the deadline.
    const request = await heard;
    expect(request.operator).toBe('e2e-operator');
    expect(request.reason).toBe('draining node 7 for an upgrade');
    const note = details().getByRole('region', { name: 'Release request' });
    await hasText(note, 'Release requested ');
    await hasText(note, ' ago by e2e-operator: draining node 7 for an upgrade');
    await hasText(note, 'Escalation to force release is offered in');
    await hasText(note, '(deadline 30 s, set in Settings)');
    await visible(row(COOPERATES).getByRole('img', { name: 'release requested by e2e-operator' }));
    // Asking twice is not offered.
    expect(await details().getByRole('button', { name: 'Request release' }).isDisabled()).toBe(true);
    await hasText(details(), 'the holder was already asked');
    await shoot(page, 'rr-pending-1400');
    expect(await axe(page)).toEqual([]);
    await page.setViewportSize({ width: 800, height: 900 });
    await shoot(page, 'rr-pending-800');
    await page.setViewportSize({ width: 1400, height: 900 });

    letGo();
    await handedOver;
    await visible(row(COOPERATES).getByText('released', { exact: true }), 5000);
    await gone(row(COOPERATES).getByRole('img', { name: /release requested/ }));
    await gone(details().getByRole('region', { name: 'Release request' }));

    const next = await backend.acquire(COOPERATES, 'worker-node-9', TTL);
    const read = await backend.readCheckpoint(next);
    expect(read.cleanHandoff).toBe(true);
    expect(new TextDecoder().decode(read.state!)).toBe('{"rows":300,"handedOver":true}');
    expect(next.fencingToken).toBeGreaterThan(holder.token);

    await toast.getByRole('link', { name: 'Audit entry' }).click();
    const audit = page.getByRole('table');
    await hasText(audit, 'request-release');
    await hasText(audit, 'draining node 7 for an upgrade');
    const entries = await backend.admin.audit({ workId: COOPERATES });
    expect(entries.map((e) => e.action)).toEqual(['request-release']);
    expect(pageErrors).toEqual([]);
  });

  it('offers to escalate a request the holder ignores once the deadline passed, and force-releases', async () => {
    const holder = heartbeat(await claim(backend, IGNORES, 'worker-stubborn', { ttlMs: TTL }));

    // A short deadline, set where the operator sets it, and remembered.
    await page.goto(`${consoleUt.server.origin}/settings`);
    const field = page.getByRole('spinbutton', { name: 'Offer escalation after (s)' });
    expect(await field.inputValue()).toBe('30');
    await field.fill('0.5');
    expect(await page.getByRole('button', { name: 'Save deadline' }).isDisabled()).toBe(true);
    await field.fill('3');
    await page.getByRole('button', { name: 'Save deadline' }).click();
    await hasText(page.getByRole('status').filter({ hasText: 'Saved' }), 'Saved: 3 s.');
    await shoot(page, 'rr-settings-1400');
    await page.reload();
    expect(await page.getByRole('spinbutton', { name: 'Offer escalation after (s)' }).inputValue()).toBe('3');

    await page.goto(leaseUrl(main, IGNORES));
    await hasText(details(), 'worker-stubborn');
    await details().getByRole('button', { name: 'Request release' }).click();
    const dialog = page.getByRole('dialog', { name: 'Request release of this lease?' });
    await visible(dialog);
    await page.keyboard.type('node 7 reboot window');
    await page.keyboard.press('Control+Enter');
    await gone(dialog);

    const note = details().getByRole('region', { name: 'Release request' });
    await hasText(note, 'by e2e-operator: node 7 reboot window');
    const escalate = note.getByRole('button', { name: 'Escalate to force release' });
    await visible(escalate, 10_000);
    // The holder heard the request and kept the lease.
    await expect.poll(() => holder.releaseRequested?.reason, { timeout: 5000 }).toBe('node 7 reboot window');
    expect(holder.lost).toBe(false);
    await hasText(note, 'No handoff after 3 s.');
    await shoot(page, 'rr-escalate-1400');
    expect(await axe(page)).toEqual([]);
    await page.setViewportSize({ width: 800, height: 900 });
    await shoot(page, 'rr-escalate-800');
    await page.setViewportSize({ width: 1400, height: 900 });

    await escalate.click();
    const force = page.getByRole('dialog', { name: 'Force release this lease?' });
    await visible(force);
    const reason = force.getByRole('textbox', { name: 'Reason' });
    const prefilled = await reason.inputValue();
    expect(prefilled).toContain('release request by e2e-operator');
    expect(prefilled).toContain('node 7 reboot window');
    await shoot(page, 'rr-escalate-dialog-1400');
    // The typed confirmation still applies: the work id field has focus.
    await page.keyboard.type(IGNORES);
    await page.keyboard.press('Control+Enter');
    await gone(force);
    await hasText(
      page.getByRole('status').filter({ hasText: 'Force-released' }),
      `Force-released ${IGNORES}`,
    );
    await visible(row(IGNORES).getByText('force-released', { exact: true }), 5000);

    await expect.poll(() => holder.lost, { timeout: 5000 }).toBe(true);
    const after = await backend.admin.get(IGNORES);
    expect(after?.ended).toBe('force-released');
    const next = await backend.acquire(IGNORES, 'worker-node-9', TTL);
    expect((await backend.readCheckpoint(next)).cleanHandoff).toBe(false);
    const entries = await backend.admin.audit({ workId: IGNORES });
    expect(entries.map((e) => e.action).sort()).toEqual(['force-release', 'request-release']);
    expect(entries.find((e) => e.action === 'force-release')?.reason).toBe(prefilled);
    expect(pageErrors).toEqual([]);
  });

  it('shows Request release disabled on a read-only connection, with the reason; r says it too', async () => {
    heartbeat(await claim(backend, QUIET, 'worker-node-8', { ttlMs: TTL }));
    await page.goto(leaseUrl(readOnly, QUIET));
    await hasText(details(), 'worker-node-8');
    const button = details().getByRole('button', { name: 'Request release' });
    await expect.poll(() => button.isDisabled()).toBe(true);
    await hasText(details(), "Request release is not offered: connection 'pg-audit' is read-only");
    expect(await button.getAttribute('aria-describedby')).toBe('request-release-off');
    await page.getByRole('grid', { name: 'Leases' }).focus();
    await page.keyboard.press('r');
    await hasText(details().getByRole('status'), 'Request release is not offered: connection');
    expect(await page.getByRole('dialog').count()).toBe(0);
    await shoot(page, 'rr-readonly-1400');

    // `?` lists the shortcut.
    await page.keyboard.press('?');
    const help = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
    await hasText(help, 'Request release of the open lease');
    await page.keyboard.press('Escape');
    await gone(help);

    // Behind another view the open lease's keys do nothing (the fleet stays mounted, hidden).
    await page.goto(leaseUrl(main, QUIET));
    await hasText(details(), 'worker-node-8');
    await page.getByRole('button', { name: 'Audit log' }).click();
    await visible(page.getByRole('searchbox', { name: 'Filter audit log' }));
    await page.keyboard.press('r');
    await page.keyboard.press('f');
    expect(await page.locator('dialog[open]').count()).toBe(0);
    await page.getByRole('button', { name: 'Fleet' }).click();
    await page.getByRole('grid', { name: 'Leases' }).focus();
    await page.keyboard.press('r');
    await visible(page.getByRole('dialog', { name: 'Request release of this lease?' }));
    await page.keyboard.press('Escape');
    await gone(page.getByRole('dialog'));
    expect((await backend.admin.audit({ workId: QUIET })).length).toBe(0);
    expect(pageErrors).toEqual([]);
  });
  it('while the page is not current: the request age stops, Request release and the escalation are off', async () => {
    const id = 'drain/node-9/compact';
    const h = heartbeat(await claim(backend, id, 'worker-node-9b', { ttlMs: TTL }));
    await backend.admin.requestRelease(id, {
      expectedToken: h.token,
      operator: 'bob',
      reason: 'node 9 maintenance',
    });
    await page.goto(leaseUrl(main, id));
    const note = details().getByRole('region', { name: 'Release request' });
    // Asked outside the console (the CLI, another page): shown all the same, deadline 3 s from the last case.
    await hasText(note, 'by bob: node 9 maintenance');
    await visible(note.getByRole('button', { name: 'Escalate to force release' }), 10_000);
    const age = async () => (await note.locator('time').textContent()) ?? '';
    // Well past the deadline: the last confirmed backend time (where the clock stops) is too.
    await expect
      .poll(async () => Number(/^(\d+) s ago$/.exec(await age())?.[1] ?? 0), { timeout: 15_000 })
      .toBeGreaterThanOrEqual(6);
    await context.setOffline(true);
    try {
      await visible(page.locator('.stale-note'), 10_000);
      await hasText(note, 'force release is not offered: this view is not current');
      expect(await note.getByRole('button', { name: 'Escalate to force release' }).count()).toBe(0);
      expect(await details().getByRole('button', { name: 'Request release' }).isDisabled()).toBe(true);
      await hasText(details(), 'Request release is not offered: this view is not current');
      // The age is by the last confirmed backend time: it does not run on with the local clock.
      const frozen = await age();
      await page.waitForTimeout(2100);
      expect(await age()).toBe(frozen);
      await shoot(page, 'rr-stale-1400');
    } finally {
      await context.setOffline(false);
    }
    await visible(note.getByRole('button', { name: 'Escalate to force release' }), 15_000);
  });
});

/** axe-core's violations on the page, as "rule: targets" (the a11y suite checks every screen; these are this file's). */
async function axe(page: Page): Promise<string[]> {
  if (!(await page.evaluate('typeof window.axe !== "undefined"'))) await page.evaluate(AXE_SOURCE);
  return page.evaluate<string[]>(
    `axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => v.id + ': ' + v.nodes.map((n) => n.target.join(' ')).join(', ')))`,
  );
}
