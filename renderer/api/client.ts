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
  CLOSE_RESYNC,
  CLOSE_UNAUTHENTICATED,
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
  /**
   * True once the server answered 401 (no or wrong credentials): not an error of any one call but
   * a state of the page, shown as the sign-in screen and nothing else.
   */
  readonly signInRequired: boolean;
  onSignInRequired(listener: () => void): () => void;
  /** The page came with an access token in its address (exchanged for the session cookie). */
  readonly tokenGiven: boolean;
}

/** The server said 401: who is asking is unknown (as opposed to 403, a known caller refused an action). */
export class NotSignedInError extends ConsoleError {
  constructor() {
    super({
      name: 'NotSignedInError',
      code: 'FORBIDDEN',
      message: 'Not signed in: the access token is missing or wrong.',
      details: { unauthenticated: true },
    });
  }
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
    // The app's own window needs no token.
    signInRequired: false,
    onSignInRequired: () => () => {},
    tokenGiven: false,
  };
}

/**
 * Signs this browser in once: a `?token=` in the address is exchanged for the
 * server's HttpOnly session cookie (`POST /api/session`), then removed from
 * the address bar so it does not end up in history, bookmarks or
 * screenshots. The page never keeps the token; later calls, other tabs and
 * the event stream carry the cookie. A wrong token is removed too: the calls
 * then answer 401 and the page shows the sign-in screen. Resolves to whether
 * the address carried a token (so the sign-in screen can say it was refused).
 */
export async function exchangeToken(loc: Location = window.location): Promise<boolean> {
  const url = new URL(loc.href);
  const token = url.searchParams.get('token');
  if (token === null) return false;
  url.searchParams.delete('token');
  window.history.replaceState(window.history.state, '', url.pathname + url.search + url.hash);
  if (token === '') return false;
  try {
    await fetch(new URL(apiPath('session'), loc.href), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      credentials: 'same-origin',
    });
  } catch {
    // Unreachable server: the first call reports it.
  }
  return true;
}

/**
 * The API is at the root of the host (the console is always served at `/`, see --public-url), so
 * its URL does not depend on the route the page was opened at (`/c/<id>/lease/<workId>`).
 */
function apiPath(endpoint: 'session' | 'call' | 'events'): string {
  return `/api/${endpoint}`;
}

/** Reconnect delays: quick at first (a restarting server), then at most every 10 s. */
export function backoffMs(attempt: number): number {
  return Math.min(10_000, 250 * 2 ** Math.min(attempt, 6));
}

/** Sends the page to `?token=…`, which it exchanges for the session cookie on load. */
export function signIn(token: string, loc: Location = window.location): void {
  const url = new URL(loc.href);
  url.searchParams.set('token', token);
  loc.assign(url.toString());
}

function webClient(signedIn: Promise<boolean>): ConsoleClient {
  const events = new Listeners<ConsoleEvent>();
  const states = new Listeners<TransportState>();
  const signIns = new Listeners<void>();
  let signInRequired = false;
  let tokenGiven = false;
  void signedIn.then((given) => {
    tokenGiven = given;
  });
  const requireSignIn = () => {
    if (signInRequired) return;
    signInRequired = true;
    signIns.emit();
  };
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
    const url = new URL(apiPath('events'), window.location.href);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    url.search = '';
    // The session cookie goes with the upgrade (same origin).
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
    ws.onclose = (ev) => {
      if (socket !== ws) return;
      socket = null;
      setState('closed');
      // Signed out (or the session ended): every attempt would be refused.
      if (ev.code === CLOSE_UNAUTHENTICATED) requireSignIn();
      // Without credentials the sign-in screen reloads the page instead of reconnecting.
      if (signInRequired) return;
      // Dropped for falling behind: events were lost, so reconnect at once; the
      // reopen makes the sync layer take fresh snapshots.
      if (ev.code === CLOSE_RESYNC) attempt = 0;
      setTimeout(connect, ev.code === CLOSE_RESYNC ? 0 : backoffMs(attempt++));
    };
  };

  return {
    transport: 'web',
    get transportState() {
      return state;
    },
    async call(method, params) {
      await signedIn;
      let res: Response;
      try {
        res = await fetch(new URL(apiPath('call'), window.location.href), {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          credentials: 'same-origin',
          body: JSON.stringify({ method, params }),
        });
      } catch (err) {
        throw new ConsoleError({
          name: 'BackendUnavailableError',
          code: 'BACKEND_UNAVAILABLE',
          message: `The console server cannot be reached: ${err instanceof Error ? err.message : String(err)}`,
        });
      }
      if (res.status === 401) {
        // Not signed in (no or wrong token, session ended): a state of the page, not of this call.
        // A 403 (signed in, not allowed) keeps the server's own error.
        requireSignIn();
        throw new NotSignedInError();
      }
      let body: unknown;
      try {
        body = await res.json();
      } catch {
        throw new ConsoleError({
          name: 'InternalError',
          code: 'INTERNAL',
          message: `The console server answered HTTP ${res.status} without a JSON body`,
        });
      }
      return unwrap(method, body);
    },
    subscribe(listener) {
      if (!started) {
        started = true;
        void signedIn.then(connect);
      }
      return events.add(listener);
    },
    onTransportState: (listener) => states.add(listener),
    get signInRequired() {
      return signInRequired;
    },
    onSignInRequired: (listener) => signIns.add(listener),
    get tokenGiven() {
      return tokenGiven;
    },
  };
}

/** Picks the transport: the Electron preload bridge when present, else the web server the page came from. */
export function createClient(): ConsoleClient {
  const bridge = window.worklease;
  if (bridge !== undefined) return electronClient(bridge);
  return webClient(exchangeToken());
}

/** Typed shorthand used by query factories. */
export type Call = <M extends MethodName>(method: M, params: Params<M>) => Promise<Result<M>>;
