/**
 * Serving the built console page, shared by the web server (src/server) and
 * the Electron app protocol (src/electron-common/window-policy.ts): one content
 * type table and one rule for which request paths may name a file.
 */
import { extname } from 'node:path';

const CONTENT_TYPES: Readonly<Record<string, string>> = Object.freeze({
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.txt': 'text/plain; charset=utf-8',
  '.wasm': 'application/wasm',
});

/** The Content-Type of a renderer file, by extension; unknown ones are `application/octet-stream` (with nosniff). */
export function contentTypeFor(filePath: string): string {
  return CONTENT_TYPES[extname(filePath).toLowerCase()] ?? 'application/octet-stream';
}

/**
 * Whether a decoded request path may name a file at all. Refused outright
 * rather than normalised: no legitimate asset path holds a NUL, a backslash or
 * a `..` segment, and refusing keeps the rule easy to audit. Callers still
 * check that the resolved file is inside the renderer directory.
 */
export function isSafeAssetPath(decodedPath: string): boolean {
  return !decodedPath.includes('\0') && !decodedPath.includes('\\') && !decodedPath.split('/').includes('..');
}
