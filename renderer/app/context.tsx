import { createContext, useContext } from 'react';
import type { ConsoleClient } from '../api/client.ts';
import type { FleetSync } from '../api/sync.ts';

export interface AppServices {
  client: ConsoleClient;
  sync: FleetSync;
}

export const ServicesContext = createContext<AppServices | null>(null);

export function useServices(): AppServices {
  const services = useContext(ServicesContext);
  if (services === null) throw new Error('useServices outside ServicesContext');
  return services;
}
