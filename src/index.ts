/**
 * worklease — the package entry: the lease contract, its errors, the holder
 * layer and `openBackend`, which loads a backend's module (and driver) only
 * when a URL of its kind is opened.
 */

export { DRIVER_PACKAGES, openBackend, recoverBackend } from './backends/open.ts';
export { parseBackendUrl, redactUrl } from './backends/url.ts';
export * from './lease/index.ts';
