/**
 * `npm run dist`: builds the renderer and the Electron bundles, then packages
 * with electron-builder (electron-builder.yml). Packaging downloads Electron
 * for each target, so it needs a machine with network; where the Electron
 * binary itself could not be downloaded, this stops with one clear line
 * instead of electron-builder's stack trace. Extra arguments go to
 * electron-builder (`npm run dist -- --linux`).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { ELECTRON_MISSING_REASON, electronBinaryPath } from '../src/electron-common/electron-binary.ts';
import { buildElectron } from './build-electron.ts';
import { ensureRenderer, ROOT } from './renderer-build.ts';

if (electronBinaryPath() === null) {
  console.error(
    `npm run dist: Electron is not installed on this machine (${ELECTRON_MISSING_REASON}), and packaging needs it and network access. On a machine with network, fetch it with \`node node_modules/electron/install.js\` (package.json denies electron's install script so that \`npm ci\` works offline), then run this again.`,
  );
  process.exit(1);
}

await ensureRenderer(true);
await buildElectron();
const builder = path.join(
  ROOT,
  'node_modules',
  '.bin',
  process.platform === 'win32' ? 'electron-builder.cmd' : 'electron-builder',
);
const child = spawn(builder, ['--config', 'electron-builder.yml', ...process.argv.slice(2)], {
  stdio: 'inherit',
  cwd: ROOT,
});
child.on('exit', (code) => process.exit(code ?? 1));
