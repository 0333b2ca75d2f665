/**
 * Which console the desktop app opens, decided without Electron so it is
 * tested here: the operator's saved connection profiles (the same file the
 * CLI and `serve` use) when there are any, else the embedded demo — an
 * in-memory PGlite backend with the simulated fleet (src/demo/fleet.ts)
 * running on it, as `worklease demo` shows in web mode. Profiles stay
 * editable in demo mode, so the first connection an operator adds is saved
 * and opened on the next start.
 */

import { openBackend } from '../backends/open.ts';
import { defaultProfilesPath, ProfileStore, type SecretCodec } from '../console/profiles.ts';
import { type ConsoleService, createConsoleService } from '../console/service.ts';
import { startDemoConsole } from '../demo/console.ts';
import type { DemoFleetOptions } from '../demo/fleet.ts';

/** Backend of the embedded demo. */
export const DEMO_URL = 'pglite://memory';
/** The demo connection's stuck threshold, ms; same as `worklease demo`'s default `--stuck-after`. */
export const DEMO_STUCK_AFTER_MS = 20_000;

export interface DesktopConsoleOptions {
  /** Encrypts saved passwords (Electron's safeStorage). */
  codec: SecretCodec;
  /** Profiles file. Default: the CLI's (`$WORKLEASE_CONFIG_DIR` or the user config dir + `/worklease/profiles.json`). */
  profilesPath?: string;
  /** Demo fleet tuning. Default: `worklease demo`'s defaults (8 workers, 40 items, ttl 10 s, tick 1 s). */
  demoFleet?: DemoFleetOptions;
}

export interface DesktopConsole {
  service: ConsoleService;
  /** `profiles` when saved connections were opened, `demo` when the embedded demo was. */
  mode: 'profiles' | 'demo';
  /** Closes the service, then the demo fleet and its backend. Idempotent. */
  close(): Promise<void>;
}

export async function startDesktopConsole(options: DesktopConsoleOptions): Promise<DesktopConsole> {
  const profiles = new ProfileStore(options.profilesPath ?? defaultProfilesPath(), options.codec);
  if (profiles.load().length > 0) {
    const service = createConsoleService({ profiles });
    return { service, mode: 'profiles', close: once(() => service.close()) };
  }

  const backend = await openBackend(DEMO_URL, { migrate: true });
  const demo = startDemoConsole(backend, {
    name: 'demo (embedded)',
    url: DEMO_URL,
    stuckAfterMs: DEMO_STUCK_AFTER_MS,
    fleet: {
      workers: 8,
      items: 40,
      ttlMs: 10_000,
      tickMs: 1_000,
      stuckForMs: DEMO_STUCK_AFTER_MS * 3,
      ...options.demoFleet,
    },
    group: { members: 3, ttlMs: 10_000, tickMs: 1_000 },
    profiles,
  });
  return { service: demo.service, mode: 'demo', close: demo.close };
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | null = null;
  return () => {
    done ??= fn();
    return done;
  };
}
