/**
 * `GET /api/events`: the WebSocket event stream. One subscription to the
 * service for every client; each event is serialized once into a Buffer that
 * every client's socket queues by reference (ws frames an unmasked Buffer
 * without copying it), so 100 stalled clients hold one copy of the backlog,
 * not 100. A client whose send buffer passes the cap is closed with
 * {@link CLOSE_RESYNC}; one whose session ends (sign-out, expiry, revocation)
 * with {@link CLOSE_UNAUTHENTICATED}. Streams are capped per person, per
 * address and in all (guards/limits.ts); a cap refuses the stream more, never
 * closes an open one.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type RawData, WebSocket, WebSocketServer } from 'ws';
import type { Caller } from '../../console/access.ts';
import { CLOSE_RESYNC, CLOSE_UNAUTHENTICATED, type ConsoleEvent } from '../../console/api.ts';
import { ClientMessageSchema, WatchIdSchema } from '../../console/common/view.ts';
import type { ConsoleService } from '../../console/service.ts';
import type { ViewWatcher } from '../../console/views.ts';
import { errorToData, InvalidArgumentError } from '../../lease/errors.ts';
import type { Identified } from '../guards/identify.ts';
import { WS_PROTOCOL } from '../guards/identify.ts';
import type { Limits } from '../guards/limits.ts';
import type { Session, SessionStore } from '../guards/sessions.ts';
import { refuseUpgrade } from '../respond.ts';
import type { SecurityLog } from '../security-log.ts';

/** What the server knows of one open stream. */
export interface StreamClient {
  caller: Caller;
  via: 'proxy' | 'token' | 'session';
  session: Session | null;
  credential: string | null;
  address: string;
  identity: string;
}

export interface EventStreams {
  /** Opens a stream for an identified request (the guards have run), or refuses it by its caps. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, who: Extract<Identified, { ok: true }>): void;
  /** Closes every stream `pick` chooses, with `code`. */
  closeWhere(pick: (c: StreamClient) => boolean, code: number, reason: string): number;
  /** Every open stream (for a config reload to re-check). */
  clients(): IterableIterator<[WebSocket, StreamClient]>;
  /** Sends a stream its connection list again (its roles changed). */
  resendConnections(ws: WebSocket): void;
  readonly size: number;
  close(): void;
}

function onClientMessage(
  data: RawData,
  isBinary: boolean,
  watcher: ViewWatcher | undefined,
  reply: (event: ConsoleEvent) => void,
): void {
  const refuse = (watchId: string | null, message: string): void =>
    reply({ type: 'view.error', watchId, error: errorToData(new InvalidArgumentError(message)) });
  if (isBinary) {
    refuse(null, 'binary messages are not understood');
    return;
  }
  let json: unknown;
  try {
    json = JSON.parse(data.toString());
  } catch {
    refuse(null, 'a message must be JSON');
    return;
  }
  const parsed = ClientMessageSchema.safeParse(json);
  const given = (json as { watchId?: unknown } | null)?.watchId;
  const watchId = WatchIdSchema.safeParse(given).success ? (given as string) : null;
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    refuse(
      watchId,
      `invalid message: ${issue === undefined ? 'invalid' : `${issue.path.map(String).join('.') || 'message'}: ${issue.message}`}`,
    );
    return;
  }
  if (watcher === undefined) {
    refuse(watchId, 'this console has no view subscriptions');
    return;
  }
  const msg = parsed.data;
  if (msg.type === 'view.unwatch') {
    watcher.unwatch(msg.watchId);
    return;
  }
  try {
    watcher.watch(msg.watchId, msg.query);
  } catch (err) {
    reply({ type: 'view.error', watchId: msg.watchId, error: errorToData(err) });
  }
}

export function createEventStreams(options: {
  service: Pick<ConsoleService, 'subscribe' | 'connections' | 'canView'> &
    Partial<Pick<ConsoleService, 'watcher'>>;
  sessions: SessionStore;
  limits: Limits;
  log: SecurityLog;
  maxBufferedBytes: number;
  slowClientGraceMs: number;
  pingIntervalMs: number;
}): EventStreams {
  const { service, sessions, limits, log } = options;
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: 64 * 1024,
    // The page offers `worklease` and `worklease.session.<secret>`: the answer is always the
    // first, so the secret is never echoed back.
    handleProtocols: (offered) => (offered.has(WS_PROTOCOL) ? WS_PROTOCOL : false),
  });
  const clients = new Map<WebSocket, StreamClient>();

  const connectionsFor = (
    caller: Caller,
    all: Extract<ConsoleEvent, { type: 'connections' }>['connections'],
  ): ConsoleEvent => ({ type: 'connections', connections: all.filter((c) => service.canView(caller, c.id)) });

  const send = (ws: WebSocket, data: Buffer): void => {
    if (ws.readyState !== WebSocket.OPEN) return;
    if (ws.bufferedAmount > options.maxBufferedBytes) {
      // Dropping events would leave the client silently wrong; closing tells
      // it to reconnect and take fresh snapshots. A client that reads nothing
      // never sees the close frame: its socket is destroyed shortly after, so
      // its backlog is freed.
      ws.close(CLOSE_RESYNC, 'too far behind: reconnect and resync');
      setTimeout(() => ws.terminate(), options.slowClientGraceMs).unref();
      return;
    }
    ws.send(data, { binary: false });
  };

  const fanOut = (event: ConsoleEvent): void => {
    if (clients.size === 0) return;
    // A subscription's windows go to the socket that asked (see onViewMessage), never to all.
    if (event.type === 'view' || event.type === 'view.error') return;
    const connectionId =
      event.type === 'connection'
        ? event.connection.id
        : event.type === 'connections'
          ? null
          : event.type === 'job'
            ? event.job.connectionId
            : event.connectionId;
    let shared: Buffer | null = null;
    for (const [ws, { caller }] of clients) {
      if (connectionId !== null && !service.canView(caller, connectionId)) continue;
      if (event.type === 'connections') {
        send(ws, Buffer.from(JSON.stringify(connectionsFor(caller, event.connections))));
        continue;
      }
      shared ??= Buffer.from(JSON.stringify(event));
      send(ws, shared);
    }
  };
  const unsubscribe = service.subscribe(fanOut);

  const resendConnections = (ws: WebSocket): void => {
    const client = clients.get(ws);
    if (client === undefined) return;
    send(ws, Buffer.from(JSON.stringify(connectionsFor(client.caller, service.connections()))));
  };

  const onSocket = (ws: WebSocket, client: StreamClient): void => {
    clients.set(ws, client);
    if (client.session !== null) sessions.streamOpened(client.session);
    let alive = true;
    resendConnections(ws);
    ws.on('pong', () => {
      alive = true;
    });
    // The page's view subscriptions (src/console/common/view.ts ClientMessageSchema): each
    // message validated; an invalid one is answered with a view.error and acted on in no way.
    const watcher = service.watcher?.(client.caller, (e) => send(ws, Buffer.from(JSON.stringify(e))));
    ws.on('message', (data, isBinary) =>
      onClientMessage(data, isBinary, watcher, (e) => send(ws, Buffer.from(JSON.stringify(e)))),
    );
    const ping = setInterval(() => {
      if (!alive) {
        ws.terminate();
        return;
      }
      if (client.session !== null && !sessions.alive(client.session)) {
        if (!client.session.ended) {
          sessions.end(client.session);
          log.record('session-expired', {
            user: client.caller.user,
            via: client.caller.via,
            session: client.session.ref,
          });
        }
        ws.close(CLOSE_UNAUTHENTICATED, 'session expired: sign in again');
        return;
      }
      alive = false;
      ws.ping();
    }, options.pingIntervalMs);
    ping.unref();
    ws.on('close', () => {
      clearInterval(ping);
      watcher?.close();
      if (clients.delete(ws)) {
        limits.closeStream(client.identity, client.address);
        if (client.session !== null) sessions.streamClosed(client.session);
      }
    });
    ws.on('error', () => ws.terminate());
  };

  return {
    upgrade(req, socket, head, who) {
      const identity = `${who.caller.via}:${who.caller.user}`;
      const refused = limits.openStream(identity, who.address);
      if (refused !== null) {
        log.record('cap-refused', {
          user: who.caller.user,
          address: who.address,
          reason: `streams-${refused.reason}`,
        });
        refuseUpgrade(socket, refused.status, refused.message);
        return;
      }
      const client: StreamClient = {
        caller: who.caller,
        via: who.via,
        session: who.session,
        credential: who.credential,
        address: who.address,
        identity,
      };
      // Without verifyClient, ws completes (or refuses: a malformed upgrade gets its 400) before
      // handleUpgrade returns; a refused one never calls back, and its slot goes back here.
      let opened = false;
      try {
        wss.handleUpgrade(req, socket, head, (ws) => {
          opened = true;
          onSocket(ws, client);
        });
      } finally {
        if (!opened) limits.closeStream(identity, who.address);
      }
    },
    closeWhere(pick, code, reason) {
      let n = 0;
      for (const [ws, c] of clients) {
        if (!pick(c)) continue;
        ws.close(code, reason);
        setTimeout(() => ws.terminate(), options.slowClientGraceMs).unref();
        n++;
      }
      return n;
    },
    clients: () => clients.entries(),
    resendConnections,
    get size() {
      return clients.size;
    },
    close() {
      unsubscribe();
      for (const ws of clients.keys()) ws.terminate();
      wss.close();
    },
  };
}
