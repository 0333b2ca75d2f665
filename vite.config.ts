import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/**
 * The console renderer: one build for Electron (loaded from file://) and for
 * `worklease serve` (served over http). `base: './'` keeps asset URLs relative
 * so both work; the output has no inline scripts because the CSP forbids them.
 */
export default defineConfig({
  root: 'renderer',
  base: './',
  plugins: [react()],
  build: {
    outDir: '../dist/renderer',
    emptyOutDir: true,
    // The CSP has no 'unsafe-inline': never inline assets as data: scripts or styles.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    // No source maps: served with the page they would hand out the sources, comments and all.
    sourcemap: false,
    target: 'es2022',
  },
});
