/**
 * `npm start`: the desktop console when Electron is installed, else the same
 * console in web mode on the demo fleet.
 *
 * - Electron installed: builds the renderer if dist/renderer is missing,
 *   bundles main/preload (about a second), and runs Electron on the bundle.
 * - Not installed (the npm package is there but its binary could not be
 *   downloaded, as on the build machines): says so in one line and runs the
 *   CLI's `worklease demo` in this process (embedded PGlite + simulated
 *   fleet + web console on 127.0.0.1:7420), which prints the URL to open.
 *
 * Extra arguments go to Electron or to `worklease demo`
 * (`npm start -- --port 0`).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { ELECTRON_MISSING_REASON, electronBinaryPath } from '../src/electron-common/electron-binary.ts';
import { buildElectron } from './build-electron.ts';
import { ensureRenderer, ROOT } from './renderer-build.ts';

const args = process.argv.slice(2);
const electron = electronBinaryPath();

if (electron !== null) {
  await ensureRenderer();
  const out = await buildElectron();
  const child = spawn(electron, [path.join(out, 'main.cjs'), ...args], { stdio: 'inherit', cwd: ROOT });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal === null ? 0 : 1)));
} else {
  console.info(
    `Electron is not installed on this machine (${ELECTRON_MISSING_REASON}); serving the same console in web mode instead`,
  );
  await ensureRenderer();
  // The CLI entry parses process.argv, reports failures in one line and exits when the demo stops.
  process.argv = [process.argv[0] ?? 'node', path.join(ROOT, 'bin', 'worklease'), 'demo', ...args];
  await import('../src/cli/main.ts');
}
