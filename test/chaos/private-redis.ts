/**
 * A throw-away standalone Redis for the chaos tests: `CLIENT PAUSE` pauses a
 * whole server, which must not stall the other test files on the shared one.
 */
import { startRedisServer } from '../../src/chaos/servers.ts';

export interface PrivateRedis {
  url: string;
  stop(): Promise<void>;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const server = await startRedisServer();
  return { url: server.url, stop: () => server.stop() };
}
