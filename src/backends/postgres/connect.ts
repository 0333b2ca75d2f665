/**
 * How every connection of a PostgreSQL backend is opened (the `pg.Pool`'s, the lease calls' own in
 * hot.ts, the LISTEN one): one `pg.Client` subclass per backend ({@link Connector.clientClass})
 * that picks the host, contains a server that speaks garbage, and applies the session settings.
 *
 * - **Hosts.** A URL may list several hosts (postgres-url.ts). With more than one, or with
 *   `target_session_attrs` given, the connector finds the first host that accepts connections and
 *   is acceptable (read-write: `transaction_read_only` off; primary: not in recovery; any) with a
 *   short-lived probe connection, and opens every connection there until a call meets a connection
 *   error, a read-only refusal (25006) or a shutdown (57P01): then the next connection probes again,
 *   in order. No call is ever re-sent: the one in flight fails BACKEND_UNAVAILABLE, the next finds
 *   the new primary. A one-host URL without target_session_attrs is never probed (no extra I/O).
 * - **A server that speaks garbage.** `pg-protocol` throws from inside the socket's 'data' handler
 *   on a message it cannot read (an authentication type it does not know, a malformed length): an
 *   uncaught exception that ends the process. Each connection's stream is wrapped so that such a
 *   throw destroys that socket with an error naming the server instead; `pg` then fails the
 *   connection (or its query) like any broken connection: BACKEND_UNAVAILABLE.
 * - **Settings.** Nothing goes in the start-up packet but what PgBouncer accepts (user, database,
 *   application_name, client_encoding): it refuses `statement_timeout` and `options`. Connecting
 *   directly or through a session pooler, the settings are one `SET …` round trip when a connection
 *   opens; through a transaction pooler a session setting would stay on a server connection that
 *   other clients get next, so there they go with every call instead (hot.ts, the prelude).
 */
import type { Duplex } from 'node:stream';
import pg from 'pg';
import { BackendUnavailableError } from '../../lease/errors.ts';
import type { PostgresUrl } from '../postgres-url.ts';
import { classifySqlError, PG_PROTOCOL_ERROR } from '../sql/errors.ts';

type Callback = (err: Error | null) => void;

/**
 * Wraps the streams `pg` reads so that a throw from its parser (or from a handler it calls, as the
 * SASL exchange's) destroys the socket with an error instead of escaping into the event loop.
 * `attachListeners` is the one method through which `pg` (8.x) subscribes to a stream, the plain
 * socket and the TLS one alike; a `pg` without it is left as it is.
 */
export function containProtocolErrors(client: pg.Client, server: () => string): void {
  const con = (client as unknown as { connection?: { attachListeners?: (stream: Duplex) => void } })
    .connection;
  const attach = con?.attachListeners;
  if (con === undefined || typeof attach !== 'function') return;
  con.attachListeners = (stream: Duplex) => {
    guardStream(stream, server);
    attach.call(con, stream);
  };
}

/** See {@link containProtocolErrors}; also used on the sockets hot.ts reads itself. */
export function guardStream(stream: Duplex, server: () => string): void {
  const emit = stream.emit;
  const frames = new FrameCheck();
  stream.emit = function guarded(this: Duplex, event: string | symbol, ...args: unknown[]): boolean {
    if (event !== 'data') return emit.call(this, event, ...args);
    try {
      // Checked before pg-protocol sees it: its parser loops for ever on some malformed messages.
      frames.check(args[0] as Buffer);
      return emit.call(this, event, ...args);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      stream.destroy(new Error(`${PG_PROTOCOL_ERROR} ${server()} (${why})`));
      return true;
    }
  } as typeof stream.emit;
}

/**
 * The message framing of what a server sends, checked as it arrives: a length below 4, and a
 * message whose C strings do not end inside it, are refused. `pg-protocol` reads a C string by
 * looking for its NUL byte with no bound: an ErrorResponse, ParameterStatus, CommandComplete,
 * NotificationResponse, SASL mechanism list or RowDescription whose last string is not
 * terminated sends that loop past the message and, where no NUL follows in its buffer, on for ever,
 * blocking the process (measured: an ErrorResponse of length 2 hung `pg.Client.connect` and every
 * timer of the process). Other messages are skipped by their length, their bytes never copied.
 */
export class FrameCheck {
  /** Bytes of the message being read: its header, then (for the types checked) its body. */
  #head: Buffer[] = [];
  #headBytes = 0;
  /** Body bytes still to skip or collect for the current message; -1 while in a header. */
  #left = -1;
  #type = 0;
  #body: Buffer[] | null = null;

  check(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.#left < 0) {
        const take = Math.min(5 - this.#headBytes, chunk.length - at);
        this.#head.push(chunk.subarray(at, at + take));
        this.#headBytes += take;
        at += take;
        if (this.#headBytes < 5) return;
        const head = Buffer.concat(this.#head, 5);
        this.#head = [];
        this.#headBytes = 0;
        this.#type = head[0]!;
        const length = head.readInt32BE(1);
        if (length < 4) throw new Error(`message '${String.fromCharCode(this.#type)}' of length ${length}`);
        this.#left = length - 4;
        this.#body = STRINGS.has(this.#type) ? [] : null;
        if (this.#left === 0) this.#end();
        continue;
      }
      const take = Math.min(this.#left, chunk.length - at);
      this.#body?.push(chunk.subarray(at, at + take));
      this.#left -= take;
      at += take;
      if (this.#left === 0) this.#end();
    }
  }

  #end(): void {
    const parts = this.#body;
    this.#left = -1;
    this.#body = null;
    if (parts === null) return;
    const body = Buffer.concat(parts);
    const type = String.fromCharCode(this.#type);
    if (this.#type === 84) {
      // RowDescription: int16 count, then per column a name and 18 bytes.
      if (body.length < 2) throw new Error('a RowDescription without its column count');
      let p = 2;
      for (let i = body.readInt16BE(0); i > 0; i--) {
        const nul = body.indexOf(0, p);
        if (nul < 0 || nul + 19 > body.length) throw new Error('a RowDescription whose columns overrun it');
        p = nul + 19;
      }
      return;
    }
    if (this.#type === 82) {
      // Authentication: only the SASL mechanism list (10) holds strings.
      if (body.length < 4) throw new Error('an authentication request without its type');
      if (body.readInt32BE(0) !== 10) return;
    }
    if (body.length === 0 || body[body.length - 1] !== 0)
      throw new Error(`a '${type}' message whose strings do not end in it`);
  }
}

/** Message types whose body holds C strings: E, N, S, C, A, R (SASL), T. */
const STRINGS: ReadonlySet<number> = new Set([69, 78, 83, 67, 65, 82, 84]);

/** What a probe found on one host. */
type Probe = { ok: true } | { ok: false; why: string };

export interface ConnectorOptions {
  readonly url: PostgresUrl;
  /** The redacted effective URL, for messages. */
  readonly redacted: string;
  /** pg.ClientConfig shared by every connection (connection string of host 0, application_name, …). */
  readonly config: pg.ClientConfig;
  /** `SET …` sent once on each new connection (none through a transaction pooler). */
  readonly sessionSql: string | null;
}

export class Connector {
  readonly #o: ConnectorOptions;
  /** Index of the host connections go to; null: probe first. */
  #current: number | null;
  #probing: Promise<number> | null = null;
  readonly #check: boolean;

  constructor(options: ConnectorOptions) {
    this.#o = options;
    const { url } = options;
    this.#check = url.targetSessionAttrs !== 'any' && (url.hosts.length > 1 || url.targetGiven);
    this.#current = url.hosts.length === 1 && !this.#check ? 0 : null;
  }

  /** `host:port` of the host connections go to now (the first one before any probe). */
  get server(): string {
    return this.#o.url.hostName(this.#current ?? 0);
  }

  /** The session settings of every connection but the ones behind a transaction pooler. */
  get sessionSql(): string | null {
    return this.#o.sessionSql;
  }

  /**
   * A call met a connection error, a read-only server or a shutdown: the next connection looks for
   * the acceptable host again (in order). A no-op for a one-host URL that is never probed.
   */
  stale(): void {
    if (this.#o.url.hosts.length > 1 || this.#check) this.#current = null;
  }

  /** The host for the next connection, probing when none is known. */
  async #target(): Promise<number> {
    if (this.#current !== null) return this.#current;
    this.#probing ??= this.#probe().finally(() => {
      this.#probing = null;
    });
    return this.#probing;
  }

  async #probe(): Promise<number> {
    const { url } = this.#o;
    const outcomes: string[] = [];
    for (let i = 0; i < url.hosts.length; i++) {
      const found = await this.#probeOne(i);
      if (found.ok) {
        this.#current = i;
        return i;
      }
      outcomes.push(`${url.hostName(i)}: ${found.why}`);
    }
    const wanted =
      url.targetSessionAttrs === 'any'
        ? 'reachable'
        : `a ${url.targetSessionAttrs} server (target_session_attrs)`;
    throw new BackendUnavailableError(
      `connecting failed: no host of ${this.#o.redacted} is ${wanted} (${outcomes.join('; ')})`,
      { details: { hosts: outcomes } },
    );
  }

  async #probeOne(i: number): Promise<Probe> {
    const h = this.#o.url.hosts[i]!;
    const client = new pg.Client(this.#o.config);
    // Set after construction: pg takes host and port from the connection string over the config's.
    Object.assign(client as unknown as { host: string; port: number }, { host: h.host, port: h.port });
    containProtocolErrors(client, () => this.#o.url.hostName(i));
    client.on('error', () => {});
    try {
      await client.connect();
      if (!this.#check) return { ok: true };
      const { rows } = await client.query<{ standby: boolean; ro: string }>(
        "SELECT pg_is_in_recovery() AS standby, current_setting('transaction_read_only') AS ro",
      );
      const row = rows[0];
      if (row === undefined) return { ok: false, why: 'no answer to the probe' };
      if (this.#o.url.targetSessionAttrs === 'primary' && row.standby) return { ok: false, why: 'a standby' };
      if (this.#o.url.targetSessionAttrs === 'read-write' && (row.standby || row.ro === 'on')) {
        return {
          ok: false,
          why: row.standby ? 'a standby (read-only)' : 'read-only (transaction_read_only)',
        };
      }
      return { ok: true };
    } catch (err) {
      return { ok: false, why: classifySqlError(err, 'probe', this.#o.url.hostName(i)).message };
    } finally {
      client.end().catch(() => {});
    }
  }

  /**
   * Connects `client` (made by {@link clientClass}): to the acceptable host, then the session
   * settings. A failure is `pg`'s error as it is (the callers classify it).
   */
  async connect(client: pg.Client, connect: () => Promise<unknown>): Promise<void> {
    const i = await this.#target();
    const h = this.#o.url.hosts[i]!;
    const c = client as unknown as { host: string; port: number };
    c.host = h.host;
    c.port = h.port;
    try {
      await connect();
      if (this.#o.sessionSql !== null) await client.query(this.#o.sessionSql);
    } catch (err) {
      this.stale();
      throw err;
    }
  }

  /** A `pg.Client` class (for `pg.Pool`'s `Client` option, and hot.ts) whose connect goes through {@link connect}. */
  clientClass(): typeof pg.Client {
    const connector = this;
    const server = (): string => connector.server;
    // Typed loosely: pg's types give connect() overloads a subclass cannot restate.
    const Base = pg.Client as unknown as new (config?: pg.ClientConfig) => object;
    const connect = pg.Client.prototype.connect as unknown as (this: object) => Promise<unknown>;
    class ConnectorClient extends Base {
      constructor(config?: pg.ClientConfig) {
        super(config);
        containProtocolErrors(this as unknown as pg.Client, server);
        // A connection that ends between its connect and the session settings (or while the pool
        // has not yet attached its own listener) emits 'error': without a listener, an uncaught
        // exception. The error reaches the caller through the connect or the query instead.
        (this as unknown as pg.Client).on('error', () => {});
      }
      connect(callback?: Callback): Promise<void> | undefined {
        const done = connector.connect(this as unknown as pg.Client, () => connect.call(this));
        if (callback === undefined) return done;
        done.then(
          () => callback(null),
          (err: unknown) => callback(err instanceof Error ? err : new Error(String(err))),
        );
        return undefined;
      }
    }
    return ConnectorClient as unknown as typeof pg.Client;
  }
}

/**
 * Whether a connection pooler sits between this client and the server: PgBouncer (any mode) answers
 * the start-up with a cancel key of its own, so the process id the client was given is not the
 * server process that runs its statements. A plain TCP proxy passes the server's own.
 */
export async function behindPooler(client: pg.Client): Promise<boolean> {
  const given = (client as unknown as { processID?: number | null }).processID;
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return typeof given === 'number' && rows[0]?.pid !== given;
}
