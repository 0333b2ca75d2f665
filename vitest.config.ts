import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // `import('worklease')` in the docs example test runs the sources; the pack test covers dist.
  resolve: {
    alias: [{ find: /^worklease$/, replacement: fileURLToPath(new URL('./src/index.ts', import.meta.url)) }],
  },
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores here: two workers keep backend tests honest without starving the servers.
    maxWorkers: 2,
  },
});
