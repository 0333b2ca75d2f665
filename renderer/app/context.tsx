import { createContext, useContext } from 'react';
import type { ConsoleClient } from '../api/client.ts';
import type { FleetSync } from '../api/sync.ts';
import type { WatchHub } from '../api/watches.ts';

export interface AppServices {
  client: ConsoleClient;
  sync: FleetSync;
  /** The page's view subscriptions (the fleet table's windows, the open lease). */
  watches: WatchHub;
}

export const ServicesContext = createContext<AppServices | null>(null);

export function useServices(): AppServices {
  const services = useContext(ServicesContext);
  if (services === null) throw new Error('useServices outside ServicesContext');
  return services;
}
