import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { createClient } from './api/client.ts';
import { FleetSync } from './api/sync.ts';
import { WatchHub } from './api/watches.ts';
import { App } from './app/App.tsx';
import { ServicesContext } from './app/context.tsx';
import './styles.css';

const client = createClient();
const queryClient = new QueryClient({
  defaultOptions: {
    // Errors here are facts for ops (SCHEMA_MISMATCH, FORBIDDEN…): show them at once rather than retry blindly.
    queries: { retry: false, refetchOnWindowFocus: false },
    mutations: { retry: false },
  },
});
const sync = new FleetSync(client, queryClient);
sync.start();
const watches = new WatchHub(client);
watches.start();

const root = document.getElementById('root');
if (root === null) throw new Error('index.html has no #root');
createRoot(root).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <ServicesContext.Provider value={{ client, sync, watches }}>
        <App />
      </ServicesContext.Provider>
    </QueryClientProvider>
  </StrictMode>,
);
