/**
 * IPC channel names shared by electron/main.ts and electron/preload.ts. Kept in
 * a module with no imports so the sandboxed preload bundle stays tiny.
 */

/** Renderer → main request/response (`ipcRenderer.invoke` / `ipcMain.handle`). Payload: a request envelope. */
export const CALL_CHANNEL = 'worklease:call';
/** Main → renderer push (`webContents.send`). Payload: one ConsoleEvent. */
export const EVENT_CHANNEL = 'worklease:event';
