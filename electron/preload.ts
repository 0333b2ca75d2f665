/**
 * Sandboxed preload: exposes `window.worklease = { call, subscribe }` to the
 * renderer and nothing else (never `ipcRenderer` itself). A sandboxed preload
 * may require only `electron`, so the bridge it wires up
 * (src/electron-common/preload-api.ts) imports types only; requests are
 * validated in main.
 */
import { contextBridge, ipcRenderer } from 'electron';
import { BRIDGE_GLOBAL, createPreloadApi } from '../src/electron-common/preload-api.ts';

contextBridge.exposeInMainWorld(BRIDGE_GLOBAL, createPreloadApi(ipcRenderer));
