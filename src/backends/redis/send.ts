/**
 * How the Redis backend sends a command: at most once, bounded by the call deadline, on a connected
 * socket, with this tick's writes corked together (standalone) and a script re-sent as EVAL only
 * after NOSCRIPT. Every call of the backend (index.ts, admin.ts, feed.ts, listing.ts, open.ts)
 * goes through {@link Sender}. Connection and retry policy: connection.ts.
 */
import { createHash } from 'node:crypto';
import type { Writable } from 'node:stream';
import { Command, type Redis } from 'ioredis';
import {
  BackendUnavailableError,
  DatasetLostError,
  NotDurableError,
  type WorkleaseError,
} from '../../lease/errors.ts';
import type { ResolvedOptions } from '../common.ts';
import { DeadlineWatch, tickFor } from '../deadlines.ts';
import type { RedisClient, RedisTarget } from './connection.ts';
import { Cork } from './cork.ts';
import { classifyRedisError } from './errors.ts';
import * as historyLua from './history-scripts.ts';
import { DEFAULT_BUCKETS, Layout } from './layout.ts';
import { defaultBusyPollMs } from './poll.ts';
import type { ScriptDef } from './scripts.ts';
import * as lua from './scripts.ts';
import { WireFollower } from './sentinel.ts';
import { Wire, type WireCommand, WireReplyError } from './wire.ts';

export type Arg = string | Buffer | number;

export interface Script extends ScriptDef {
  sha: string;
  /** numberOfKeys as the decimal string EVALSHA sends. */
  keyCount: string;
  /**
   * The same script without its wake-ups (scripts.ts, WAKE), which standalone Redis runs instead;
   * absent for a script that publishes none.
   */
  standalone?: Script;
}
function script(def: ScriptDef): Script {
  const sc: Script = {
    ...def,
    sha: createHash('sha1').update(def.lua).digest('hex'),
    keyCount: String(def.numberOfKeys),
  };
  if (lua.wakes(def)) sc.standalone = script(lua.withoutWake(def));
  return sc;
}
export const S: Record<string, Script> & {
  [K in keyof typeof lua as (typeof lua)[K] extends ScriptDef ? K : never]: Script;
} & { [K in keyof typeof historyLua]: Script } = {
  acquire: script(lua.acquire),
  renew: script(lua.renew),
  checkpoint: script(lua.checkpoint),
  checkpointStaged: script(lua.checkpointStaged),
  release: script(lua.release),
  forceRelease: script(lua.forceRelease),
  requestRelease: script(lua.requestRelease),
  readCheckpoint: script(lua.readCheckpoint),
  readState: script(lua.readState),
  prune: script(lua.prune),
  indexCatchUp: script(lua.indexCatchUp),
  indexRebuild: script(lua.indexRebuild),
  changesRead: script(lua.changesRead),
  streamHead: script(lua.streamHead),
  migrate: script(lua.migrate),
  markReady: script(lua.markReady),
  hold: script(historyLua.hold),
  unhold: script(historyLua.unhold),
  handoffRead: script(historyLua.handoffRead),
  historyPrune: script(historyLua.historyPrune),
};

/** Command options, shared by every command (no object per call). */
const BUFFER_REPLY = {};
const UTF8_REPLY = { replyEncoding: 'utf8' as const };

/**
 * A command that knows whether it was ever handed to a socket. A call that
 * failed before that provably never reached the server, so sending it again
 * is not a second attempt; one that was written may have run, so it is never
 * re-sent (connection.ts). A command whose caller already gave up (timed out)
 * while it sat in a node's queue is written as a PING instead, so it can never
 * be applied late.
 */
class TrackedCommand extends Command {
  written = false;
  /** Set when the watchdog gave up on this command. */
  abandoned = false;

  constructor(
    name: string,
    args: Arg[],
    buffers: boolean,
    readonly deadline: number,
    /** A keyless command (WAIT) goes to the Cluster master of this key's slot. */
    private readonly routeKey?: string,
  ) {
    super(name, args, buffers ? BUFFER_REPLY : UTF8_REPLY);
  }

  override getSlot(): number {
    return this.routeKey === undefined ? super.getSlot() : new Command('get', [this.routeKey]).getSlot();
  }

  /**
   * The frame ioredis writes. A command with a Buffer argument (a checkpoint's state) written into
   * the cork ({@link Sender.cork}) hands the socket its head, each Buffer as it is and the rest,
   * and returns the tail for ioredis to write: the cork joins them into the same writev, and the
   * state is never copied. ioredis would copy the whole frame into one new Buffer first (its
   * MixedBuffers). Checkpoints of 1 KiB at 64 in flight on the shared Redis 7.0, 60 000 per run,
   * 10 alternating pairs of runs (before, after): medians 28.8k/s and 36.8 us of client CPU per call
   * with the copy, 31.4k/s and 33.6 us without; the pairs' ratios 0.96–1.33, median 1.07.
   * Uncorked (a lone call) the frame stays one write, a copy: three writes would be three syscalls.
   */
  override toWritable(socket: object): string | Buffer {
    if (this.abandoned) return '*1\r\n$4\r\nPING\r\n';
    this.written = true;
    const out = socket as Writable;
    if (out.writableCorked === 0 || !(this as unknown as { bufferMode?: boolean }).bufferMode)
      return super.toWritable(socket);
    const args = this.args as Array<string | Buffer>;
    let head = `*${args.length + 1}\r\n$${this.name.length}\r\n${this.name}\r\n`;
    for (let i = 0; i < args.length; i++) {
      const a = args[i]!;
      if (typeof a === 'string') head += `$${Buffer.byteLength(a)}\r\n${a}\r\n`;
      else {
        out.write(`${head}$${a.length}\r\n`);
        out.write(a);
        head = '\r\n';
      }
    }
    return head;
  }
}

/**
 * Gives up on a command at its deadline: it fails now, and if it still sits in a queue it is written
 * as a PING (TrackedCommand.toWritable), so it can never be applied late.
 */
function abandon(cmd: TrackedCommand): void {
  cmd.abandoned = true;
  cmd.reject(new Error('Command timed out'));
}

/**
 * When `err` is a NOSCRIPT reply to an EVALSHA of one of {@link S} (the server's script cache was
 * flushed or restarted: the script did not run), the same call's EVAL arguments: the script's text
 * in place of its sha. Otherwise undefined.
 */
function evalOnNoScript(err: unknown, evalshaArgs: Arg[]): Arg[] | undefined {
  if (!/^NOSCRIPT/.test((err as Error).message ?? '')) return undefined;
  const sc = Object.values(S)
    .flatMap((x) => (x.standalone === undefined ? [x] : [x, x.standalone]))
    .find((x) => x.sha === evalshaArgs[0]);
  return sc === undefined ? undefined : [sc.lua, ...evalshaArgs.slice(1)];
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export type Nullable = string | null;

/**
 * One backend's command path: the client, the key layout and dataset id it opened (open.ts), the
 * cork, and the watchdog that times calls out.
 */
export class Sender {
  readonly kind: 'redis' | 'redis-cluster';
  readonly url: string;
  readonly prefix: string;
  readonly callTimeoutMs: number;
  /** A Sentinel target (connection.ts): the master moves. */
  private readonly sentinel: boolean;
  /** Behind Sentinel, keeps {@link wire} at the master (sentinel.ts). */
  private readonly follower: WireFollower | undefined;
  /** Set by checkLayout (open.ts) from the prefix's meta key, before the first lease call. */
  layout: Layout;
  /** The dataset id every script checks (layout.ts, Dataset identity); set by checkLayout (open.ts). */
  dataset = '';
  private readyWait: Promise<void> | null = null;
  /** Holds this tick's writes to ioredis' socket while others are in flight (cork.ts). */
  private readonly corked = new Cork();
  /** Times out commands at their call deadline, with one coarse timer (deadlines.ts). */
  private readonly watchdog: DeadlineWatch<TrackedCommand>;
  /**
   * The lease calls' own connection (wire.ts), standalone and behind Sentinel (to the master the
   * ioredis client reached: sentinel.ts, WireFollower): a Cluster keeps ioredis, which
   * follows its redirects, and with `durability` on every lease call goes through ioredis, since
   * WAIT confirms only what its own connection wrote. Connected on the first lease call, so a
   * process that only reads (the console, the CLI) never opens it.
   */
  private readonly wire: Wire | null;

  constructor(
    readonly client: RedisClient,
    readonly target: RedisTarget,
    readonly options: ResolvedOptions,
  ) {
    this.prefix = options.keyPrefix;
    this.callTimeoutMs = options.callTimeoutMs;
    this.layout = new Layout(this.prefix, DEFAULT_BUCKETS);
    this.watchdog = new DeadlineWatch<TrackedCommand>(tickFor(this.callTimeoutMs), abandon);
    this.kind = target.kind;
    this.url = target.redacted;
    this.sentinel = target.sentinel !== undefined;
    let follower: WireFollower | undefined;
    this.wire =
      target.kind === 'redis' && options.durability.replicas === 0
        ? new Wire(target, {
            name: `worklease:${options.keyPrefix}`,
            connectTimeoutMs: Math.max(1, Math.floor(this.callTimeoutMs / 2)),
            callTimeoutMs: this.callTimeoutMs,
            tickMs: tickFor(this.callTimeoutMs),
            busyPollMs: options.busyPollMs ?? defaultBusyPollMs(),
            ...(this.sentinel ? { address: () => follower?.address() } : {}),
          })
        : null;
    // Behind Sentinel the lease calls' connection goes where ioredis went: the master it asked the
    // sentinels for and checked (connection.ts). When ioredis reaches another one, it follows.
    if (this.sentinel && this.wire !== null) follower = new WireFollower(client as Redis, this.wire);
    this.follower = follower;
  }

  /**
   * A failure on the lease calls' connection, classified. Behind Sentinel a READONLY reply means
   * the master was demoted under it: both connections ask again (sentinel.ts, WireFollower).
   */
  private wireFailure(err: unknown, op: string): WorkleaseError {
    if (/^READONLY/.test((err as Error).message ?? '')) this.follower?.demoted();
    return this.classify(err, op);
  }

  /** `err` of `op` as a worklease error (errors.ts); READONLY is transient only behind Sentinel. */
  classify(err: unknown, op: string): WorkleaseError {
    return classifyRedisError(err, op, this.url, undefined, this.target.sentinel !== undefined);
  }

  /** Closes the lease calls' connection; the ioredis client is the driver's to close. */
  close(): void {
    this.wire?.close();
  }

  /**
   * Sends a lease call's EVALSHA on the lease calls' own connection when it is ready, else (not
   * connected yet, reconnecting, a Cluster, durability on) through ioredis with {@link send}. Both
   * write a call at most once; a NOSCRIPT reply (the script was not run) is answered by sending the
   * script as EVAL through ioredis, which loads it for both connections.
   */
  private async hot<T>(op: string, args: Arg[], buffers: boolean): Promise<T> {
    const w = this.wire;
    if (w === null || !w.ready) {
      w?.start();
      return this.send<T>(op, 'evalsha', args, buffers);
    }
    try {
      return (await w.call('evalsha', args, buffers)) as T;
    } catch (err) {
      const asEval = evalOnNoScript(err, args);
      if (asEval !== undefined) return this.send<T>(op, 'eval', asEval, buffers);
      throw this.wireFailure(err, op);
    }
  }

  /**
   * Corks a standalone server's socket for this tick's writes (cork.ts): ioredis writes each
   * command on its own. {@link send} calls it only while other commands are in flight.
   */
  cork(): void {
    if (this.kind !== 'redis') return;
    const stream = (this.client as Redis).stream;
    if (stream !== undefined) this.corked.hold(stream);
  }

  /** True when a command sent now is written to a live socket at once (not queued, not rejected). */
  connected(): boolean {
    if (this.client.status !== 'ready') return false;
    if (this.kind === 'redis-cluster') return true;
    return (this.client as Redis).stream?.writable === true;
  }

  /**
   * Sends one command and returns its reply. It waits (bounded by callTimeoutMs) for a connected
   * socket instead of letting ioredis queue the call, and sends again only what provably never
   * reached the server: a command rejected before it was written, or an EVALSHA answered NOSCRIPT
   * (then as EVAL, which also loads the script). Anything written is sent at most once.
   */
  async send<T>(
    op: string,
    name: string,
    args: Arg[],
    buffers = false,
    routeKey: string | undefined = undefined,
  ): Promise<T> {
    const deadline = Date.now() + this.callTimeoutMs;
    let cmdName = name;
    let cmdArgs = args;
    for (;;) {
      if (!this.connected()) await this.waitConnected(op, deadline);
      const cmd = new TrackedCommand(cmdName, cmdArgs, buffers, deadline, routeKey);
      if (this.watchdog.size > 0) this.cork();
      this.watchdog.add(cmd);
      try {
        const replied = this.client.sendCommand(cmd);
        this.corked.wrote();
        const reply = (await replied) as T;
        this.watchdog.delete(cmd);
        return reply;
      } catch (err) {
        this.watchdog.delete(cmd);
        const e = this.classify(err, op);
        const asEval = cmdName === 'evalsha' ? evalOnNoScript(err, cmdArgs) : undefined;
        if (asEval !== undefined) {
          cmdName = 'eval';
          cmdArgs = asEval;
          continue;
        }
        if (!cmd.written && e.code === 'BACKEND_UNAVAILABLE' && Date.now() < deadline) {
          await sleep(Math.min(20, Math.max(0, deadline - Date.now())));
          continue;
        }
        throw e;
      }
    }
  }

  run<T>(op: string, sc: Script, keysAndArgs: Arg[], buffers = false): Promise<T> {
    const s = this.scriptFor(sc);
    return this.send<T>(op, 'evalsha', [s.sha, s.keyCount, ...keysAndArgs], buffers);
  }

  /** `sc` as this server runs it: without wake-ups on standalone Redis (scripts.ts, WAKE). */
  private scriptFor(sc: Script): Script {
    return this.kind === 'redis' ? (sc.standalone ?? sc) : sc;
  }

  /**
   * Runs a script on bucket `b` that starts with the dataset check (scripts.ts, IDENTITY): appends
   * the bucket's `id` key to `keys` and the dataset id to `args`, and turns a `LOST` reply into
   * DATASET_LOST. The feed and admin scripts go through here. The EVALSHA arguments are built in one
   * array (not spread into two more), the key count is a string made once per script.
   */
  async runIn<T>(op: string, sc: Script, b: number, keys: Arg[], args: Arg[], buffers = false): Promise<T> {
    const a = this.frame(sc, keys, args, this.layout.id[b]!, this.dataset);
    return this.checkLost<T>(op, b, await this.send<T>(op, 'evalsha', a, buffers));
  }

  /** acquire's form of {@link runIn}: the script builds the `id` key itself (scripts.ts, ACQUIRE_IDENTITY). */
  async runChecked<T>(op: string, sc: Script, b: number, keys: Arg[], args: Arg[]): Promise<T> {
    const a = this.frame(sc, keys, args, undefined, this.dataset);
    return this.checkLost<T>(op, b, await this.hot<T>(op, a, false));
  }

  /**
   * Runs a script of a call that carries a lease (renew, checkpoint, release, readCheckpoint), which
   * takes no dataset id: its refusals end with the bucket's stored one (scripts.ts, REFUSE), and a
   * refusal from a dataset other than the one this backend opened is DATASET_LOST.
   */
  async runHeld<T>(op: string, sc: Script, b: number, keys: Arg[], args: Arg[], buffers = false): Promise<T> {
    return this.checkRefusal(op, b, await this.hot<T>(op, this.frame(sc, keys, args), buffers));
  }

  /**
   * `commands` as one transaction on the lease calls' connection (MULTI … EXEC in one write: no
   * other command runs in between, and a connection lost before EXEC runs none of them), for the
   * calls whose payload would otherwise pass through Lua (index.ts, checkpoint and readCheckpoint).
   * Returns every command's reply, an error reply as a WireReplyError value (`fail` turns it into
   * the call's error). Undefined when that connection is not ready (connecting, a Cluster,
   * durability on): the caller then sends its plain script, with the same outcome.
   */
  async transaction(op: string, commands: WireCommand[], buffers: boolean): Promise<unknown[] | undefined> {
    const w = this.wire;
    // Not behind Sentinel: a write queued on a demoted master makes EXEC fail with EXECABORT, which
    // hides the READONLY that would say so; the scripts fail with READONLY itself.
    if (this.sentinel) return undefined;
    if (w === null || !w.ready) {
      w?.start();
      return undefined;
    }
    try {
      return (await w.transaction(commands, buffers)) as unknown[];
    } catch (err) {
      throw this.classify(err, op);
    }
  }

  /** Throws the first error reply among a {@link transaction}'s replies, classified. */
  fail(op: string, replies: readonly unknown[]): void {
    const failed = replies.find((x) => x instanceof WireReplyError);
    if (failed !== undefined) throw this.classify(failed, op);
  }

  /**
   * A large checkpoint as one {@link transaction}: `SET staging bytes`, then the script
   * (scripts.ts, checkpointStaged) as {@link runHeld} sends it; its reply, or undefined as there. A
   * NOSCRIPT (the server's script cache was emptied: the script did not run, and the SET wrote only
   * the staging key, which the next attempt writes again) loads the script and sends the
   * transaction once more, as {@link hot} re-sends a script as EVAL.
   */
  async runHeldStaged<T>(
    op: string,
    b: number,
    staging: string,
    bytes: Buffer,
    keys: Arg[],
    args: Arg[],
  ): Promise<T | undefined> {
    const s = this.scriptFor(S.checkpointStaged);
    const commands = [
      { name: 'set', args: [staging, bytes] },
      { name: 'evalsha', args: this.frame(s, [...keys, staging], args) },
    ];
    for (let attempt = 0; ; attempt++) {
      const replies = await this.transaction(op, commands, false);
      if (replies === undefined) return undefined;
      const reply = replies[1];
      if (attempt === 0 && reply instanceof WireReplyError && /^NOSCRIPT/.test(reply.message)) {
        await this.send(op, 'script', ['load', s.lua]);
        continue;
      }
      this.fail(op, replies);
      return this.checkRefusal(op, b, reply as T);
    }
  }

  /**
   * A refusal (scripts.ts, REFUSE: `[word, value, the bucket's dataset id]`) from a dataset other
   * than the one this backend opened is DATASET_LOST.
   */
  checkRefusal<T>(op: string, b: number, reply: T): T {
    if (Array.isArray(reply) && reply.length === 3) {
      const found = reply[2] === null ? null : String(reply[2]);
      if (found !== this.dataset) throw this.lost(op, b, found);
    }
    return reply;
  }

  /** The EVALSHA arguments: sha, key count, `keys` then `lastKey`, `args` then `lastArg`. */
  private frame(sc: Script, keys: Arg[], args: Arg[], lastKey?: Arg, lastArg?: Arg): Arg[] {
    const s = this.scriptFor(sc);
    const a: Arg[] = [s.sha, s.keyCount];
    for (let i = 0; i < keys.length; i++) a.push(keys[i]!);
    if (lastKey !== undefined) a.push(lastKey);
    for (let i = 0; i < args.length; i++) a.push(args[i]!);
    if (lastArg !== undefined) a.push(lastArg);
    return a;
  }

  private checkLost<T>(op: string, b: number, reply: T): T {
    if (Array.isArray(reply) && reply.length === 2 && String(reply[0]) === 'LOST') {
      throw this.lost(op, b, reply[1] === null ? null : String(reply[1]));
    }
    return reply;
  }

  private lost(op: string, b: number, found: string | null): DatasetLostError {
    return new DatasetLostError(
      `${op} on ${this.url} refused: the dataset this backend opened (${this.dataset}) is gone from bucket b${b} of key prefix '${this.prefix}' (${found === null ? 'its keys were wiped: a restart without persistence, a flush, a failover to an empty replica' : `it now holds dataset ${found}`}); no lease it knew in this bucket exists any more; the other buckets work on. Restore the bucket with \`worklease recover\` (docs/durability.md)`,
      { details: { keyPrefix: this.prefix, bucket: b, dataset: this.dataset, found } },
    );
  }

  /**
   * Whether writes wait for replicas ({@link confirm}). Callers test it before awaiting confirm, so
   * a call without the option resolves without one more await (a microtask turn on every call).
   */
  get durable(): boolean {
    return this.options.durability.replicas > 0;
  }

  /**
   * The `durability` option (docs/durability.md): after a write that hands out or bumps a token or
   * stores a checkpoint, `WAIT replicas timeoutMs` on the same connection (WAIT cannot run inside a
   * script). It returns how many replicas have everything this connection wrote, so it also covers
   * the calls before it. Fewer than asked → NOT_DURABLE: the write is on the master and may or may
   * not survive a failover. WAIT blocks the connection (and the calls queued behind it on the same
   * connection) for up to timeoutMs when replicas lag. Without the option it does nothing; the lease calls
   * test {@link durable} first so that they also skip the await.
   */
  async confirm(op: string, b: number): Promise<void> {
    const d = this.options.durability;
    if (d.replicas === 0) return;
    // On a Cluster, WAIT must reach the master that ran the script: route it by the bucket's slot.
    const acked = Number(
      await this.send<number>(op, 'wait', [d.replicas, d.timeoutMs], false, this.layout.m[b]),
    );
    if (acked < d.replicas) {
      throw new NotDurableError(
        `${op} on ${this.url} ran on the master, but only ${acked} of ${d.replicas} replicas confirmed it within ${d.timeoutMs} ms: it may or may not survive a failover`,
        { details: { replicas: d.replicas, acknowledged: acked, timeoutMs: d.timeoutMs } },
      );
    }
  }

  private async waitConnected(op: string, deadline: number): Promise<void> {
    while (!this.connected()) {
      const status = this.client.status;
      if (status === 'end' || status === 'wait') {
        throw new BackendUnavailableError(
          `${op} on ${this.url} failed: the connection is closed (${status})`,
        );
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new BackendUnavailableError(
          `${op} on ${this.url} failed: not connected within ${this.callTimeoutMs} ms (${status})`,
        );
      }
      if (this.readyWait === null) {
        this.readyWait = new Promise<void>((resolve) => {
          this.client.once('ready', () => {
            this.readyWait = null;
            resolve();
          });
        });
      }
      let timer: NodeJS.Timeout | undefined;
      // 'ready' after a reconnect; the short poll covers a socket that is closing while still 'ready'.
      await Promise.race([
        this.readyWait,
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, Math.min(left, 50));
        }),
      ]);
      clearTimeout(timer);
    }
  }
}
