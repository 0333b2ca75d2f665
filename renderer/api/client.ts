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
  type ViewQuery,
  type WorkleaseBridge,
} from '../../src/console/common/index.ts';

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

/** The wire form of any error thrown at the page (a ConsoleError keeps its code). */
export function errorData(err: unknown): ErrorDataWire {
  if (err instanceof ConsoleError) {
    return {
      name: err.name,
      code: err.code,
      message: err.message,
      ...(err.details === undefined ? {} : { details: err.details }),
    };
  }
  return {
    name: 'InternalError',
    code: 'INTERNAL',
    message: err instanceof Error ? err.message : String(err),
  };
}

export function errorCode(err: unknown): string {
  return err instanceof ConsoleError ? err.code : 'INTERNAL';
}

/** The transport's own link (not a backend's): "open" when calls and events flow. */
export type TransportState = 'connecting' | 'open' | 'closed';

export interface ConsoleClient extends ConsoleApi {
  readonly transport: 'electron' | 'web';
  /**
   * Subscribes to a fleet view (src/console/common/view.ts): `view` events for `watchId` follow
   * through `subscribe`, at once and whenever the window, its total or the counts change. The same
   * id again replaces the query (a scroll). Over the web, a `view.watch` message on the event
   * socket, sent again after every reconnect; in Electron, the `fleet.watch` call.
   */
  watch(watchId: string, query: ViewQuery): void;
  unwatch(watchId: string): void;
  /** Called on every link state change; `open` after a reconnect means events may have been missed. */
  onTransportState(listener: (state: TransportState) => void): () => void;
  readonly transportState: TransportState;
  /**
   * True once the server answered 401 (no or wrong credentials): not an error of any one call but
   * a state of the page, shown as the sign-in screen and nothing else.
   */
  readonly signInRequired: boolean;
  onSignInRequired(listener: () => void): () => void;
  /** The page came with an access token in its address (exchanged for a session). */
  readonly tokenGiven: boolean;
  /**
   * The page came with an access token while this browser was signed in already: nothing
   * is replaced until the person says so ({@link switchSession} or {@link keepSession}).
   */
  readonly pendingSwitch: PendingSwitch | null;
  onPendingSwitch(listener: () => void): () => void;
  /** Signs the current session out, signs in with the token of the address, and reloads. */
  switchSession(): Promise<void>;
  /** Drops the token of the address and goes on as who this browser was. */
  keepSession(): void;
  /** Signs out this browser, or (`everywhere`) every session of this person; the page then asks for a token. */
  signOut(everywhere: boolean): Promise<void>;
}

/** A token link opened in a signed-in browser: who it is signed in as now. */
export interface PendingSwitch {
  currentUser: string;
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
  // The first window of a watch is the answer to `fleet.watch`: handed to listeners as its event.
  const own = new Listeners<ConsoleEvent>();
  const call = async <M extends MethodName>(method: M, params: Params<M>): Promise<Result<M>> =>
    unwrap(method, await bridge.call(method, params));
  return {
    transport: 'electron',
    transportState: 'open',
    call,
    subscribe(listener) {
      const offOwn = own.add(listener);
      const off = bridge.subscribe((raw) => {
        const event = parseEvent(raw);
        if (event !== null) listener(event);
      });
      return () => {
        offOwn();
        off();
      };
    },
    watch(watchId, query) {
      call('fleet.watch', { watchId, query }).then(
        (view) => own.emit({ type: 'view', watchId, view }),
        (err: unknown) => own.emit({ type: 'view.error', watchId, error: errorData(err) }),
      );
    },
    unwatch(watchId) {
      void call('fleet.unwatch', { watchId }).catch(() => {});
    },
    // IPC to the app's own main process cannot drop while the window lives.
    onTransportState: () => () => {},
    // The app's own window needs no token.
    signInRequired: false,
    onSignInRequired: () => () => {},
    tokenGiven: false,
    pendingSwitch: null,
    onPendingSwitch: () => () => {},
    switchSession: async () => {},
    keepSession: () => {},
    signOut: async () => {},
  };
}

/**
 * The session secret (see src/server/guards/sessions.ts): the server's cookie alone is no
 * session, since every web server on this host receives it (cookies are not isolated by
 * port) and any of them can set it. This secret is kept in the page's own origin's storage,
 * which no other origin — another port of the same host included — can read or write, and
 * goes with every call (a header) and event stream (a WebSocket subprotocol). localStorage
 * rather than sessionStorage: the cookie is the browser's, so the secret is too, and a link
 * opened in a new tab of the same browser is signed in.
 */
const SECRET_KEY = 'worklease.session';
const SECRET_HEADER = 'x-worklease-session';

function storedSecret(): string | null {
  try {
    return window.localStorage.getItem(SECRET_KEY);
  } catch {
    return null;
  }
}

function storeSecret(secret: string | null): void {
  try {
    if (secret === null) window.localStorage.removeItem(SECRET_KEY);
    else window.localStorage.setItem(SECRET_KEY, secret);
  } catch {
    // Storage refused (a locked-down browser): the page signs in again each time.
  }
}

function sessionHeaders(): Record<string, string> {
  const secret = storedSecret();
  return secret === null ? {} : { [SECRET_HEADER]: secret };
}

/** The secret turned (the server rotates it while the session is used): keep the new one. */
function keepRotated(res: Response): void {
  const next = res.headers.get(SECRET_HEADER);
  if (next !== null && next !== '') storeSecret(next);
}

/** What the page's address said on load. */
interface Arrival {
  /** It carried a token (exchanged, or held for the person to decide). */
  tokenGiven: boolean;
  /** The token, held because this browser was signed in already. */
  held: { token: string; currentUser: string } | null;
}

/** `POST /api/session`: a new session for this browser; its secret is kept. Whether it worked. */
async function exchange(token: string, loc: Location): Promise<boolean> {
  try {
    const res = await fetch(new URL(apiPath('session'), loc.href), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, ...sessionHeaders() },
      credentials: 'same-origin',
    });
    if (!res.ok) return false;
    const body = (await res.json()) as { ok?: boolean; result?: { secret?: unknown } };
    if (typeof body.result?.secret !== 'string') return false;
    storeSecret(body.result.secret);
    return true;
  } catch {
    // Unreachable server: the first call reports it.
    return false;
  }
}

/** Who this browser's session is, or null when it has none that works. */
async function currentUser(loc: Location): Promise<string | null> {
  if (storedSecret() === null) return null;
  try {
    const res = await fetch(new URL(apiPath('call'), loc.href), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...sessionHeaders() },
      credentials: 'same-origin',
      body: JSON.stringify({ method: 'console.session', params: {} }),
    });
    if (!res.ok) return null;
    keepRotated(res);
    const body = (await res.json()) as { result?: { user?: unknown } };
    return typeof body.result?.user === 'string' ? body.result.user : null;
  } catch {
    return null;
  }
}

/**
 * Signs this browser in from a `?token=` in the address, which is removed from the address bar
 * first so it does not end up in history, bookmarks or screenshots. A browser signed in already
 * is never switched silently to whoever the link names: the token is held and the page asks
 * (a link from someone else must not make this person act as them). A wrong token is dropped
 * too: the calls then answer 401 and the page shows the sign-in screen.
 */
export async function exchangeToken(loc: Location = window.location): Promise<Arrival> {
  const url = new URL(loc.href);
  const token = url.searchParams.get('token');
  if (token === null) return { tokenGiven: false, held: null };
  url.searchParams.delete('token');
  window.history.replaceState(window.history.state, '', url.pathname + url.search + url.hash);
  if (token === '') return { tokenGiven: false, held: null };
  const current = await currentUser(loc);
  if (current !== null) return { tokenGiven: true, held: { token, currentUser: current } };
  await exchange(token, loc);
  return { tokenGiven: true, held: null };
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

/** Sends the page to `?token=…`, which it exchanges for a session on load. */
export function signIn(token: string, loc: Location = window.location): void {
  const url = new URL(loc.href);
  url.searchParams.set('token', token);
  loc.assign(url.toString());
}

function webClient(arrival: Promise<Arrival>): ConsoleClient {
  const events = new Listeners<ConsoleEvent>();
  const states = new Listeners<TransportState>();
  const signIns = new Listeners<void>();
  const switches = new Listeners<void>();
  let signInRequired = false;
  let tokenGiven = false;
  let held: Arrival['held'] = null;
  // One object per pending switch: React's useSyncExternalStore needs a stable snapshot.
  let pending: PendingSwitch | null = null;
  const signedIn = arrival.then((a) => {
    tokenGiven = a.tokenGiven;
    held = a.held;
    pending = held === null ? null : { currentUser: held.currentUser };
    if (held !== null) switches.emit();
  });
  const requireSignIn = () => {
    if (signInRequired) return;
    // The secret names a session that is gone: a sign-in starts afresh.
    storeSecret(null);
    signInRequired = true;
    signIns.emit();
  };
  let state: TransportState = 'connecting';
  let socket: WebSocket | null = null;
  /** Every view subscription, sent again on each new socket (a reconnect starts with none). */
  const watches = new Map<string, ViewQuery>();
  const send = (message: unknown) => {
    if (socket !== null && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
  };
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
    // The session cookie goes with the upgrade (same origin); the secret rides as a subprotocol,
    // the one thing a page may add to an upgrade. The server answers `worklease`.
    const secret = storedSecret();
    const ws = new WebSocket(
      url,
      secret === null ? ['worklease'] : ['worklease', `worklease.session.${secret}`],
    );
    socket = ws;
    ws.onopen = () => {
      attempt = 0;
      for (const [watchId, query] of watches) send({ type: 'view.watch', watchId, query });
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
    watch(watchId, query) {
      watches.set(watchId, query);
      send({ type: 'view.watch', watchId, query });
    },
    unwatch(watchId) {
      if (watches.delete(watchId)) send({ type: 'view.unwatch', watchId });
    },
    async call(method, params) {
      await signedIn;
      let res: Response;
      try {
        res = await fetch(new URL(apiPath('call'), window.location.href), {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...sessionHeaders() },
          credentials: 'same-origin',
          body: JSON.stringify({ method, params }),
        });
        keepRotated(res);
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
    get pendingSwitch() {
      return pending;
    },
    onPendingSwitch: (listener) => switches.add(listener),
    async switchSession() {
      if (held === null) return;
      const { token } = held;
      await fetch(new URL(apiPath('session'), window.location.href), {
        method: 'DELETE',
        headers: sessionHeaders(),
        credentials: 'same-origin',
      }).catch(() => {});
      storeSecret(null);
      await exchange(token, window.location);
      window.location.reload();
    },
    keepSession() {
      held = null;
      pending = null;
      switches.emit();
    },
    async signOut(everywhere) {
      await fetch(
        new URL(`${apiPath('session')}${everywhere ? '?everywhere=1' : ''}`, window.location.href),
        {
          method: 'DELETE',
          headers: sessionHeaders(),
          credentials: 'same-origin',
        },
      ).catch(() => {});
      socket?.close();
      requireSignIn();
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
