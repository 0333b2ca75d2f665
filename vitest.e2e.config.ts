import { defineConfig } from 'vitest/config';

/** End-to-end tests in Chromium (`npm run e2e`, also the last step of `npm test`). */
export default defineConfig({
  test: {
    include: ['e2e/**/*.e2e.ts'],
    globalSetup: ['e2e/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // One file per backend; each runs a browser, a console and a fleet, so two at once is the most two cores take.
    maxWorkers: 2,
  },
});
