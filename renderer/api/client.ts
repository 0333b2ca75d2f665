/**
 * The renderer's one way to reach the console: a {@link ConsoleClient}
 * (the shared `ConsoleApi` plus the transport's own health), chosen once at
 * start. Inside Electron the preload exposes `window.worklease`; in a browser
 * the page talks to `worklease serve` over `POST /api/call` and a WebSocket.
 *
 * Every reply and every pushed event is validated against the shared schemas
 * in src/console/api.ts before the app sees it.
 */
import {
  type ConsoleApi,
  type ConsoleEvent,
  ConsoleEventSchema,
  type ErrorDataWire,
  type MethodName,
  methods,
  type Params,
  type ResponseEnvelope,
  type Result,
  type WorkleaseBridge,
} from '../../src/console/api.ts';

/** A console error rebuilt from wire data; `code` is the stable one from the server. */
export class ConsoleError extends Error {
  readonly code: ErrorDataWire['code'];
  readonly details: Record<string, unknown> | undefined;

  constructor(data: ErrorDataWire) {
    super(data.message, data.cause === undefined ? undefined : { cause: new ConsoleError(data.cause) });
    this.name = data.name;
    this.code = data.code;
    this.details = data.details;
  }
}

export function errorCode(err: unknown): string {
  return err instanceof ConsoleError ? err.code : 'INTERNAL';
}

/** The transport's own link (not a backend's): "open" when calls and events flow. */
export type TransportState = 'connecting' | 'open' | 'closed';

export interface ConsoleClient extends ConsoleApi {
  readonly transport: 'electron' | 'web';
  /** Called on every link state change; `open` after a reconnect means events may have been missed. */
  onTransportState(listener: (state: TransportState) => void): () => void;
  readonly transportState: TransportState;
}

declare global {
  interface Window {
    /** What the Electron preload exposes through contextBridge (never ipcRenderer itself). */
    worklease?: WorkleaseBridge;
  }
}

function unwrap<M extends MethodName>(method: M, envelope: unknown): Result<M> {
  if (typeof envelope !== 'object' || envelope === null || !('ok' in envelope)) {
    throw new ConsoleError({
      name: 'InternalError',
      code: 'INTERNAL',
      message: `Malformed reply to ${method}`,
    });
  }
  const env = envelope as ResponseEnvelope;
  if (!env.ok) throw new ConsoleError(env.error);
  const parsed = methods[method].result.safeParse(env.result);
  if (!parsed.success) {
    throw new ConsoleError({
      name: 'InternalError',
      code: 'INTERNAL',
      message: `The reply to ${method} does not match the console API: ${parsed.error.message.slice(0, 300)}`,
    });
  }
  return parsed.data as Result<M>;
}

function parseEvent(raw: unknown): ConsoleEvent | null {
  const parsed = ConsoleEventSchema.safeParse(raw);
  if (!parsed.success) {
    console.warn('Dropped an event that does not match the console API', parsed.error.message.slice(0, 300));
    return null;
  }
  return parsed.data;
}

class Listeners<T> {
  private readonly set = new Set<(value: T) => void>();
  add(listener: (value: T) => void): () => void {
    this.set.add(listener);
    return () => this.set.delete(listener);
  }
  emit(value: T): void {
    for (const l of this.set) {
      try {
        l(value);
      } catch (err) {
        console.error(err);
      }
    }
  }
}

function electronClient(bridge: WorkleaseBridge): ConsoleClient {
  return {
    transport: 'electron',
    transportState: 'open',
    async call(method, params) {
      return unwrap(method, await bridge.call(method, params));
    },
    subscribe(listener) {
      return bridge.subscribe((raw) => {
        const event = parseEvent(raw);
        if (event !== null) listener(event);
      });
    },
    // IPC to the app's own main process cannot drop while the window lives.
    onTransportState: () => () => {},
  };
}

const TOKEN_KEY = 'worklease.token';

/**
 * Takes the access token from `?token=` once, keeps it for this tab only
 * (sessionStorage) and removes it from the address bar so it does not end up
 * in history, bookmarks or screenshots.
 */
export function takeToken(
  loc: Location = window.location,
  storage: Storage = window.sessionStorage,
): string | null {
  const url = new URL(loc.href);
  const fromUrl = url.searchParams.get('token');
  if (fromUrl !== null && fromUrl !== '') {
    storage.setItem(TOKEN_KEY, fromUrl);
    url.searchParams.delete('token');
    window.history.replaceState(window.history.state, '', url.pathname + url.search + url.hash);
    return fromUrl;
  }
  return storage.getItem(TOKEN_KEY);
}

/** Reconnect delays: quick at first (a restarting server), then at most every 10 s. */
export function backoffMs(attempt: number): number {
  return Math.min(10_000, 250 * 2 ** Math.min(attempt, 6));
}

function webClient(token: string | null): ConsoleClient {
  const events = new Listeners<ConsoleEvent>();
  const states = new Listeners<TransportState>();
  let state: TransportState = 'connecting';
  let socket: WebSocket | null = null;
  let attempt = 0;
  let started = false;

  const setState = (next: TransportState) => {
    if (next === state) return;
    state = next;
    states.emit(next);
  };

  const connect = () => {
    const url = new URL('api/events', window.location.href);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    url.search = `?token=${encodeURIComponent(token ?? '')}`;
    const ws = new WebSocket(url);
    socket = ws;
    ws.onopen = () => {
      attempt = 0;
      setState('open');
    };
    ws.onmessage = (msg) => {
      if (typeof msg.data !== 'string') return;
      let raw: unknown;
      try {
        raw = JSON.parse(msg.data);
      } catch {
        return;
      }
      const event = parseEvent(raw);
      if (event !== null) events.emit(event);
    };
    ws.onclose = () => {
      if (socket !== ws) return;
      socket = null;
      setState('closed');
      setTimeout(connect, backoffMs(attempt++));
    };
  };

  return {
    transport: 'web',
    get transportState() {
      return state;
    },
    async call(method, params) {
      let res: Response;
      try {
        res = await fetch(new URL('api/call', window.location.href), {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token ?? ''}` },
          body: JSON.stringify({ method, params }),
        });
      } catch (err) {
        throw new ConsoleError({
          name: 'BackendUnavailableError',
          code: 'BACKEND_UNAVAILABLE',
          message: `The console server cannot be reached: ${err instanceof Error ? err.message : String(err)}`,
        });
      }
      let body: unknown;
      try {
        body = await res.json();
      } catch {
        throw new ConsoleError({
          name: 'InternalError',
          code: res.status === 401 ? 'FORBIDDEN' : 'INTERNAL',
          message: `The console server answered HTTP ${res.status} without a JSON body`,
        });
      }
      if (res.status === 401) {
        throw new ConsoleError({
          name: 'ForbiddenError',
          code: 'FORBIDDEN',
          message: 'The access token is missing or wrong. Open the URL printed by `worklease serve`.',
        });
      }
      return unwrap(method, body);
    },
    subscribe(listener) {
      if (!started) {
        started = true;
        connect();
      }
      return events.add(listener);
    },
    onTransportState: (listener) => states.add(listener),
  };
}

/** Picks the transport: the Electron preload bridge when present, else the web server the page came from. */
export function createClient(): ConsoleClient {
  const bridge = window.worklease;
  if (bridge !== undefined) return electronClient(bridge);
  return webClient(takeToken());
}

/** Typed shorthand used by query factories. */
export type Call = <M extends MethodName>(method: M, params: Params<M>) => Promise<Result<M>>;
