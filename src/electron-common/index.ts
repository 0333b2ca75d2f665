/**
 * What the Electron main process uses from the console core, in one module:
 * scripts/build-electron.ts bundles electron/main.ts against the compiled
 * form of this file (dist/electron-common.js), so the desktop app runs the
 * same compiled code as the npm package.
 */
export { dispatch } from '../console/dispatch.ts';
export { type DesktopConsole, startDesktopConsole } from './desktop.ts';
export {
  createEventForwarder,
  createIpcMainHandler,
  createSenderCheck,
  registerIpcMainHandler,
} from './ipc-main.ts';
export { createSafeStorageCodec } from './secret-codec.ts';
export {
  APP_ENTRY_URL,
  APP_ORIGIN,
  APP_SCHEME,
  contentTypeFor,
  isAppUrl,
  isNavigationAllowed,
  isPermissionAllowed,
  isPermissionCheckAllowed,
  isRequestAllowed,
  resolveAppAsset,
  SECURITY_HEADERS,
  WEB_PREFERENCES,
  windowOpenPolicy,
} from './window-policy.ts';
