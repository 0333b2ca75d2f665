/**
 * The lease calls' own connections to PostgreSQL (index.ts, PgClient.query): a small pool of
 * sockets on which acquire, checkpoint, renew, release and readCheckpoint are written as
 * extended-protocol frames (Bind, Execute, Sync; Parse and Describe once per connection and
 * statement) and their replies read with a parser of their own, with none of a general client's
 * per-query machinery. `pg` stays for everything else: it opens each of these connections
 * (URL, TLS, authentication, startup parameters: exactly the pool's), and it carries every other
 * statement (console reads, admin calls, migrations, LISTEN).
 *
 * Why: the prepared one-row upsert of `npm run bench` through `pg.Pool` took 51 us of client CPU
 * per call at 16 in flight and 97 us at 1; written as frames like these on 16 plain connections,
 * 28 and 61 us, and 1.24x / 1.12x the calls per second (7 interleaved rounds of 4 000, load 0.3).
 * On a 2-core machine the client's CPU is taken from the server's: at 16 in flight it was the
 * largest part of a lease call's shortfall against that upsert.
 *
 * The guarantees stay those of the `pg` path (index.ts, PgClient):
 * - At most once: a call is written once, on a connection that is idle and alive, and never re-sent.
 *   A connection that breaks fails its call with BACKEND_UNAVAILABLE (it may have run), and the idle
 *   ones are dropped with it ({@link HotPool.dropIdle}; they most likely broke at the same moment).
 * - Deadlines: one per call (callTimeoutMs), the wait for a connection included; kept by the shared
 *   {@link DeadlineWatch}. A call past it fails and its connection is destroyed, so a late reply is
 *   never read as another call's; the server's statement_timeout (a startup parameter, as on the
 *   pool) cancels the statement, so an abandoned call does not keep holding row locks.
 * - Results are `pg`'s: column names from the statement's RowDescription, each value parsed by
 *   `pg.types.getTypeParser(oid)` as `pg` parses it; parameters encoded as `pg` encodes them
 *   (bytes as binary, everything else as text). A parameter of any other kind (a Date, an object,
 *   an array) makes the call go through `pg` instead ({@link encodeParams} returns null).
 * - Errors are the server's ErrorResponse fields (`code`, `detail`, …) on an Error, as `pg`'s
 *   DatabaseError carries them, classified by the same table (sql/errors.ts). NOTICEs reach the
 *   call's `onNotice`, as they do through `pg`.
 * - Connections are opened when a lease call needs one (at most `size`), so a process that only
 *   reads (the console, the CLI) never opens them, and closed after 30 s idle, as the pool's are.
 */
import net from 'node:net';
import pg from 'pg';
import { BackendUnavailableError } from '../../lease/errors.ts';
import { DeadlineWatch, tickFor } from '../deadlines.ts';
import type { Row, SqlNotice, Statement } from '../sql/client.ts';
import { classifySqlError, isConnectionError, PG_CONNECT_TIMEOUT, PG_PROTOCOL_ERROR } from '../sql/errors.ts';

/** Idle connections older than this are closed (pg.Pool's idleTimeoutMillis in index.ts). */
const IDLE_MS = 30_000;

/** A result column: its name and `pg`'s text parser for its type. */
interface Field {
  readonly name: string;
  readonly parse: (text: string) => unknown;
}

/** The error of an ErrorResponse, with the fields `pg`'s DatabaseError carries. */
export class PgServerError extends Error {
  override name = 'error';
  severity?: string;
  code?: string;
  detail?: string;
  hint?: string;
  position?: string;
  where?: string;
  schema?: string;
  table?: string;
  column?: string;
  dataType?: string;
  constraint?: string;
  routine?: string;
}

/** ErrorResponse / NoticeResponse field codes, as `pg` names them. */
const FIELD_NAMES: Record<number, keyof PgServerError> = {
  86: 'severity', // V (non-localized)
  67: 'code', // C
  68: 'detail', // D
  72: 'hint', // H
  80: 'position', // P
  87: 'where', // W
  115: 'schema', // s
  116: 'table', // t
  99: 'column', // c
  100: 'dataType', // d
  110: 'constraint', // n
  82: 'routine', // R
};

/** The fields of an ErrorResponse or NoticeResponse body buf[from, to). */
export function serverError(buf: Buffer, from: number, to: number): PgServerError {
  let message = '';
  const fields: Partial<Record<keyof PgServerError, string>> = {};
  let at = from;
  while (at < to && buf[at] !== 0) {
    const type = buf[at]!;
    const end = buf.indexOf(0, at + 1);
    if (end < 0 || end >= to) break;
    const value = buf.toString('utf8', at + 1, end);
    if (type === 77)
      message = value; // M
    else if (type === 83)
      fields.severity ??= value; // S (localized), when V is absent
    else {
      const name = FIELD_NAMES[type];
      if (name !== undefined) fields[name] = value;
    }
    at = end + 1;
  }
  return Object.assign(new PgServerError(message), fields);
}

type Param = string | Buffer | null;

/**
 * A call's parameters as `pg` sends them (its utils.prepareValue): null and undefined as NULL,
 * bytes (a Buffer or any typed array view) as themselves in binary format, strings, numbers and
 * bigints as their text. Null for anything else: the call then goes through `pg`.
 */
export function encodeParams(params: readonly unknown[]): Param[] | null {
  const out: Param[] = new Array(params.length);
  for (let i = 0; i < params.length; i++) {
    const v = params[i];
    if (v === null || v === undefined) out[i] = null;
    else if (typeof v === 'string') out[i] = v;
    else if (typeof v === 'number' || typeof v === 'bigint') out[i] = String(v);
    else if (Buffer.isBuffer(v)) out[i] = v;
    else if (ArrayBuffer.isView(v)) out[i] = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
    else return null;
  }
  return out;
}

/** A statement's fixed frames, built once per backend. */
interface Prepared {
  /** Parse (name, text, no parameter types): once per connection when named, with every call when not. */
  readonly parse: Buffer;
  /** Describe of the statement: its RowDescription, asked until the pool has it. */
  readonly describe: Buffer;
  /** The statement name as a C string, for Bind ("" for the unnamed statement). */
  readonly name: Buffer;
}

function message(type: number, body: Buffer): Buffer {
  const m = Buffer.allocUnsafe(5 + body.length);
  m[0] = type;
  m.writeInt32BE(4 + body.length, 1);
  body.copy(m, 5);
  return m;
}

function prepared(statement: Statement, named: boolean): Prepared {
  const name = Buffer.from(`${named ? statement.name : ''}\0`);
  return {
    parse: message(80, Buffer.concat([name, Buffer.from(`${statement.text}\0`), Buffer.from([0, 0])])),
    describe: message(68, Buffer.concat([Buffer.from('S'), name])),
    name,
  };
}

/** Execute (unnamed portal, all rows) then Sync: the same for every call. */
const EXECUTE_SYNC = Buffer.from([69, 0, 0, 0, 9, 0, 0, 0, 0, 0, 83, 0, 0, 0, 4]);

/**
 * The frames of a statement without parameters run before a call, in the same implicit
 * transaction (everything up to Sync is one): Parse of the unnamed statement, Bind, Execute. Used
 * behind a transaction pooler for the settings a call needs (`set_config(…, true)`: until the
 * transaction ends), which a session setting could not carry there. Its one row is not the call's.
 */
export function preludeFrames(sql: string): Buffer {
  const parse = message(80, Buffer.concat([Buffer.from(`\0${sql}\0`), Buffer.from([0, 0])]));
  // Bind: portal "", statement "", no parameter formats, no parameters, no result formats.
  const bind = message(66, Buffer.from([0, 0, 0, 0, 0, 0, 0, 0]));
  const execute = message(69, Buffer.from([0, 0, 0, 0, 0]));
  return Buffer.concat([parse, bind, execute]);
}

/**
 * The frames of one call: Parse and Describe when asked, then Bind (unnamed portal, the
 * statement, parameter formats, the parameters, text results), Execute and Sync, in one Buffer.
 */
export function callFrames(
  p: Prepared,
  params: readonly Param[],
  parse: boolean,
  describe: boolean,
  prelude: Buffer | null = null,
): Buffer {
  const n = params.length;
  let binary = false;
  let size = 0;
  const lengths: number[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const v = params[i]!;
    if (v === null) lengths[i] = -1;
    else if (typeof v === 'string') lengths[i] = Buffer.byteLength(v);
    else {
      lengths[i] = v.length;
      binary = true;
    }
    size += 4 + Math.max(0, lengths[i]!);
  }
  // Bind: portal "" (1), name, format count (2) [+ n formats], param count (2), params, result formats (2).
  const bindLen = 4 + 1 + p.name.length + 2 + (binary ? 2 * n : 0) + 2 + size + 2;
  const head =
    (prelude === null ? 0 : prelude.length) +
    (parse ? p.parse.length : 0) +
    (describe ? p.describe.length : 0);
  const out = Buffer.allocUnsafe(head + 1 + bindLen + EXECUTE_SYNC.length);
  let at = 0;
  if (prelude !== null) at += prelude.copy(out, at);
  if (parse) at += p.parse.copy(out, at);
  if (describe) at += p.describe.copy(out, at);
  out[at++] = 66;
  out.writeInt32BE(bindLen, at);
  at += 4;
  out[at++] = 0;
  at += p.name.copy(out, at);
  if (binary) {
    out.writeInt16BE(n, at);
    at += 2;
    for (let i = 0; i < n; i++) {
      out.writeInt16BE(params[i] !== null && typeof params[i] !== 'string' ? 1 : 0, at);
      at += 2;
    }
  } else {
    out.writeInt16BE(0, at);
    at += 2;
  }
  out.writeInt16BE(n, at);
  at += 2;
  for (let i = 0; i < n; i++) {
    const v = params[i]!;
    out.writeInt32BE(lengths[i]!, at);
    at += 4;
    if (v === null) continue;
    at += typeof v === 'string' ? out.write(v, at) : v.copy(out, at);
  }
  out.writeInt16BE(0, at);
  at += 2;
  EXECUTE_SYNC.copy(out, at);
  return out;
}

/** One call in flight on a connection, or waiting for one. */
interface Call {
  readonly deadline: number;
  readonly statement: Statement;
  readonly params: Param[];
  /** The parameters as the caller gave them (for {@link HotPool.fallback}). */
  readonly rawParams: readonly unknown[];
  readonly onNotice: ((notice: SqlNotice) => void) | undefined;
  readonly resolve: (rows: Row[]) => void;
  readonly reject: (err: Error) => void;
  /** Rows as the server's text in select-list order (SqlClient.queryText), not keyed objects. */
  readonly text: boolean;
  /** The key of its frames and columns: the statement name when named, else its text. */
  readonly key: string;
  /** Commands of the prelude still to complete: their rows are not the call's. */
  skip: number;
  /** The connection it was written on; null while it waits for one. */
  conn: Conn | null;
  fields: readonly Field[] | null;
  rows: (Row | (string | null)[])[];
  error: PgServerError | null;
}

/** One connection: a socket `pg` opened and logged in, read from here on by {@link Conn.onData}. */
class Conn {
  /** Statements parsed on this connection (ParseComplete seen). */
  readonly parsed = new Set<string>();
  call: Call | null = null;
  idleSince = 0;
  /** Bytes received that do not make a whole message yet, and how many the message needs. */
  private rest: Buffer[] = [];
  private restBytes = 0;
  private restNeeded = 0;
  dead = false;

  constructor(
    readonly socket: net.Socket,
    private readonly pool: HotPool,
  ) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    // 'close' follows an error; the call in flight then fails (BACKEND_UNAVAILABLE).
    socket.on('error', () => {});
    socket.on('close', () => this.pool.closed(this));
  }

  destroy(): void {
    this.dead = true;
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    try {
      this.read(chunk);
    } catch (err) {
      // A reply this parser cannot follow (a length past the message, a value its type parser
      // refuses): the connection is given up, its call fails, the process goes on.
      this.broken(`a malformed message (${err instanceof Error ? err.message : String(err)})`);
    }
  }

  private read(chunk: Buffer): void {
    if (this.dead) return;
    let buf = chunk;
    if (this.restBytes > 0) {
      // A large reply (a checkpoint's state) arrives in many chunks: joined once, when it is whole.
      this.rest.push(chunk);
      this.restBytes += chunk.length;
      if (this.restBytes < this.restNeeded) return;
      buf = Buffer.concat(this.rest, this.restBytes);
      this.rest = [];
      this.restBytes = 0;
    }
    let at = 0;
    let needed = 5;
    while (buf.length - at >= 5) {
      const length = buf.readInt32BE(at + 1);
      if (length < 4) {
        this.broken(`a message of length ${length}`);
        return;
      }
      const end = at + 1 + length;
      if (end > buf.length) {
        needed = end - at;
        break;
      }
      if (!this.message(buf[at]!, buf, at + 5, end)) return;
      at = end;
    }
    if (at < buf.length) {
      const left = buf.subarray(at);
      this.rest.push(left);
      this.restBytes = left.length;
      this.restNeeded = needed;
    }
  }

  /** Handles one backend message; false when the connection was given up. */
  private message(type: number, buf: Buffer, from: number, to: number): boolean {
    const call = this.call;
    switch (type) {
      case 68: {
        // DataRow
        if (call !== null && call.skip > 0) return true;
        if (call?.text) {
          call.rows.push(textRow(buf, from));
          return true;
        }
        if (call === null || call.fields === null) return this.broken('a row without a call');
        const n = buf.readInt16BE(from);
        if (n !== call.fields.length) return this.broken(`a row of ${n} columns for ${call.fields.length}`);
        const row: Row = {};
        let at = from + 2;
        for (let i = 0; i < n; i++) {
          const len = buf.readInt32BE(at);
          at += 4;
          const f = call.fields[i]!;
          if (len < 0) row[f.name] = null;
          else {
            row[f.name] = f.parse(buf.toString('utf8', at, at + len));
            at += len;
          }
        }
        call.rows.push(row);
        return true;
      }
      case 90: // ReadyForQuery: the call is done
        if (call === null) return this.broken('an answer without a call');
        this.call = null;
        this.pool.finished(this, call);
        return true;
      case 49: // ParseComplete
        if (call !== null && call.skip === 0) this.parsed.add(call.key);
        return true;
      case 84: // RowDescription
        if (call !== null) call.fields = this.pool.described(call.key, rowDescription(buf, from));
        return true;
      case 110: // NoData
        if (call !== null) call.fields = this.pool.described(call.key, []);
        return true;
      case 67: // CommandComplete
        if (call !== null && call.skip > 0) call.skip--;
        return true;
      case 69: // ErrorResponse
        if (call !== null) call.error = serverError(buf, from, to);
        return true;
      case 78: // NoticeResponse
        if (call?.onNotice !== undefined) {
          const n = serverError(buf, from, to);
          call.onNotice({ code: n.code, detail: n.detail });
        }
        return true;
      case 50: // BindComplete
      case 116: // ParameterDescription
      case 83: // ParameterStatus
      case 65: // NotificationResponse
        return true;
      default:
        return this.broken(`unexpected message '${String.fromCharCode(type)}'`);
    }
  }

  /** Not a stream this parser can follow any more: nothing after this can be matched to its call. */
  private broken(why: string): false {
    if (this.dead) return false;
    this.destroy();
    this.pool.failed(this, new Error(`${PG_PROTOCOL_ERROR} ${this.pool.server()}: ${why}`));
    return false;
  }
}

/** A DataRow body at `from` as the server's text, in column order (NULL as null). */
function textRow(buf: Buffer, from: number): (string | null)[] {
  const n = buf.readInt16BE(from);
  const row: (string | null)[] = new Array(n);
  let at = from + 2;
  for (let i = 0; i < n; i++) {
    const len = buf.readInt32BE(at);
    at += 4;
    if (len < 0) row[i] = null;
    else {
      if (at + len > buf.length) throw new RangeError('a value past the end of its row');
      row[i] = buf.toString('utf8', at, at + len);
      at += len;
    }
  }
  return row;
}

/** The columns of a RowDescription body at `from`. */
function rowDescription(buf: Buffer, from: number): Field[] {
  const n = buf.readInt16BE(from);
  const fields: Field[] = new Array(n);
  let at = from + 2;
  for (let i = 0; i < n; i++) {
    const end = buf.indexOf(0, at);
    const name = buf.toString('utf8', at, end);
    at = end + 1;
    const oid = buf.readInt32BE(at + 6);
    at += 18;
    fields[i] = { name, parse: pg.types.getTypeParser(oid, 'text') as (text: string) => unknown };
  }
  return fields;
}

export class HotPool {
  private readonly idle: Conn[] = [];
  private readonly busy = new Set<Conn>();
  private opening = 0;
  private readonly waiting: Call[] = [];
  private readonly frames = new Map<string, Prepared>();
  /** Each statement's result columns, from the first RowDescription any connection got. */
  private readonly fields = new Map<string, readonly Field[]>();
  private readonly watch: DeadlineWatch<Call>;
  private reaper: NodeJS.Timeout | null = null;
  private isClosed = false;
  /** Set when `pg` did not hand over a socket: {@link query} then answers null (calls go through `pg`). */
  private disabled = false;
  private readonly named: boolean;
  private readonly prelude: Buffer | null;

  constructor(
    /** Makes a client that connects like the pool's (connect.ts: host, settings, protocol guard). */
    private readonly newClient: () => pg.Client,
    private readonly size: number,
    private readonly timeoutMs: number,
    private readonly url: string,
    /** A connection broke: the other pool drops its idle ones too (index.ts). */
    private readonly onBroken: (err: Error) => void,
    /** Sends a call through `pg` (index.ts): for a `pg` whose socket cannot be taken over. */
    private readonly fallback: (
      statement: Statement,
      params: readonly unknown[],
      onNotice: ((n: SqlNotice) => void) | undefined,
    ) => Promise<Row[]>,
    /** `host:port` of the server connections go to now, for messages. */
    readonly server: () => string = () => url,
    /**
     * How statements are sent: named, parsed once per connection (connecting directly or through a
     * session pooler), or unnamed with every call, after `prelude` (the call's settings) in the same
     * round trip (behind a transaction pooler, where a connection's next transaction may run on
     * another server connection, one where a named statement is missing or is another client's).
     */
    mode: { named: boolean; prelude: string | null } = { named: true, prelude: null },
  ) {
    this.named = mode.named;
    this.prelude = mode.prelude === null ? null : preludeFrames(mode.prelude);
    this.watch = new DeadlineWatch<Call>(tickFor(timeoutMs), (call) => this.expire(call));
  }

  /** Connections open now (idle or busy), for tests. */
  get open(): number {
    return this.idle.length + this.busy.size;
  }

  /**
   * Runs a statement on one of these connections; null (the caller sends it through `pg`) for a
   * statement without a name while statements are named, a parameter of a kind only `pg` encodes,
   * or a `pg` that did not hand over its socket. `text`: rows as text arrays (queryText).
   */
  query(
    statement: Statement,
    params: readonly unknown[],
    onNotice?: (n: SqlNotice) => void,
    text = false,
  ): Promise<Row[]> | null {
    if (this.disabled || (this.named && statement.name === undefined)) return null;
    const encoded = encodeParams(params);
    if (encoded === null) return null;
    const key = this.named ? statement.name! : statement.text;
    return new Promise<Row[]>((resolve, reject) => {
      const call: Call = {
        deadline: Date.now() + this.timeoutMs,
        statement,
        params: encoded,
        rawParams: params,
        onNotice,
        resolve: resolve as (rows: Row[]) => void,
        reject,
        text,
        key,
        skip: 0,
        conn: null,
        fields: text ? null : (this.fields.get(key) ?? null),
        rows: [],
        error: null,
      };
      if (this.isClosed) {
        reject(
          classifySqlError(new Error('Cannot use a pool after calling end on the pool'), 'query', this.url),
        );
        return;
      }
      this.watch.add(call);
      const conn = this.idle.pop();
      if (conn !== undefined) this.write(conn, call);
      else {
        this.waiting.push(call);
        this.refill();
      }
    });
  }

  private write(conn: Conn, call: Call): void {
    const key = call.key;
    let p = this.frames.get(key);
    if (p === undefined) {
      p = prepared(call.statement, this.named);
      // Unnamed statements are keyed by their text: the admin reads' lists vary (statements.ts,
      // list), so their frames are not kept past a bound.
      if (this.frames.size < 256) this.frames.set(key, p);
    }
    this.busy.add(conn);
    conn.call = call;
    call.conn = conn;
    call.skip = this.prelude === null ? 0 : 1;
    const parse = !this.named || !conn.parsed.has(key);
    conn.socket.write(callFrames(p, call.params, parse, !call.text && call.fields === null, this.prelude));
  }

  /** Records a statement's columns (the first description wins: they are the same on every connection). */
  described(key: string, fields: Field[]): readonly Field[] {
    const known = this.fields.get(key);
    if (known !== undefined) return known;
    if (this.fields.size < 256) this.fields.set(key, fields);
    return fields;
  }

  /** A connection answered its call (ReadyForQuery). */
  finished(conn: Conn, call: Call): void {
    this.busy.delete(conn);
    this.watch.delete(call);
    const err = call.error;
    if (err !== null && isConnectionError(err)) {
      // The server is shutting this connection down (admin_shutdown, …): not reused.
      conn.destroy();
      this.dropIdle();
      this.onBroken(err);
    } else this.release(conn);
    if (err !== null) call.reject(classifySqlError(err, 'query', this.url));
    else call.resolve(call.rows as Row[]);
  }

  /** Opens a connection when calls wait for one and fewer than `size` are open or opening. */
  private refill(): void {
    if (!this.isClosed && this.waiting.length > this.opening && this.open + this.opening < this.size)
      this.connect();
  }

  /** Gives an idle connection to the oldest waiting call, or keeps it idle. */
  private release(conn: Conn): void {
    if (conn.dead || this.isClosed) {
      conn.destroy();
      this.refill();
      return;
    }
    const next = this.waiting.shift();
    if (next !== undefined) {
      this.write(conn, next);
      return;
    }
    conn.idleSince = Date.now();
    this.idle.push(conn);
    this.reap();
  }

  /** A connection's socket closed: its call (if any) may have run, and fails. */
  closed(conn: Conn): void {
    conn.dead = true;
    const i = this.idle.indexOf(conn);
    if (i >= 0) this.idle.splice(i, 1);
    const call = this.busy.has(conn) ? conn.call : null;
    // A terminated backend says why (57P01 admin_shutdown, …) before it closes the socket.
    if (call !== null) this.failed(conn, call.error ?? new Error('Connection terminated unexpectedly'), call);
    this.refill();
  }

  /** Fails `conn`'s call with a connection error, and drops every idle connection. */
  failed(conn: Conn, err: Error, call: Call | null = conn.call): void {
    this.busy.delete(conn);
    conn.call = null;
    this.dropIdle();
    if (!this.isClosed) this.onBroken(err);
    this.refill();
    if (call === null) return;
    this.watch.delete(call);
    call.reject(classifySqlError(err, 'query', this.url));
  }

  /** Closes the idle connections: another one to the same server broke (index.ts, PgClient.dropIdle). */
  dropIdle(): void {
    for (const c of this.idle.splice(0)) c.destroy();
  }

  private connect(): void {
    this.opening++;
    const client = this.newClient();
    client.on('error', () => {});
    client.connect((err: Error | null | undefined) => {
      this.opening--;
      const stream = (client as unknown as { connection?: { stream?: unknown } }).connection?.stream;
      if (err === null || err === undefined) {
        if (!(stream instanceof net.Socket)) {
          // A `pg` that no longer keeps its socket at connection.stream: every call goes through
          // `pg` from now on, the ones waiting here included.
          client.end().catch(() => {});
          this.disabled = true;
          for (const call of this.waiting.splice(0)) {
            this.watch.delete(call);
            this.fallback(call.statement, call.rawParams, call.onNotice).then(call.resolve, call.reject);
          }
          return;
        }
        if (this.isClosed) {
          stream.destroy();
          return;
        }
        // From here on the socket is read here: `pg`'s parser is detached from it, and so is the
        // frame check put before that parser (connect.ts, guardStream): Conn.read bounds every
        // message by its length itself, and the check would cost every call a copy of its
        // CommandComplete.
        stream.removeAllListeners('data');
        if (Object.hasOwn(stream, 'emit')) Reflect.deleteProperty(stream, 'emit');
        this.release(new Conn(stream, this));
        return;
      }
      // `pg`'s connect timeout is the call timeout: the server did not finish the handshake in time.
      // No call fails for it here; each waiting call keeps its own deadline (expire) and meets it
      // with "waiting for a connection … took over N ms", and one that still has time gets another
      // attempt. A call that came after this attempt began is not failed before its own deadline.
      if (err.message !== PG_CONNECT_TIMEOUT) {
        // Any other reason (refused, authentication, …) fails the oldest waiting call with it (as
        // pool.connect's callback does); the others keep waiting, for a connection another call
        // gives back or a later attempt opens.
        const call = this.waiting.shift();
        if (call !== undefined) {
          this.watch.delete(call);
          call.reject(classifySqlError(err, 'connecting', this.url));
        }
      }
      this.refill();
    });
  }

  /** A call past its deadline: waiting for a connection, or written and not answered. */
  private expire(call: Call): void {
    const conn = call.conn;
    if (conn === null) {
      const i = this.waiting.indexOf(call);
      if (i >= 0) this.waiting.splice(i, 1);
      call.reject(
        new BackendUnavailableError(`waiting for a connection to ${this.url} took over ${this.timeoutMs} ms`),
      );
      return;
    }
    // Destroyed, not reused: it may still carry this call's reply.
    conn.call = null;
    this.busy.delete(conn);
    conn.destroy();
    this.refill();
    call.reject(new BackendUnavailableError(`no answer from ${this.url} within ${this.timeoutMs} ms`));
  }

  /** Closes idle connections after {@link IDLE_MS}, checking every few seconds while any is idle. */
  private reap(): void {
    if (this.reaper !== null) return;
    this.reaper = setInterval(() => {
      const now = Date.now();
      for (let i = this.idle.length - 1; i >= 0; i--) {
        const c = this.idle[i]!;
        if (now - c.idleSince >= IDLE_MS) {
          this.idle.splice(i, 1);
          c.destroy();
        }
      }
      if (this.idle.length === 0 && this.reaper !== null) {
        clearInterval(this.reaper);
        this.reaper = null;
      }
    }, IDLE_MS / 6);
    this.reaper.unref();
  }

  /** Closes every connection; calls still waiting or in flight fail with BACKEND_UNAVAILABLE. */
  close(): void {
    this.isClosed = true;
    if (this.reaper !== null) clearInterval(this.reaper);
    this.reaper = null;
    for (const c of this.idle.splice(0)) c.destroy();
    for (const c of [...this.busy]) c.destroy();
    const err = classifySqlError(
      new Error('Cannot use a pool after calling end on the pool'),
      'query',
      this.url,
    );
    for (const call of this.waiting.splice(0)) {
      this.watch.delete(call);
      call.reject(err);
    }
  }
}
