/**
 * The main-process half of the Electron IPC bridge, written against tiny
 * structural stand-ins for Electron's types so it runs (and is tested) without
 * Electron. electron/main.ts passes the real `ipcMain` / `IpcMainInvokeEvent`.
 *
 * Everything arriving from the renderer is untrusted: the sender is checked
 * first, then the envelope shape (zod), then `dispatch` validates the method
 * name and its params against the `methods` table. The handler never throws:
 * every outcome is a {@link ResponseEnvelope}, so an error keeps its `code`
 * across the process boundary instead of becoming Electron's generic
 * "Error invoking remote method" string.
 */
import { type ConsoleEvent, RequestEnvelopeSchema, type ResponseEnvelope } from '../console/api.ts';
import { errorToData, ForbiddenError, InvalidArgumentError } from '../lease/errors.ts';
import { CALL_CHANNEL, EVENT_CHANNEL } from './channels.ts';

/** The parts of Electron's `IpcMainInvokeEvent` the bridge reads. */
export interface InvokeEventLike {
  /** The WebContents that sent the message; compared by identity with the app's own window. */
  readonly sender: unknown;
  /** The frame that sent the message; null when it navigated away or was destroyed. */
  readonly senderFrame: { readonly url: string; readonly parent: unknown } | null;
}

/** The console's request entry point: src/console/dispatch.ts bound to a service. */
export type DispatchFn = (method: unknown, params: unknown) => Promise<ResponseEnvelope>;

export interface IpcMainHandlerOptions {
  dispatch: DispatchFn;
  /** Whether this event comes from the app's own window and page (see {@link createSenderCheck}). */
  isTrustedSender: (event: InvokeEventLike) => boolean;
  /** Told about each refused sender (for a log line); never receives params. */
  onRefused?: (reason: string) => void;
}

export type IpcMainHandler = (event: InvokeEventLike, envelope: unknown) => Promise<ResponseEnvelope>;

function failure(err: unknown): ResponseEnvelope {
  return { ok: false, error: errorToData(err) };
}

/** Builds the function main registers with `ipcMain.handle(CALL_CHANNEL, …)`. */
export function createIpcMainHandler(options: IpcMainHandlerOptions): IpcMainHandler {
  const { dispatch, isTrustedSender, onRefused } = options;
  return async (event, envelope) => {
    let trusted = false;
    try {
      trusted = isTrustedSender(event);
    } catch {
      trusted = false;
    }
    if (!trusted) {
      onRefused?.(`IPC call from an untrusted frame (${event.senderFrame?.url ?? 'no frame'}) refused`);
      return failure(new ForbiddenError('This IPC channel only answers the console window'));
    }
    const parsed = RequestEnvelopeSchema.safeParse(envelope);
    if (!parsed.success) {
      return failure(
        new InvalidArgumentError('Malformed request envelope: expected { method: string, params }', {
          details: {
            issues: parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`),
          },
        }),
      );
    }
    try {
      return await dispatch(parsed.data.method, parsed.data.params);
    } catch (err) {
      // dispatch maps service errors itself; this catches a bug in it so the renderer still gets an envelope.
      return failure(err);
    }
  };
}

export interface SenderCheckOptions {
  /** The app window's WebContents, or null before it exists / after it closed. */
  getTrustedSender: () => unknown;
  /** Whether a frame URL is the app's own page (window-policy.ts `isAppUrl`). */
  isAppUrl: (url: string) => boolean;
}

/**
 * A sender is trusted when it is the app's own window, the message comes from
 * its top frame (not an iframe), and that frame shows the app's own URL.
 */
export function createSenderCheck(options: SenderCheckOptions): (event: InvokeEventLike) => boolean {
  return (event) => {
    const own = options.getTrustedSender();
    if (own === null || own === undefined || event.sender !== own) return false;
    const frame = event.senderFrame;
    if (frame === null || frame.parent !== null) return false;
    return options.isAppUrl(frame.url);
  };
}

/** The parts of Electron's `ipcMain` the bridge uses. */
export interface IpcMainLike {
  handle(channel: string, listener: (event: InvokeEventLike, ...args: unknown[]) => unknown): void;
  removeHandler(channel: string): void;
}

/** Registers the handler on {@link CALL_CHANNEL}; returns a function that unregisters it. */
export function registerIpcMainHandler(ipcMain: IpcMainLike, handler: IpcMainHandler): () => void {
  ipcMain.handle(CALL_CHANNEL, (event, envelope) => handler(event, envelope));
  return () => ipcMain.removeHandler(CALL_CHANNEL);
}

/** The parts of a WebContents needed to push events. */
export interface EventTargetLike {
  isDestroyed(): boolean;
  send(channel: string, ...args: unknown[]): void;
}

/**
 * Returns a ConsoleEvent listener that forwards each event to the window on
 * {@link EVENT_CHANNEL}, dropping events while no window is open.
 */
export function createEventForwarder(getTarget: () => EventTargetLike | null): (event: ConsoleEvent) => void {
  return (event) => {
    const target = getTarget();
    if (target === null || target.isDestroyed()) return;
    target.send(EVENT_CHANNEL, event);
  };
}
