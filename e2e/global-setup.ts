/**
 * Before the end-to-end files: build the renderer (the tests load what ships,
 * from dist/renderer) and fail fast with a clear message when Chromium or a
 * server is missing, rather than in every test.
 */
import { existsSync } from 'node:fs';
import { build } from 'vite';
import { requireServers } from '../test/support/global-setup.ts';

export default async function setup(): Promise<void> {
  const chromium = process.env.WORKLEASE_CHROMIUM ?? '/usr/bin/chromium';
  if (!existsSync(chromium)) {
    throw new Error(`The end-to-end tests need Chromium at ${chromium}: apt-get install -y chromium`);
  }
  await requireServers();
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
