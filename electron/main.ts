/**
 * Electron main process: a thin, hardened shell around the console core.
 *
 * Everything with logic lives in src/ and is unit-tested there (Electron
 * cannot run on the build machines): the window policy
 * (src/electron-common/window-policy.ts), the IPC bridge
 * (src/electron-common/ipc-main.ts), the safeStorage codec and the choice of
 * console (saved profiles, else the embedded demo) in src/electron-common/,
 * all reached through src/electron-common/index.ts. This file only wires
 * those into Electron's hooks.
 *
 * Bundled to dist/electron/main.cjs by scripts/build-electron.ts, from the
 * compiled dist/electron-common.js; `__dirname` is that directory at run
 * time (packaged or not).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { app, BrowserWindow, ipcMain, protocol, safeStorage, session, type WebContents } from 'electron';
import {
  APP_ENTRY_URL,
  APP_SCHEME,
  contentTypeFor,
  createEventForwarder,
  createIpcMainHandler,
  createSafeStorageCodec,
  createSenderCheck,
  type DesktopConsole,
  dispatch,
  isAppUrl,
  isNavigationAllowed,
  isPermissionAllowed,
  isPermissionCheckAllowed,
  isRequestAllowed,
  registerIpcMainHandler,
  resolveAppAsset,
  SECURITY_HEADERS,
  startDesktopConsole,
  WEB_PREFERENCES,
  windowOpenPolicy,
} from '../src/electron-common/index.ts';

const RENDERER_DIR = path.join(__dirname, '..', 'renderer');
const PRELOAD = path.join(__dirname, 'preload.cjs');
const WINDOW_ICON = path.join(__dirname, 'icon.png');

// Must run before `ready`: a standard, secure scheme gives the page a real origin for CSP 'self'.
protocol.registerSchemesAsPrivileged([
  { scheme: APP_SCHEME, privileges: { standard: true, secure: true, supportFetchAPI: true } },
]);
app.enableSandbox();

let mainWindow: BrowserWindow | null = null;
let consoleCore: Promise<DesktopConsole> | null = null;

function ownContents(): WebContents | null {
  return mainWindow !== null && !mainWindow.isDestroyed() ? mainWindow.webContents : null;
}

/** Applies the navigation and window-open policy to every WebContents, including any devtools creates. */
function hardenContents(contents: WebContents): void {
  contents.setWindowOpenHandler(windowOpenPolicy);
  const guard = (event: { url: string; preventDefault(): void }): void => {
    if (!isNavigationAllowed(contents.getURL(), event.url)) event.preventDefault();
  };
  contents.on('will-navigate', guard);
  contents.on('will-redirect', guard);
  contents.on('will-attach-webview', (event) => event.preventDefault());
}

async function serveAppAsset(request: Request): Promise<Response> {
  const file = resolveAppAsset(RENDERER_DIR, request.url);
  if (file === null) return new Response('Not found', { status: 404, headers: SECURITY_HEADERS });
  try {
    const body = await readFile(file);
    return new Response(body, { headers: { ...SECURITY_HEADERS, 'Content-Type': contentTypeFor(file) } });
  } catch {
    return new Response('Not found', { status: 404, headers: SECURITY_HEADERS });
  }
}

function hardenSession(): void {
  const ses = session.defaultSession;
  protocol.handle(APP_SCHEME, serveAppAsset);
  ses.webRequest.onBeforeRequest((details, callback) => callback({ cancel: !isRequestAllowed(details.url) }));
  ses.setPermissionRequestHandler((_contents, permission, callback, details) =>
    callback(isPermissionAllowed(permission) && isAppUrl(details.requestingUrl)),
  );
  // requestingOrigin is an origin's URL spec, `app://console/` (trailing slash): compared as an origin.
  ses.setPermissionCheckHandler((_contents, permission, requestingOrigin) =>
    isPermissionCheckAllowed(permission, requestingOrigin),
  );
  ses.setDevicePermissionHandler(() => false);
}

function createWindow(): void {
  mainWindow = new BrowserWindow({
    width: 1360,
    height: 860,
    minWidth: 820,
    minHeight: 520,
    show: false,
    title: 'worklease console',
    icon: WINDOW_ICON,
    webPreferences: { ...WEB_PREFERENCES, devTools: !app.isPackaged, preload: PRELOAD },
  });
  mainWindow.once('ready-to-show', () => mainWindow?.show());
  mainWindow.on('closed', () => {
    mainWindow = null;
  });
  void mainWindow.loadURL(APP_ENTRY_URL);
}

function startIpc(core: Promise<DesktopConsole>): void {
  const handler = createIpcMainHandler({
    // Calls made while the console is still opening wait for it instead of failing.
    dispatch: async (method, params) => dispatch((await core).service, method, params),
    isTrustedSender: createSenderCheck({ getTrustedSender: ownContents, isAppUrl }),
    onRefused: (reason) => console.warn(`worklease: ${reason}`),
  });
  registerIpcMainHandler(ipcMain, handler);
  void core.then(({ service }) => service.subscribe(createEventForwarder(ownContents)));
}

if (!app.requestSingleInstanceLock()) {
  app.quit();
} else {
  app.on('second-instance', () => {
    if (mainWindow === null) return;
    if (mainWindow.isMinimized()) mainWindow.restore();
    mainWindow.focus();
  });
  app.on('web-contents-created', (_event, contents) => hardenContents(contents));

  void app.whenReady().then(() => {
    hardenSession();
    // safeStorage reports no encryption before `ready`, so the codec is made here.
    consoleCore = startDesktopConsole({ codec: createSafeStorageCodec(safeStorage) });
    consoleCore.catch((err: unknown) => console.error('worklease: the console could not start:', err));
    startIpc(consoleCore);
    createWindow();
    app.on('activate', () => {
      if (BrowserWindow.getAllWindows().length === 0) createWindow();
    });
  });

  app.on('window-all-closed', () => {
    if (process.platform !== 'darwin') app.quit();
  });

  let closing = false;
  app.on('will-quit', (event) => {
    if (closing || consoleCore === null) return;
    // Close backends (and the demo fleet) before exiting so nothing is left half-written.
    closing = true;
    event.preventDefault();
    void consoleCore
      .then((core) => core.close())
      .catch(() => undefined)
      .finally(() => app.quit());
  });
}
