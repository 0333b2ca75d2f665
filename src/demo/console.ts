/**
 * The demo console: a simulated fleet running on a backend, and a console
 * service watching that same backend. `worklease demo` serves it in web mode
 * and the desktop app opens it when no profile is saved, so both start the
 * fleet and the service the same way here.
 */

import { openBackend } from '../backends/open.ts';
import type { SharedConsoleOptions } from '../console/access.ts';
import type { ProfileStore } from '../console/profiles.ts';
import { type ConsoleService, createConsoleService } from '../console/service.ts';
import type { LeaseBackend } from '../lease/types.ts';
import { type DemoFleet, type DemoFleetOptions, startDemoFleet } from './fleet.ts';
import { type DemoGroup, type DemoGroupOptions, startDemoGroup } from './group.ts';

export interface DemoConsoleOptions {
  /** The connection's name in the console. */
  name: string;
  /** The connection's URL as the console shows it (the backend is already open). */
  url: string;
  /** The console's stuck threshold for this connection, ms. */
  stuckAfterMs: number;
  fleet: DemoFleetOptions;
  /** A consumer group beside the fleet (see group.ts); omitted: none. */
  group?: DemoGroupOptions;
  /** Saved profiles to open beside the demo connection. Default none. */
  profiles?: ProfileStore;
  /** Served to a browser (`worklease demo`): the shared-console rules. Default: the desktop's local user. */
  shared?: SharedConsoleOptions;
}

export interface DemoConsole {
  fleet: DemoFleet;
  service: ConsoleService;
  /** Closes the service, stops the fleet, then closes the backend. Idempotent. */
  close(): Promise<void>;
}

/** Starts the fleet on `backend` (which it then owns and closes) and a console service on the same backend. */
export function startDemoConsole(backend: LeaseBackend, options: DemoConsoleOptions): DemoConsole {
  const fleet = startDemoFleet(backend, options.fleet);
  const onError = options.fleet.onError ?? (() => {});
  const group: Promise<DemoGroup | null> =
    options.group === undefined
      ? Promise.resolve(null)
      : startDemoGroup(backend, { onError, ...options.group }).catch((err: unknown) => {
          onError(err);
          return null;
        });
  // The service must see the fleet's database (a second pglite://memory open would be another,
  // empty one) and must not close it while the fleet is still writing.
  const shared: LeaseBackend = new Proxy(backend, {
    get: (target, key) => (key === 'close' ? async () => {} : Reflect.get(target, key)),
  });
  const service = createConsoleService({
    ...(options.profiles === undefined ? {} : { profiles: options.profiles }),
    ...(options.shared === undefined ? {} : { shared: options.shared }),
    connections: [
      {
        name: options.name.slice(0, 100),
        url: options.url,
        environment: 'demo',
        thresholds: { stuckAfterMs: options.stuckAfterMs },
      },
    ],
    openBackend: (url, open) => (url === options.url ? Promise.resolve(shared) : openBackend(url, open)),
  });
  let closing: Promise<void> | null = null;
  return {
    fleet,
    service,
    close() {
      closing ??= (async () => {
        await service.close().catch(() => {});
        await (await group)?.stop();
        await fleet.stop();
        await backend.close().catch(() => {});
      })();
      return closing;
    },
  };
}
