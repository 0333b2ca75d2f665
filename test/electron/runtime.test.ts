/**
 * The real Electron app, driven by playwright-core's `_electron`: the window
 * loads the renderer from app://, the page sees only `window.worklease`, and a
 * console call round-trips through the preload and main.
 *
 * The Electron binary cannot be downloaded on the build machines (no network),
 * so there this test is skipped, and says so; everything it would cover short
 * of the runtime is tested in the other test/electron files.
 */
import path from 'node:path';
import { _electron, type ElectronApplication } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { buildElectron, ROOT } from '../../scripts/build-electron.ts';
import { ensureRenderer } from '../../scripts/renderer-build.ts';
import { electronBinaryPath } from '../../src/electron-common/electron-binary.ts';

const electronPath = electronBinaryPath();
const hasElectronBinary = electronPath !== null;
if (!hasElectronBinary) {
  console.info(
    'Electron binary not installed (no download possible here); skipping the Electron runtime test',
  );
}

let app: ElectronApplication | null = null;
afterAll(async () => {
  await app?.close();
});

describe('Electron runtime', () => {
  it.skipIf(!hasElectronBinary)(
    'opens the hardened console window on the demo and answers calls over IPC',
    async () => {
      await ensureRenderer();
      const out = await buildElectron();
      // Chromium refuses to start as root without this; the page's own sandbox (sandbox: true) is unaffected.
      const rootArgs = process.getuid?.() === 0 ? ['--no-sandbox'] : [];
      app = await _electron.launch({
        executablePath: electronPath!,
        args: [...rootArgs, path.join(out, 'main.cjs')],
        cwd: ROOT,
        env: { ...process.env, WORKLEASE_CONFIG_DIR: path.join(out, 'config-empty') },
        timeout: 60_000,
      });
      const page = await app.firstWindow();
      expect(page.url()).toBe('app://console/index.html');
      const surface = await page.evaluate(() => ({
        bridge: Object.keys((globalThis as unknown as { worklease: object }).worklease).sort(),
        require: typeof (globalThis as unknown as { require?: unknown }).require,
        process: typeof (globalThis as unknown as { process?: unknown }).process,
      }));
      expect(surface).toEqual({ bridge: ['call', 'subscribe'], require: 'undefined', process: 'undefined' });
      const info = await page.evaluate(() =>
        (
          globalThis as unknown as { worklease: { call(m: string, p: object): Promise<{ ok: boolean }> } }
        ).worklease.call('console.info', {}),
      );
      expect(info.ok).toBe(true);
      const opened = await page.evaluate(
        () => (globalThis as unknown as { open(url: string): unknown }).open('https://example.com/') === null,
      );
      expect(opened).toBe(true);
    },
    120_000,
  );
});
