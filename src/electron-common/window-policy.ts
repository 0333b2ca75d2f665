/**
 * The Electron window's security policy as plain data and pure functions, so
 * every rule is unit-tested without Electron (which cannot run on the build
 * machines). electron/main.ts only wires these into BrowserWindow, session and
 * protocol hooks. No Electron or DOM imports here.
 *
 * The renderer is served from a privileged custom scheme (`app://console/`)
 * rather than file://: a custom scheme gives the page a real origin, lets the
 * protocol handler attach the CSP as a response header, and confines what can
 * be loaded to the renderer build directory.
 */
import path from 'node:path';
import { isSafeAssetPath } from '../console/assets.ts';

export { contentTypeFor } from '../console/assets.ts';

/** Scheme the renderer is served from. Registered as standard + secure before `app.ready`. */
export const APP_SCHEME = 'app';
/** Host part of every app URL; one fixed host so the origin is stable (`app://console`). */
export const APP_HOST = 'console';
export const APP_ORIGIN = `${APP_SCHEME}://${APP_HOST}`;
/** The page the window loads. */
export const APP_ENTRY_URL = `${APP_ORIGIN}/index.html`;

/**
 * BrowserWindow webPreferences, minus `preload` (an absolute path only main
 * knows). Every Node/remote door is closed; the renderer reaches the console
 * only through the `window.worklease` bridge the preload exposes.
 */
export const WEB_PREFERENCES = Object.freeze({
  contextIsolation: true,
  sandbox: true,
  nodeIntegration: false,
  nodeIntegrationInWorker: false,
  nodeIntegrationInSubFrames: false,
  webSecurity: true,
  allowRunningInsecureContent: false,
  experimentalFeatures: false,
  webviewTag: false,
  navigateOnDragDrop: false,
  safeDialogs: true,
  spellcheck: false,
  /** Main turns devtools on for unpackaged (development) runs only. */
  devTools: false,
} as const);

/**
 * Content-Security-Policy for every document the window loads. Same rules as
 * the web server's pages (see .tmp/wire.md), except `connect-src`: in
 * Electron the console is reached over IPC, so the page may open no network
 * connection at all beyond its own origin.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "worker-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-src 'none'",
  "frame-ancestors 'none'",
  "form-action 'none'",
].join('; ');

/** Headers attached to every response of the app protocol. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
});

/** The only permission the page may be granted: desktop notifications (lease alerts). */
export const ALLOWED_PERMISSIONS: ReadonlySet<string> = new Set(['notifications']);

export function isPermissionAllowed(permission: string): boolean {
  return ALLOWED_PERMISSIONS.has(permission);
}

/**
 * `setPermissionCheckHandler` policy. Electron passes `requestingOrigin` as
 * the URL spec of the origin, which carries a trailing slash
 * (`app://console/`), so it is parsed and compared as an origin, never as a
 * string against {@link APP_ORIGIN}: that comparison would deny every check
 * and the page would never get notifications.
 */
export function isPermissionCheckAllowed(permission: string, requestingOrigin: string): boolean {
  return isPermissionAllowed(permission) && isAppOrigin(requestingOrigin);
}

/** True for the app's own origin, with or without the trailing slash of a URL spec; no path, query or fragment. */
export function isAppOrigin(origin: string): boolean {
  const u = parse(origin);
  return (
    u !== null &&
    isAppUrl(origin) &&
    (u.pathname === '' || u.pathname === '/') &&
    u.search === '' &&
    u.hash === '' &&
    u.password === '' &&
    u.port === ''
  );
}

function parse(url: string): URL | null {
  try {
    return new URL(url);
  } catch {
    return null;
  }
}

/** True for URLs of the app's own origin (`app://console/...`). */
export function isAppUrl(url: string): boolean {
  const u = parse(url);
  return u !== null && u.protocol === `${APP_SCHEME}:` && u.host === APP_HOST && u.username === '';
}

/**
 * `will-navigate` / `will-redirect` policy: the window never leaves its page.
 * Only a change of fragment (or a reload of the same document) on the app's
 * own origin is allowed; every other origin, scheme or path is denied.
 */
export function isNavigationAllowed(currentUrl: string, targetUrl: string): boolean {
  const from = parse(currentUrl);
  const to = parse(targetUrl);
  if (from === null || to === null) return false;
  if (!isAppUrl(targetUrl) || !isAppUrl(currentUrl)) return false;
  return from.pathname === to.pathname && from.search === to.search;
}

/**
 * `webRequest.onBeforeRequest` policy: no remote content. The page may load
 * its own app:// files and `data:` images (CSP `img-src data:`); devtools
 * keeps its own scheme. Every http(s), ws(s), file:// or other request is
 * cancelled, whatever the CSP would have said.
 */
export function isRequestAllowed(url: string): boolean {
  if (isAppUrl(url)) return true;
  const u = parse(url);
  if (u === null) return false;
  return u.protocol === 'data:' || u.protocol === 'devtools:';
}

/** `setWindowOpenHandler` policy: no new windows, ever. */
export function windowOpenPolicy(_details: { url: string }): { action: 'deny' } {
  return { action: 'deny' };
}

/**
 * Maps an app-protocol request URL to a file inside `rootDir` (the renderer
 * build), or null when the URL is foreign or tries to escape the directory
 * (`..`, encoded separators, NUL). `/` serves index.html.
 */
export function resolveAppAsset(rootDir: string, requestUrl: string): string | null {
  const u = parse(requestUrl);
  if (u === null || !isAppUrl(requestUrl)) return null;
  let pathname: string;
  try {
    pathname = decodeURIComponent(u.pathname);
  } catch {
    return null;
  }
  if (!isSafeAssetPath(pathname)) return null;
  const relative = pathname === '/' ? 'index.html' : pathname.replace(/^\/+/, '');
  const root = path.resolve(rootDir);
  const file = path.resolve(root, relative);
  if (file !== root && !file.startsWith(root + path.sep)) return null;
  return file;
}
