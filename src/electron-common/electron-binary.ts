/**
 * Whether the Electron runtime is installed. The `electron` npm package
 * downloads its binary in a postinstall step; where that cannot run (no
 * network, or the install script was not approved) the package is there but
 * `require('electron')` throws "Electron failed to install correctly".
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';

/** The Electron executable's path, or null when it is not installed. */
export function electronBinaryPath(): string | null {
  try {
    const found: unknown = createRequire(import.meta.url)('electron');
    return typeof found === 'string' && existsSync(found) ? found : null;
  } catch {
    return null;
  }
}

export const ELECTRON_MISSING_REASON = 'its binary could not be downloaded';
