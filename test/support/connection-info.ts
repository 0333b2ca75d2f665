/** A live in-memory connection as the console API describes it, for transport tests that script the service. */
import type { ConnectionInfo } from '../../src/console/api.ts';

export const LIVE_CONNECTION: ConnectionInfo = {
  id: 'c1',
  name: 'main',
  url: 'pglite://memory',
  kind: 'pglite',
  readOnly: false,
  environment: '',
  thresholds: { expiringFraction: 0.25, stuckAfterMs: 60_000 },
  state: 'live',
  syncedAt: 0,
  clockOffsetMs: 0,
  error: null,
};
