/**
 * Before the end-to-end files: build the renderer (the tests load what ships,
 * from dist/renderer) and fail fast with a clear message when Chromium or a
 * server is missing, rather than in every test.
 */
import { existsSync } from 'node:fs';
import net from 'node:net';
import { build } from 'vite';

function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: 2000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

export default async function setup(): Promise<void> {
  const chromium = process.env.WORKLEASE_CHROMIUM ?? '/usr/bin/chromium';
  if (!existsSync(chromium)) {
    throw new Error(`The end-to-end tests need Chromium at ${chromium}: apt-get install -y chromium`);
  }
  const missing: string[] = [];
  if (!(await reachable('127.0.0.1', 5432))) missing.push('PostgreSQL on 127.0.0.1:5432');
  if (!(await reachable('127.0.0.1', 6379))) missing.push('Redis on 127.0.0.1:6379');
  if (missing.length > 0)
    throw new Error(`The end-to-end tests need real servers and these are down: ${missing.join(', ')}`);
  // Vitest sets NODE_ENV=test, and Vite honours NODE_ENV: without this the bundle would be React's
  // development build (several times slower), not what ships.
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({ configFile: new URL('../vite.config.ts', import.meta.url).pathname, logLevel: 'warn' });
  } finally {
    process.env.NODE_ENV = nodeEnv;
  }
}
