/**
 * The lease calls' own connection to a standalone Redis server (send.ts, Sender.runHot): a socket
 * that writes EVALSHA frames and reads their replies in order, with none of a general client's
 * per-command machinery. ioredis stays for everything else (connection set-up and its checks,
 * admin calls, the change watch, Redis Cluster and its redirects).
 *
 * Why: at 1 in flight a renew's EVALSHA sent through ioredis took 101–112 us per round trip and
 * 42–50 us of client user CPU; written on a bare socket with a reply parser like this one,
 * 79–95 us and 29–34 us (the same script, server and machine, 3 alternating runs of 20 000 each).
 * ioredis builds a Command per call (flattening its arguments, a promise, flags), queues it, and
 * routes the reply through its data handler; this writes one string and resolves one promise.
 *
 * The guarantees the lease calls need stay:
 * - At most once: a frame is written when it is sent (or into this tick's cork, flushed before any
 *   timer can run), never queued for later. If the socket closes, every call still waiting fails
 *   with "Connection is closed." (BACKEND_UNAVAILABLE: it may have run) and is never re-sent.
 *   While the socket is not ready, {@link ready} is false and the Sender sends through ioredis.
 * - Deadlines: every call has one (the Sender's callTimeoutMs); one interval timer, running only
 *   while calls wait, fails those past it with "Command timed out". A reply that comes later is
 *   read and dropped. All calls share one timeout, so they expire in the order they were written.
 * - Reconnects: forever, in the background, with the same backoff as the ioredis client
 *   (50 ms per attempt, at most 1 s), the same login (AUTH, SELECT) and TLS, and the same client
 *   name, so an operator's CLIENT LIST / CLIENT KILL sees one backend's connections together.
 *   Behind Sentinel it connects to the master the ioredis client reached, and is reset when that
 *   moves (send.ts).
 * - Corking, shared with the Sender (cork.ts): a call sent while none waits is written at once;
 *   calls sent while others wait are written into a cork flushed every 8 frames and at the end
 *   of the tick.
 *
 * Busy poll (`busyPollMs`, OpenOptions): while a lone call waits (written when no other call was
 * in flight), the event loop keeps polling the socket instead of sleeping, for at most that many
 * ms (0.2 by default), the way an adaptive lock spins before it parks. A thread asleep in
 * epoll_wait is woken by the kernel when the reply lands, and on an idle machine (a virtual one
 * most of all) that wake-up is a large part of a round trip on the same host: a PING through a
 * Node socket took 48 us, 41 us while polling (medians of 6 alternating runs of 4 000 each, shared
 * Redis 7.0 on loopback, load 0.5), for 13–14 us more client CPU per round trip after the first
 * run. The poll is a chain of setImmediate callbacks, so I/O and timers run between them as usual
 * (libuv polls without blocking while one is pending); it stops at the reply, at the bound, or
 * when the connection closes. It does not run in a process that may run on one CPU only, nor while
 * most polled replies come later than the bound (a server across a network; one lone call in 16
 * still polls, to see whether that changed), see poll.ts. With many calls in flight the loop has
 * work anyway and nothing polls.
 */
import net from 'node:net';
import tls from 'node:tls';
import { type RedisTarget, tlsFor } from './connection.ts';
import { Cork } from './cork.ts';
import { PollPolicy } from './poll.ts';

/** A Redis error reply (its message is the reply, e.g. `NOSCRIPT No matching script…`). */
export class WireReplyError extends Error {
  override name = 'ReplyError';
}

export type WireArg = string | Buffer | number;
/** One command of a {@link Wire.transaction}. */
export interface WireCommand {
  name: string;
  args: readonly WireArg[];
}
/** A piece of a frame as written to the socket. */
type Part = string | Buffer;

/** One call waiting for its reply. */
interface Waiting {
  readonly deadline: number;
  readonly buffers: boolean;
  resolve(value: unknown): void;
  reject(err: Error): void;
  /** Failed already (deadline, socket closed): its reply is read and dropped. */
  done: boolean;
  /** performance.now() when written, for a lone call that polls (poll.ts); else 0. */
  polled: number;
  /**
   * Replies to read and drop before this call's own: a transaction's `+OK` (MULTI) and `+QUEUED`s
   * ({@link Wire.transaction}); its own is EXEC's. 0 for a single command.
   */
  skip: number;
}

/** Marks a reply that has not fully arrived yet; {@link parseReply} then sets {@link needed}. */
const INCOMPLETE = Symbol('incomplete');
/** After INCOMPLETE: the buffer length from which parsing can get further (a bulk's end). */
let needed = 0;
type Parsed = { value: unknown; end: number } | typeof INCOMPLETE;

const CR = 13;

/** The end (index of CR) of the line starting at `from`, or -1. */
function lineEnd(buf: Buffer, from: number): number {
  const i = buf.indexOf(CR, from);
  return i < 0 || i + 1 >= buf.length ? -1 : i;
}

/** A decimal integer (optionally negative) in buf[from, to). */
function int(buf: Buffer, from: number, to: number): number {
  let i = from;
  let sign = 1;
  if (buf[i] === 45) {
    sign = -1;
    i++;
  }
  let n = 0;
  for (; i < to; i++) n = n * 10 + (buf[i]! - 48);
  return sign * n;
}

/**
 * Parses one RESP2 reply at `pos`: bulk and simple strings as UTF-8 strings (Buffers when
 * `buffers`), integers as numbers, nil as null, arrays as arrays, error replies as
 * {@link WireReplyError} values (inside arrays too, as ioredis returns them). The same shapes as
 * ioredis' replies, so the Sender's callers read either.
 */
export function parseReply(buf: Buffer, pos: number, buffers: boolean): Parsed {
  needed = buf.length + 1;
  if (pos >= buf.length) return INCOMPLETE;
  const e = lineEnd(buf, pos + 1);
  if (e < 0) return INCOMPLETE;
  switch (buf[pos]) {
    case 36: {
      // $<len>\r\n<bytes>\r\n
      const len = int(buf, pos + 1, e);
      if (len < 0) return { value: null, end: e + 2 };
      const start = e + 2;
      const end = start + len;
      if (end + 2 > buf.length) {
        needed = end + 2;
        return INCOMPLETE;
      }
      if (!buffers) return { value: buf.toString('utf8', start, end), end: end + 2 };
      // A copy: the reply may be kept (a checkpoint's state) and must not pin the socket's chunk.
      const out = Buffer.allocUnsafe(len);
      buf.copy(out, 0, start, end);
      return { value: out, end: end + 2 };
    }
    case 42: {
      // *<count>\r\n then count replies
      const count = int(buf, pos + 1, e);
      if (count < 0) return { value: null, end: e + 2 };
      const out: unknown[] = new Array(count);
      let at = e + 2;
      for (let i = 0; i < count; i++) {
        const r = parseReply(buf, at, buffers);
        if (r === INCOMPLETE) return INCOMPLETE;
        out[i] = r.value;
        at = r.end;
      }
      return { value: out, end: at };
    }
    case 58:
      return { value: int(buf, pos + 1, e), end: e + 2 };
    case 43:
      return {
        value: buffers ? Buffer.from(buf.subarray(pos + 1, e)) : buf.toString('utf8', pos + 1, e),
        end: e + 2,
      };
    case 45:
      return { value: new WireReplyError(buf.toString('utf8', pos + 1, e)), end: e + 2 };
    default:
      throw new Error(`unexpected byte ${buf[pos]} at the start of a Redis reply`);
  }
}

/**
 * A command as RESP2: the parts to write, strings and Buffers, in order. Without a Buffer argument
 * it is one string.
 */
export function frame(name: string, args: readonly WireArg[]): string | Part[] {
  let head = `*${args.length + 1}\r\n$${name.length}\r\n${name}\r\n`;
  let parts: Part[] | null = null;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (typeof a === 'string') head += `$${Buffer.byteLength(a)}\r\n${a}\r\n`;
    else if (typeof a === 'number') head += `$${String(a).length}\r\n${a}\r\n`;
    else {
      parts ??= [];
      parts.push(`${head}$${a.length}\r\n`, a);
      head = '\r\n';
    }
  }
  if (parts === null) return head;
  parts.push(head);
  return parts;
}

export interface WireOptions {
  /** CLIENT SETNAME. */
  name: string;
  connectTimeoutMs: number;
  /** Every call's timeout (the Sender's callTimeoutMs). */
  callTimeoutMs: number;
  /** Deadline checks, ms (deadlines.ts, tickFor). */
  tickMs: number;
  /** How long a lone call's wait may busy-poll, ms (see the header); 0: never. */
  busyPollMs: number;
  /**
   * Where to connect, asked at every (re)connect; undefined: not known now (try again after the
   * backoff). Default: the target's one node. Behind Sentinel: the master ioredis reached (send.ts).
   */
  address?: () => { host: string; port: number } | undefined;
}

export class Wire {
  private socket: net.Socket | tls.TLSSocket | null = null;
  private isReady = false;
  private closed = false;
  private attempts = 0;
  private retry: NodeJS.Timeout | null = null;
  /** Calls written and not answered yet, oldest first: waiting[head …]. */
  private waiting: Waiting[] = [];
  private head = 0;
  /** Bytes received that do not make a whole reply yet, and how many the next parse needs. */
  private rest: Buffer[] = [];
  private restBytes = 0;
  private restNeeded = 0;
  /** This tick's writes while others are in flight (cork.ts). */
  private readonly cork = new Cork();
  private sweeper: NodeJS.Timeout | null = null;
  /** Where {@link connect} went last (WireOptions.address). */
  private connectedTo: { host: string; port: number } | undefined;
  /** Busy poll (see the header): when a lone call polls, whether a poll chain runs, until when. */
  readonly pollPolicy: PollPolicy;
  private polling = false;
  private pollUntil = 0;

  constructor(
    private readonly target: RedisTarget,
    private readonly options: WireOptions,
  ) {
    this.pollPolicy = new PollPolicy(options.busyPollMs);
  }

  /** True while a busy poll runs (see the header). */
  get busyPolling(): boolean {
    return this.polling;
  }

  /** True while a frame sent now is written to a logged-in socket. */
  get ready(): boolean {
    return this.isReady;
  }

  /** Calls written and not answered (or failed) yet. */
  get inFlight(): number {
    return this.waiting.length - this.head;
  }

  /** Connects, unless connected, connecting, waiting to reconnect, or closed. */
  start(): void {
    if (this.socket === null && this.retry === null && !this.closed) this.connect();
  }

  /**
   * Writes `name args` and returns its reply; an error reply rejects with {@link WireReplyError}.
   * Only when {@link ready}: the Sender checks first.
   */
  call(name: string, args: readonly WireArg[], buffers: boolean): Promise<unknown> {
    return this.send(frame(name, args), 0, buffers);
  }

  /**
   * Writes `MULTI`, `commands` and `EXEC` in one write and returns EXEC's reply: an array of the
   * commands' replies, an error reply among them as a {@link WireReplyError} value. A transaction
   * the server discarded (a command refused while queued) rejects with EXECABORT; one whose
   * connection closed before EXEC ran nothing (the server drops the queued commands), but the call
   * still fails as any written call does (it cannot tell how far the server got).
   */
  transaction(commands: readonly WireCommand[], buffers: boolean): Promise<unknown> {
    // One string when no argument is a Buffer (one chunk to write), else the parts around them.
    let head = '*1\r\n$5\r\nMULTI\r\n';
    let parts: Part[] | null = null;
    for (const c of commands) {
      const f = frame(c.name, c.args);
      if (typeof f === 'string') head += f;
      else {
        parts ??= [];
        parts.push(head + (f[0] as string), ...f.slice(1, -1));
        head = f[f.length - 1] as string;
      }
    }
    head += '*1\r\n$4\r\nEXEC\r\n';
    if (parts === null) return this.send(head, commands.length + 1, buffers);
    parts.push(head);
    return this.send(parts, commands.length + 1, buffers);
  }

  private send(data: string | Part[], skip: number, buffers: boolean): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const w: Waiting = {
        deadline: Date.now() + this.options.callTimeoutMs,
        buffers,
        resolve,
        reject,
        done: false,
        skip,
        polled: 0,
      };
      if (this.write(data) && this.pollPolicy.choose()) {
        w.polled = performance.now();
        this.poll(w.polled);
      }
      this.waiting.push(w);
      if (this.sweeper === null) {
        this.sweeper = setInterval(() => this.sweep(), this.options.tickMs);
        this.sweeper.unref();
      }
    });
  }

  close(): void {
    this.closed = true;
    if (this.retry !== null) clearTimeout(this.retry);
    this.retry = null;
    this.socket?.destroy();
    this.drop(new Error('Connection is closed.'));
  }

  /** Writes a frame; true when it is a lone call's (written at once, no other call in flight). */
  private write(data: string | Part[]): boolean {
    const s = this.socket!;
    if (this.inFlight === 0 && !this.cork.active) {
      if (typeof data === 'string') s.write(data);
      else {
        // One writev for the frame's parts: the state Buffer is never copied.
        s.cork();
        for (const p of data) s.write(p);
        s.uncork();
      }
      return true;
    }
    this.cork.hold(s);
    if (typeof data === 'string') s.write(data);
    else for (const p of data) s.write(p);
    this.cork.wrote();
    return false;
  }

  /** Busy-polls (see the header) until a lone call written at `from` (performance.now()) is answered, or the bound. */
  private poll(from: number): void {
    this.pollUntil = from + this.pollPolicy.boundMs;
    if (this.polling) return;
    this.polling = true;
    setImmediate(this.pollStep);
  }

  private readonly pollStep = (): void => {
    if (this.inFlight === 0 || performance.now() >= this.pollUntil) {
      this.polling = false;
      return;
    }
    setImmediate(this.pollStep);
  };

  /**
   * Ends the connection (the calls waiting on it fail, as on any close) and connects again after
   * the backoff, to the address asked then: the master moved (send.ts, Sentinel).
   */
  reset(): void {
    this.socket?.destroy();
  }

  /** The address connected to (or connecting), if any. */
  get peer(): { host: string; port: number } | undefined {
    return this.connectedTo;
  }

  /** Connects again after the backoff (50 ms per attempt, at most 1 s). */
  private later(): void {
    this.attempts++;
    this.retry = setTimeout(
      () => {
        this.retry = null;
        if (!this.closed) this.connect();
      },
      Math.min(50 * this.attempts, 1000),
    );
    this.retry.unref();
  }

  private connect(): void {
    const node = this.options.address === undefined ? this.target.nodes[0]! : this.options.address();
    this.connectedTo = node;
    if (node === undefined) {
      this.later();
      return;
    }
    const socket = this.target.tls
      ? tls.connect({ host: node.host, port: node.port, ...tlsFor(node.host) })
      : net.connect({ host: node.host, port: node.port });
    this.socket = socket;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 30_000);
    socket.setTimeout(this.options.connectTimeoutMs, () => {
      if (!this.isReady) socket.destroy(new Error('connect ETIMEDOUT'));
    });
    socket.on(this.target.tls ? 'secureConnect' : 'connect', () => this.login(socket));
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    // 'close' follows; the calls waiting then fail with "Connection is closed." (BACKEND_UNAVAILABLE).
    socket.on('error', () => {});
    socket.on('close', () => this.onClose(socket));
  }

  /**
   * AUTH, SELECT and CLIENT SETNAME in one write; ready when all three answered. A refused AUTH or
   * SELECT closes the socket (and the next attempt follows the backoff); a refused CLIENT SETNAME
   * (an ACL without `client`) is ignored, as ioredis ignores it for its own connection.
   */
  private login(socket: net.Socket): void {
    const t = this.target;
    const steps: Array<{ args: WireArg[]; required: boolean }> = [];
    if (t.password !== undefined) {
      const args = t.username === undefined ? ['AUTH', t.password] : ['AUTH', t.username, t.password];
      steps.push({ args, required: true });
    }
    if (t.db !== 0) steps.push({ args: ['SELECT', String(t.db)], required: true });
    steps.push({ args: ['CLIENT', 'SETNAME', this.options.name], required: false });
    let left = steps.length;
    const answered = (): void => {
      if (--left === 0 && this.socket === socket) {
        socket.setTimeout(0);
        this.isReady = true;
        this.attempts = 0;
      }
    };
    let out = '';
    for (const { args, required } of steps) {
      this.waiting.push({
        deadline: Number.POSITIVE_INFINITY,
        buffers: false,
        resolve: answered,
        reject: () => {
          if (!required) return answered();
          socket.destroy();
        },
        done: false,
        skip: 0,
        polled: 0,
      });
      out += frame(args[0] as string, args.slice(1)) as string;
    }
    socket.write(out);
  }

  private onData(chunk: Buffer): void {
    let buf = chunk;
    if (this.restBytes > 0) {
      // A large reply (a checkpoint's state) arrives in many chunks: join them once it can parse.
      this.rest.push(chunk);
      this.restBytes += chunk.length;
      if (this.restBytes < this.restNeeded) return;
      buf = Buffer.concat(this.rest, this.restBytes);
      this.rest = [];
      this.restBytes = 0;
    }
    let pos = 0;
    while (this.head < this.waiting.length) {
      const w = this.waiting[this.head]!;
      let r: Parsed;
      try {
        r = parseReply(buf, pos, w.buffers);
      } catch {
        // Not a reply stream any more: nothing after this can be matched to its call.
        this.socket?.destroy();
        return;
      }
      if (r === INCOMPLETE) break;
      pos = r.end;
      if (w.skip > 0) {
        // MULTI's +OK or a +QUEUED: a command refused while queued also makes EXEC fail (EXECABORT).
        w.skip--;
        continue;
      }
      this.waiting[this.head++] = undefined as unknown as Waiting;
      if (w.polled !== 0) this.pollPolicy.answered(performance.now() - w.polled);
      if (!w.done) {
        w.done = true;
        if (r.value instanceof WireReplyError) w.reject(r.value);
        else w.resolve(r.value);
      }
    }
    if (this.head === this.waiting.length) {
      this.waiting = [];
      this.head = 0;
    } else if (this.head > 1024) {
      this.waiting = this.waiting.slice(this.head);
      this.head = 0;
    }
    if (pos < buf.length) {
      const left = buf.subarray(pos);
      this.rest.push(left);
      this.restBytes = left.length;
      this.restNeeded = needed - pos;
    }
  }

  private onClose(socket: net.Socket): void {
    if (this.socket !== socket) return;
    this.socket = null;
    this.isReady = false;
    this.rest = [];
    this.restBytes = 0;
    this.drop(new Error('Connection is closed.'));
    if (!this.closed) this.later();
  }

  /** Fails every waiting call with `err` (the socket is gone: each may or may not have run). */
  private drop(err: Error): void {
    const waiting = this.waiting;
    const from = this.head;
    this.waiting = [];
    this.head = 0;
    for (let i = from; i < waiting.length; i++) {
      const w = waiting[i]!;
      if (w.done) continue;
      w.done = true;
      w.reject(err);
    }
    this.stopSweeper();
  }

  /**
   * Fails the calls past their deadline. They were written in deadline order (one timeout for all),
   * so the reply queue is the watch: no Set entry per call, as deadlines.ts' DeadlineWatch keeps for
   * ioredis' commands, whose order it does not see.
   */
  private sweep(): void {
    const now = Date.now();
    for (let i = this.head; i < this.waiting.length; i++) {
      const w = this.waiting[i]!;
      if (w.deadline > now) break;
      if (w.done) continue;
      w.done = true;
      w.reject(new Error('Command timed out'));
    }
    if (this.inFlight === 0) this.stopSweeper();
  }

  private stopSweeper(): void {
    if (this.sweeper !== null) clearInterval(this.sweeper);
    this.sweeper = null;
  }
}
