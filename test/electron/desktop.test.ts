/**
 * The console the desktop app opens: the embedded demo when no profile is
 * saved, the saved profiles otherwise. Real PGlite, real demo fleet, real
 * Redis; only Electron's safeStorage is stood in for by a codec.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SecretCodec } from '../../src/console/profiles.ts';
import { ProfileStore } from '../../src/console/profiles.ts';
import { type DesktopConsole, startDesktopConsole } from '../../src/electron-common/desktop.ts';

const codec: SecretCodec = {
  available: true,
  encrypt: (s) => Buffer.from(s).toString('base64'),
  decrypt: (s) => Buffer.from(s, 'base64').toString(),
};

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

function tempProfiles(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'wl-desktop-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  return path.join(dir, 'profiles.json');
}

async function start(profilesPath: string): Promise<DesktopConsole> {
  const core = await startDesktopConsole({
    codec,
    profilesPath,
    demoFleet: { workers: 3, items: 6, tickMs: 200 },
  });
  cleanup.push(() => core.close());
  return core;
}

describe('desktop console', () => {
  it('opens the embedded demo when no profile is saved, with the fleet visible', async () => {
    const core = await start(tempProfiles());
    expect(core.mode).toBe('demo');
    const [demo] = core.service.connections();
    expect(demo).toMatchObject({ kind: 'pglite', environment: 'demo', readOnly: false });
    await core.service.waitLive(demo!.id, 30_000);
    await expect
      .poll(
        async () => (await core.service.handle('fleet.snapshot', { connectionId: demo!.id })).rows.length,
        {
          timeout: 20_000,
        },
      )
      .toBeGreaterThan(0);
    const info = await core.service.handle('console.info', {});
    expect(info.profilesEditable).toBe(true);
    await core.close();
    await core.close(); // idempotent (the cleanup closes it a third time)
  }, 90_000);

  it('opens saved profiles instead of the demo', async () => {
    const file = tempProfiles();
    new ProfileStore(file, codec).save({
      name: 'local redis',
      url: 'redis://127.0.0.1:6379/0?keyPrefix=wl-desktop-test',
      readOnly: true,
      environment: 'test',
    });
    const core = await start(file);
    expect(core.mode).toBe('profiles');
    expect(core.service.connections().map((c) => [c.name, c.readOnly])).toEqual([['local redis', true]]);
  });
});
