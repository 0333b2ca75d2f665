/**
 * The renderer-facing half of the Electron IPC bridge: what electron/preload.ts
 * exposes as `window.worklease` through `contextBridge`. It is written against
 * a structural stand-in for `ipcRenderer` so it is tested without Electron.
 *
 * Only type imports from the API contract: the sandboxed preload may require
 * nothing but `electron`, so this module must not pull zod (or any Node
 * module) into the preload bundle. Validation happens in main.
 *
 * The exposed object never hands out `ipcRenderer`, an IPC event object, or a
 * way to pick the channel: the page can make console calls and receive console
 * events, nothing else.
 */
import type {
  ConsoleEvent,
  MethodName,
  Params,
  ResponseEnvelope,
  Result,
  WorkleaseBridge,
} from '../console/api.ts';
import { CALL_CHANNEL, EVENT_CHANNEL } from './channels.ts';

export type { WorkleaseBridge } from '../console/api.ts';

/** The parts of Electron's `ipcRenderer` the preload uses. */
export interface IpcRendererLike {
  invoke(channel: string, ...args: unknown[]): Promise<unknown>;
  on(channel: string, listener: (event: unknown, ...args: unknown[]) => void): unknown;
  removeListener(channel: string, listener: (event: unknown, ...args: unknown[]) => void): unknown;
}

/** Name of the global the preload defines (`window.worklease`). */
export const BRIDGE_GLOBAL = 'worklease';

function transportFailure(err: unknown): ResponseEnvelope<never> {
  return {
    ok: false,
    error: {
      name: 'BackendUnavailableError',
      code: 'BACKEND_UNAVAILABLE',
      message: `The console process did not answer: ${err instanceof Error ? err.message : String(err)}`,
    },
  };
}

export function createPreloadApi(ipc: IpcRendererLike): WorkleaseBridge {
  const listeners = new Set<(event: ConsoleEvent) => void>();
  // One IPC listener fans out to every subscriber; it is attached while anyone listens.
  const deliver = (listener: (event: ConsoleEvent) => void, event: ConsoleEvent): void => {
    try {
      listener(event);
    } catch {
      // A throwing subscriber must not starve the others or surface as an unhandled rejection.
    }
  };
  // One IPC listener fans out to every subscriber; it is attached while anyone listens.
  const onIpcEvent = (_event: unknown, payload: unknown): void => {
    for (const listener of [...listeners]) deliver(listener, payload as ConsoleEvent);
  };

  async function call<M extends MethodName>(
    method: M,
    params: Params<M>,
  ): Promise<ResponseEnvelope<Result<M>>> {
    try {
      return (await ipc.invoke(CALL_CHANNEL, { method, params })) as ResponseEnvelope<Result<M>>;
    } catch (err) {
      return transportFailure(err);
    }
  }

  function subscribe(listener: (event: ConsoleEvent) => void): () => void {
    if (typeof listener !== 'function') throw new TypeError('subscribe(listener) needs a function');
    // A distinct wrapper per subscription, so subscribing the same function twice unsubscribes independently.
    let active = true;
    const entry = (event: ConsoleEvent): void => {
      if (active) listener(event);
    };
    if (listeners.size === 0) ipc.on(EVENT_CHANNEL, onIpcEvent);
    listeners.add(entry);
    void call('connections.list', {}).then((res) => {
      if (active && res.ok) deliver(entry, { type: 'connections', connections: res.result });
    });
    return () => {
      if (!active) return;
      active = false;
      listeners.delete(entry);
      if (listeners.size === 0) ipc.removeListener(EVENT_CHANNEL, onIpcEvent);
    };
  }

  return { call, subscribe };
}
