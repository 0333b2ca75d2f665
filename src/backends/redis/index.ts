/**
 * The Redis backend: standalone Redis (`redis://`, `rediss://`) and Redis
 * Cluster (`redis+cluster://host:port[,host:port…]`) with the same scripts.
 *
 * Layout and the reasons for it: layout.ts. The scripts, their atomicity and
 * every outcome: scripts.ts. Connection and retry policy: connection.ts.
 * Error classification: errors.ts.
 *
 * Orderings this backend gives:
 * - `list` pages are ordered by work id compared as UTF-8 bytes (= code point
 *   order; JavaScript's default sort differs only between U+E000–U+FFFF and
 *   astral characters), merged across buckets (see `list`). A work item that
 *   exists for the whole walk is listed exactly once.
 * - `changes` are oldest-first within a bucket; across buckets they are merged
 *   by stream id (the writing master's clock), which is not a global order on
 *   a cluster. Apply them by (token, version). `gap` is exact: it is reported
 *   only when an entry after the cursor was trimmed (scripts.ts, STREAM_INFO).
 * - `audit` without a work id merges the buckets' audit streams by time.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Command, type Redis } from 'ioredis';
import {
  BackendUnavailableError,
  ConflictError,
  DatasetLostError,
  FencedError,
  InternalError,
  LeaseExpiredError,
  LeaseHeldError,
  NotDurableError,
  NotFoundError,
  SchemaMismatchError,
} from '../../lease/errors.ts';
import type {
  AuditEntry,
  ChangeBatch,
  ChangeKind,
  CheckpointRead,
  CheckpointResult,
  LeaseBackend,
  LeaseChange,
  LeaseInfo,
  LeasePage,
  LeaseRecord,
  OpenOptions,
  ReleaseRequest,
  StatePage,
} from '../../lease/types.ts';
import {
  createBackend,
  type DriverListOptions,
  type LeaseDriver,
  type ResolvedOptions,
  requestConflict,
  resolveTarget,
} from '../common.ts';
import { socketErrno } from '../errno.ts';
import { migrateCommandFor } from '../url.ts';
import {
  createClient,
  createSubscriber,
  parseRedisUrl,
  type RedisClient,
  type RedisTarget,
} from './connection.ts';
import { classifyRedisError } from './errors.ts';
import {
  compareStreamIds,
  compareUtf8,
  DEFAULT_BUCKETS,
  decodeChangeCursor,
  decodeListCursor,
  encodeChangeCursor,
  encodeListCursor,
  LAYOUT_VERSION,
  Layout,
  RENUMBERED_LAYOUT,
  UPGRADABLE_LAYOUT,
} from './layout.ts';
import type { ScriptDef } from './scripts.ts';
import * as lua from './scripts.ts';

export { parseRedisUrl } from './connection.ts';
export { Layout } from './layout.ts';

type Arg = string | Buffer | number;

interface Script extends ScriptDef {
  sha: string;
}
function script(def: ScriptDef): Script {
  return { ...def, sha: createHash('sha1').update(def.lua).digest('hex') };
}
const S: Record<string, Script> & {
  [K in keyof typeof lua as (typeof lua)[K] extends ScriptDef ? K : never]: Script;
} = {
  acquire: script(lua.acquire),
  renew: script(lua.renew),
  checkpoint: script(lua.checkpoint),
  release: script(lua.release),
  forceRelease: script(lua.forceRelease),
  requestRelease: script(lua.requestRelease),
  readCheckpoint: script(lua.readCheckpoint),
  readState: script(lua.readState),
  prune: script(lua.prune),
  changesRead: script(lua.changesRead),
  streamHead: script(lua.streamHead),
  migrate: script(lua.migrate),
  markReady: script(lua.markReady),
};

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
    super(name, args, buffers ? {} : { replyEncoding: 'utf8' });
  }

  override getSlot(): number {
    return this.routeKey === undefined ? super.getSlot() : new Command('get', [this.routeKey]).getSlot();
  }

  override toWritable(socket: object): string | Buffer {
    if (this.abandoned) return '*1\r\n$4\r\nPING\r\n';
    this.written = true;
    return super.toWritable(socket);
  }
}

/**
 * Times out commands at their call deadline. One coarse timer for all calls in flight instead of
 * ioredis' timer per command (`commandTimeout`), which costs more than the rest of a call's
 * client-side work; a call fails at most `tickMs` after its deadline.
 */
class Watchdog {
  private readonly pending = new Set<TrackedCommand>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly tickMs: number) {}

  add(cmd: TrackedCommand): void {
    this.pending.add(cmd);
    if (this.timer === null) {
      this.timer = setInterval(() => this.sweep(), this.tickMs);
      this.timer.unref();
    }
  }

  delete(cmd: TrackedCommand): void {
    this.pending.delete(cmd);
  }

  private sweep(): void {
    const now = Date.now();
    for (const cmd of this.pending) {
      if (cmd.deadline > now) continue;
      this.pending.delete(cmd);
      cmd.abandoned = true;
      cmd.reject(new Error('Command timed out'));
    }
    if (this.pending.size === 0 && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

type Nullable = string | null;
const KINDS = new Set<string>([
  'acquired',
  'renewed',
  'checkpointed',
  'released',
  'force-released',
  'release-requested',
  'pruned',
]);

/** The number written in decimal digits in s[from, to); NaN when empty or not all digits. */
function digits(s: string, from: number, to: number): number {
  if (from >= to) return Number.NaN;
  let n = 0;
  for (let i = from; i < to; i++) {
    const d = s.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return Number(s.slice(from, to));
    n = n * 10 + d;
  }
  return n;
}

/** A token or version: exact (via the string) beyond 2^53. */
function bigint(s: string, from: number, to: number): bigint {
  if (from === to) return 0n;
  return to - from < 16 ? BigInt(digits(s, from, to)) : BigInt(s.slice(from, to));
}

function when(s: string, from: number, to: number): Date | null {
  return from === to ? null : new Date(digits(s, from, to));
}

function word<T extends string>(s: string, from: number, to: number, words: readonly T[]): T | null {
  for (const w of words) if (to - from === w.length && s.startsWith(w, from)) return w;
  return null;
}
const PRED_WORDS = ['none', 'released', 'expired', 'force-released'] as const;
const END_WORDS = ['released', 'force-released'] as const;

/** Where each field of the lease being parsed starts (module-level: parsing allocates no index). */
const FIELD_STARTS = new Array<number>(15).fill(0);
/** Where field k of the lease being parsed ends. */
const end = (k: number): number => FIELD_STARTS[k + 1]! - 1;

/**
 * Parses a packed lease (layout.ts: the INFO_FIELDS values joined by LF), starting after the
 * `skip`-th LF of `s` (change entries put kind and workId first); null for a tombstone or anything
 * that is not a whole lease. Reads fields in place: a console loads 100 000 of these at once, and
 * splitting into 14 strings made parsing and its garbage the biggest cost of a snapshot.
 */
function parsePacked(workId: string, s: string, skip = 0): LeaseInfo | null {
  let p = 0;
  for (let i = 0; i < skip; i++) p = s.indexOf('\n', p) + 1;
  // Field k is s[at[k], at[k + 1] - 1).
  const at = FIELD_STARTS;
  at[0] = p;
  for (let k = 1; k < 14; k++) {
    const lf = s.indexOf('\n', at[k - 1]!);
    if (lf < 0) return null;
    at[k] = lf + 1;
  }
  // After the version, the optional release request (layout.ts): LF at LF operator LF quoted reason.
  const rq = s.indexOf('\n', at[13]!);
  at[14] = (rq < 0 ? s.length : rq) + 1;
  const releaseRequest = rq < 0 ? null : parseRequest(s, rq);
  if (releaseRequest === undefined) return null;
  return {
    workId,
    holderId: s.slice(at[0]!, end(0)),
    fencingToken: bigint(s, at[1]!, end(1)),
    expiresAt: new Date(digits(s, at[2]!, end(2))),
    ttlMs: digits(s, at[3]!, end(3)),
    stepId: at[4] === end(4) ? null : s.slice(at[4]!, end(4)),
    acquiredAt: new Date(digits(s, at[5]!, end(5))),
    renewedAt: when(s, at[6]!, end(6)),
    checkpointedAt: when(s, at[7]!, end(7)),
    releasedAt: when(s, at[8]!, end(8)),
    checkpointSize: at[9] === end(9) ? null : digits(s, at[9]!, end(9)),
    cleanHandoff: s.charCodeAt(at[10]!) === 0x31,
    predecessorEnd: word(s, at[11]!, end(11), PRED_WORDS) ?? 'none',
    ended: word(s, at[12]!, end(12), END_WORDS),
    version: bigint(s, at[13]!, end(13)),
    releaseRequest,
  };
}

/**
 * The release request in `s` from the LF at `from` on: LF at LF operator LF reason (a JSON string
 * literal). Undefined when malformed.
 */
function parseRequest(s: string, from: number): ReleaseRequest | undefined {
  const a = s.indexOf('\n', from + 1);
  const b = a < 0 ? -1 : s.indexOf('\n', a + 1);
  if (b < 0) return undefined;
  const at = digits(s, from + 1, a);
  if (!Number.isFinite(at)) return undefined;
  try {
    const reason: unknown = JSON.parse(s.slice(b + 1));
    if (typeof reason !== 'string') return undefined;
    return { at: new Date(at), operator: s.slice(a + 1, b), reason };
  } catch {
    return undefined;
  }
}

function fieldMap(fields: readonly string[]): Map<string, string> {
  const m = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) m.set(fields[i]!, fields[i + 1]!);
  return m;
}

const iso = (ms: unknown): string => new Date(Number(ms)).toISOString();

class RedisDriver implements LeaseDriver {
  readonly kind: 'redis' | 'redis-cluster';
  readonly url: string;
  private readyWait: Promise<void> | null = null;
  private corked = false;

  /** Set by {@link checkLayout} from the prefix's meta key, before the first lease call. */
  layout: Layout;
  /** The dataset id every script checks (layout.ts, Dataset identity); set by {@link checkLayout}. */
  private dataset = '';
  private readonly watchdog: Watchdog;

  private readonly prefix: string;
  private readonly callTimeoutMs: number;
  private readonly watchers = new Set<() => void>();
  private subscriber: RedisClient | null = null;
  private wakePending = false;

  constructor(
    private readonly client: RedisClient,
    private readonly target: RedisTarget,
    private readonly options: ResolvedOptions,
  ) {
    this.prefix = options.keyPrefix;
    this.callTimeoutMs = options.callTimeoutMs;
    this.layout = new Layout(this.prefix, DEFAULT_BUCKETS);
    this.watchdog = new Watchdog(Math.max(5, Math.min(100, Math.floor(this.callTimeoutMs / 10))));
    this.kind = target.kind;
    this.url = target.redacted;
  }

  /**
   * Checks (and with `migrate`, creates or upgrades) `<prefix>:meta` and the buckets' `id` keys,
   * and adopts the prefix's bucket count and dataset id (layout.ts, Dataset identity). Refuses a
   * dataset that is partly gone instead of recreating it.
   */
  async checkLayout(migrate: boolean): Promise<void> {
    const where = `key prefix '${this.prefix}' on ${this.url}`;
    const readMeta = (): Promise<Nullable[]> =>
      this.send<Nullable[]>('open', 'hmget', [this.layout.meta, 'layout', 'buckets', 'dataset', 'ready']);
    let meta = await readMeta();
    if (meta[0] === null || meta[0] === undefined) {
      if (!migrate) {
        throw new SchemaMismatchError(
          `no worklease data under ${where}: run \`${migrateCommandFor(this.url)}\` first`,
          { details: { keyPrefix: this.prefix, found: null, expected: LAYOUT_VERSION } },
        );
      }
      await this.refuseOrphanBuckets(readMeta, where);
    }
    const upgradable = meta[0] === String(UPGRADABLE_LAYOUT) || meta[0] === String(RENUMBERED_LAYOUT);
    if (migrate && (meta[0] === null || meta[0] === undefined || upgradable)) {
      meta = await this.run<Nullable[]>('migrate', S.migrate, [
        this.layout.meta,
        LAYOUT_VERSION,
        DEFAULT_BUCKETS,
        randomBytes(12).toString('hex'),
        UPGRADABLE_LAYOUT,
        RENUMBERED_LAYOUT,
      ]);
    }
    const [layout, buckets, dataset, ready] = meta;
    const n = Number(buckets);
    const known = layout === String(LAYOUT_VERSION) || (migrate && layout === String(UPGRADABLE_LAYOUT));
    if (!known || !Number.isInteger(n) || n < 1 || n > 16384 || typeof dataset !== 'string') {
      const fix =
        layout === String(UPGRADABLE_LAYOUT) || layout === String(RENUMBERED_LAYOUT)
          ? `; run \`worklease migrate ${this.url}\` (with this key prefix) to upgrade it in place`
          : Number(layout) < UPGRADABLE_LAYOUT
            ? // Layout 1 was never released, so there is nothing to convert (layout.ts): say how to start over.
              `; it is not converted: delete the keys matching '${this.prefix}:*' or use another key prefix`
            : '';
      throw new SchemaMismatchError(
        `${where} holds data layout ${layout} with ${String(buckets)} buckets; this version of worklease reads layout ${LAYOUT_VERSION}${fix}`,
        { details: { keyPrefix: this.prefix, found: layout, expected: LAYOUT_VERSION } },
      );
    }
    const L = new Layout(this.prefix, n);
    if (ready === '1') {
      // Every bucket must still carry the dataset: a Cluster master that came back empty took its buckets' keys.
      const ids = await Promise.all(L.id.map((key) => this.send<Nullable>('open', 'get', [key])));
      const missing = ids.flatMap((id, b) => (id === dataset ? [] : [b]));
      if (missing.length > 0) throw this.lostAtOpen(where, dataset, missing, ids[missing[0]!] ?? null);
    } else {
      if (!migrate) {
        throw new SchemaMismatchError(
          `the data under ${where} was not fully migrated: run \`worklease migrate ${this.url}\` (with this key prefix)`,
          { details: { keyPrefix: this.prefix, found: layout, expected: LAYOUT_VERSION } },
        );
      }
      // SET NX GET: sets the id where it is missing and replies what was there (null when it set it).
      const before = await Promise.all(
        L.id.map((key) => this.send<Nullable>('migrate', 'set', [key, dataset, 'NX', 'GET'])),
      );
      const other = before.flatMap((id, b) => (id === null || id === dataset ? [] : [b]));
      if (other.length > 0) throw this.lostAtOpen(where, dataset, other, before[other[0]!] ?? null);
      const marked = await this.run<number>('migrate', S.markReady, [L.meta, LAYOUT_VERSION, dataset]);
      if (Number(marked) !== 1) throw this.lostAtOpen(where, dataset, [], null);
    }
    this.layout = L;
    this.dataset = dataset;
  }

  /**
   * With the meta key missing, the buckets must carry no dataset either: if some do, the meta key's
   * node lost its data (or someone deleted it) while the buckets survived, and creating a new
   * dataset over them would mix two. A concurrent first open writes its meta key before any bucket
   * id, so a bucket id seen here with the meta key there on a second read is that open, not a loss.
   */
  private async refuseOrphanBuckets(readMeta: () => Promise<Nullable[]>, where: string): Promise<void> {
    const L = new Layout(this.prefix, DEFAULT_BUCKETS);
    const ids = await Promise.all(L.id.map((key) => this.send<Nullable>('open', 'get', [key])));
    const found = ids.flatMap((id, b) => (id === null ? [] : [b]));
    if (found.length === 0) return;
    const again = await readMeta();
    if (again[0] !== null && again[0] !== undefined) return;
    throw new DatasetLostError(
      `${where} lost its meta key '${L.meta}' while ${found.length} of ${DEFAULT_BUCKETS} buckets still hold dataset ${String(ids[found[0]!])}: part of the data is gone, and worklease does not recreate it. To start over (tokens stay increasing: docs/durability.md), delete the keys matching '${this.prefix}:*'`,
      { details: { keyPrefix: this.prefix, buckets: found } },
    );
  }

  private lostAtOpen(
    where: string,
    dataset: string,
    buckets: number[],
    found: string | null,
  ): DatasetLostError {
    return new DatasetLostError(
      `${where} holds dataset ${dataset}, but ${buckets.length === 0 ? 'its meta key changed while migrating' : `${buckets.length} bucket(s) (first: b${buckets[0]}) ${found === null ? 'lost their data' : `hold another dataset (${found})`}`}: part of the data is gone (a Redis node restarted without persistence?), and worklease does not recreate it. To start over (tokens stay increasing: docs/durability.md), delete the keys matching '${this.prefix}:*'`,
      { details: { keyPrefix: this.prefix, dataset, buckets } },
    );
  }

  /**
   * Holds this tick's writes to a standalone server's socket and flushes them together on the next
   * tick: ioredis writes each command on its own, and with many calls in flight one write syscall
   * per call cost more client (and server) time than the rest of a call (profiled: 18 % of the
   * client's CPU at 64 renews in flight). Each command is still written once; a socket that closes
   * while corked drops what it held, and those calls fail as unwritten-but-handed-over (never re-sent).
   */
  private cork(): void {
    if (this.corked || this.kind !== 'redis') return;
    const stream = (this.client as Redis).stream;
    if (stream === undefined) return;
    this.corked = true;
    stream.cork();
    process.nextTick(() => {
      this.corked = false;
      stream.uncork();
    });
  }

  /** True when a command sent now is written to a live socket at once (not queued, not rejected). */
  private connected(): boolean {
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
  private async send<T>(
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
      this.watchdog.add(cmd);
      this.cork();
      try {
        const reply = (await this.client.sendCommand(cmd)) as T;
        this.watchdog.delete(cmd);
        return reply;
      } catch (err) {
        this.watchdog.delete(cmd);
        const e = classifyRedisError(err, op, this.url);
        if (cmdName === 'evalsha' && /^NOSCRIPT/.test((err as Error).message ?? '')) {
          const sc = Object.values(S).find((x) => x.sha === cmdArgs[0]);
          if (sc !== undefined) {
            cmdName = 'eval';
            cmdArgs = [sc.lua, ...cmdArgs.slice(1)];
            continue;
          }
        }
        if (!cmd.written && e.code === 'BACKEND_UNAVAILABLE' && Date.now() < deadline) {
          await sleep(Math.min(20, Math.max(0, deadline - Date.now())));
          continue;
        }
        throw e;
      }
    }
  }

  private run<T>(op: string, sc: Script, keysAndArgs: Arg[], buffers = false): Promise<T> {
    return this.send<T>(op, 'evalsha', [sc.sha, sc.numberOfKeys, ...keysAndArgs], buffers);
  }

  /**
   * Runs a script on bucket `b`: appends the bucket's `id` key to `keys` and the dataset id to
   * `args` (scripts.ts, IDENTITY) and turns a `LOST` reply into DATASET_LOST. Every lease and feed
   * script goes through here.
   */
  private async runIn<T>(
    op: string,
    sc: Script,
    b: number,
    keys: Arg[],
    args: Arg[],
    buffers = false,
  ): Promise<T> {
    const L = this.layout;
    const reply = await this.run<T>(op, sc, [...keys, L.id[b]!, ...args, this.dataset], buffers);
    if (Array.isArray(reply) && reply.length === 2 && String(reply[0]) === 'LOST') {
      const found = reply[1] === null ? null : String(reply[1]);
      throw new DatasetLostError(
        `${op} on ${this.url} refused: the dataset this backend opened (${this.dataset}) is gone from bucket b${b} of key prefix '${this.prefix}' (${found === null ? 'its keys were wiped: a restart without persistence, a flush, a failover to an empty replica' : `it now holds dataset ${found}`}); no lease it knew exists any more. Stop the holders and reopen (docs/durability.md)`,
        { details: { keyPrefix: this.prefix, bucket: b, dataset: this.dataset, found } },
      );
    }
    return reply;
  }

  /**
   * The `durability` option (docs/durability.md): after a write that hands out or bumps a token or
   * stores a checkpoint, `WAIT replicas timeoutMs` on the same connection (WAIT cannot run inside a
   * script). It returns how many replicas have everything this connection wrote, so it also covers
   * the calls before it. Fewer than asked → NOT_DURABLE: the write is on the master and may or may
   * not survive a failover. WAIT blocks the connection (and the calls queued behind it on the same
   * connection) for up to timeoutMs when replicas lag.
   */
  private async confirm(op: string, b: number): Promise<void> {
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

  private fenced(record: LeaseRecord, stored: unknown): FencedError {
    const why =
      stored === null || stored === undefined
        ? 'the work item has no lease any more (pruned or never acquired)'
        : `the stored token is now ${String(stored)}`;
    return new FencedError(
      `lease on '${record.workId}' with token ${record.fencingToken} is fenced: ${why}`,
      { details: { workId: record.workId, fencingToken: record.fencingToken } },
    );
  }

  private expired(record: LeaseRecord, expiresAt: unknown): LeaseExpiredError {
    return new LeaseExpiredError(
      `lease on '${record.workId}' with token ${record.fencingToken} ran out at ${iso(expiresAt)}`,
      {
        details: {
          workId: record.workId,
          fencingToken: record.fencingToken,
          expiresAt: new Date(Number(expiresAt)),
        },
      },
    );
  }

  /**
   * Shared outcome handling of renew/checkpoint/release replies: success is the new expiry,
   * followed by the release request when there is one (scripts.ts, renew).
   */
  private guarded(
    record: LeaseRecord,
    reply: string | unknown[],
  ): { expiresAt: number; request?: ReleaseRequest } {
    if (typeof reply === 'string') {
      const lf = reply.indexOf('\n');
      if (lf < 0) return { expiresAt: Number(reply) };
      const request = parseRequest(reply, lf);
      if (request === undefined)
        throw new InternalError(`malformed release request in the reply for '${record.workId}'`);
      return { expiresAt: Number(reply.slice(0, lf)), request };
    }
    switch (reply[0]) {
      case 'FENCED':
        throw this.fenced(record, reply[1]);
      case 'EXPIRED':
        throw this.expired(record, reply[1]);
      default:
        throw new InternalError(`unexpected reply from the Redis lease script: ${String(reply[0])}`);
    }
  }

  async acquire(
    workId: string,
    holderId: string,
    ttlMs: number,
    stepId: string | null,
  ): Promise<LeaseRecord> {
    const L = this.layout;
    const b = L.bucketOf(workId);
    const reply = await this.runIn<string | unknown[]>(
      'acquire',
      S.acquire,
      b,
      [L.m[b]!, L.ids[b]!, L.exp[b]!, L.chg[b]!, L.wake[b]!],
      [workId, holderId, String(ttlMs), stepId ?? ''],
    );
    if (typeof reply === 'string') {
      await this.confirm('acquire', b);
      const space = reply.indexOf(' ');
      return {
        workId,
        holderId,
        fencingToken: BigInt(reply.slice(0, space)),
        expiresAt: new Date(Number(reply.slice(space + 1))),
      };
    }
    if (reply[0] === 'HELD') {
      const expiresAt = new Date(Number(reply[3]));
      throw new LeaseHeldError(
        `work item '${workId}' is held by '${String(reply[1])}' until ${expiresAt.toISOString()}`,
        { details: { workId, holderId: String(reply[1]), expiresAt } },
      );
    }
    throw new InternalError(`unexpected reply from the Redis acquire script: ${String(reply[0])}`);
  }

  async checkpoint(record: LeaseRecord, state: Uint8Array, ttlMs: number): Promise<CheckpointResult> {
    const L = this.layout;
    const b = L.bucketOf(record.workId);
    const bytes = Buffer.isBuffer(state)
      ? state
      : Buffer.from(state.buffer, state.byteOffset, state.byteLength);
    const reply = await this.runIn<string | unknown[]>(
      'checkpoint',
      S.checkpoint,
      b,
      [L.m[b]!, L.exp[b]!, L.chg[b]!, L.wake[b]!, L.stateKey(b, record.workId)],
      [record.workId, record.fencingToken.toString(), String(ttlMs), bytes],
    );
    const { request } = this.guarded(record, reply);
    await this.confirm('checkpoint', b);
    return request === undefined ? {} : { releaseRequested: request };
  }

  async renew(record: LeaseRecord, ttlMs: number): Promise<LeaseRecord> {
    const L = this.layout;
    const b = L.bucketOf(record.workId);
    const reply = await this.runIn<string | unknown[]>(
      'renew',
      S.renew,
      b,
      [L.m[b]!, L.exp[b]!, L.chg[b]!, L.wake[b]!],
      [record.workId, record.fencingToken.toString(), String(ttlMs)],
    );
    const { expiresAt, request } = this.guarded(record, reply);
    const renewed: LeaseRecord = {
      workId: record.workId,
      holderId: record.holderId,
      fencingToken: record.fencingToken,
      expiresAt: new Date(expiresAt),
    };
    return request === undefined ? renewed : { ...renewed, releaseRequested: request };
  }

  async release(record: LeaseRecord): Promise<void> {
    const L = this.layout;
    const b = L.bucketOf(record.workId);
    const reply = await this.runIn<string | unknown[]>(
      'release',
      S.release,
      b,
      [L.m[b]!, L.exp[b]!, L.chg[b]!, L.wake[b]!],
      [record.workId, record.fencingToken.toString()],
    );
    this.guarded(record, reply);
  }

  /** One script: token, clean flag and state are read together from one consistent lease. */
  async readCheckpoint(record: LeaseRecord): Promise<CheckpointRead> {
    const L = this.layout;
    const b = L.bucketOf(record.workId);
    const [first, second] = await this.runIn<[Buffer, Buffer | null]>(
      'readCheckpoint',
      S.readCheckpoint,
      b,
      [L.m[b]!, L.stateKey(b, record.workId)],
      [record.workId, record.fencingToken.toString()],
      true,
    );
    // The clean flag ('0' or '1') on success; 'FENCED' otherwise.
    if (first.length !== 1) throw this.fenced(record, second?.toString('latin1') ?? null);
    return { state: second ?? null, cleanHandoff: first[0] === 0x31 };
  }

  async get(workId: string): Promise<LeaseInfo | null> {
    const L = this.layout;
    const packed = await this.send<Nullable>('get', 'hget', [L.m[L.bucketOf(workId)]!, workId]);
    return packed === null ? null : parsePacked(workId, packed);
  }

  /**
   * One bucket's next leases in byte order from `min`: up to `want` whose holder matches, looking at
   * no more than `cap` ids (a sparse filter cannot make one call read a whole bucket). A ZRANGEBYLEX
   * of ids, then one HMGET of their packed leases: two plain commands per chunk, no per-lease Lua
   * (a Lua loop reading each lease cost about twice the server time of the commands themselves).
   * Not atomic, and need not be: a lease removed between the two commands is skipped, one added is
   * not among the ids; either way it did not exist for the whole walk.
   * `last` is the last id examined; `done` means the bucket has no ids after it.
   */
  private async scanBucket(
    b: number,
    min: Arg,
    max: Arg,
    want: number,
    holderId: string | undefined,
    cap: number,
  ): Promise<{ done: boolean; last: string | null; found: string[] }> {
    const L = this.layout;
    const found: string[] = [];
    let last: string | null = null;
    let scanned = 0;
    for (;;) {
      const chunk = Math.min(cap - scanned, Math.max(want - found.length / 2, 64));
      const ids = await this.send<string[]>('list', 'zrangebylex', [L.ids[b]!, min, max, 'LIMIT', 0, chunk]);
      if (ids.length === 0) return { done: true, last, found };
      const leases = await this.send<Nullable[]>('list', 'hmget', [L.m[b]!, ...ids]);
      let i = 0;
      for (; i < ids.length; i++) {
        const lease = leases[i];
        if (lease === null || lease === undefined) continue;
        if (
          holderId !== undefined &&
          !(lease.startsWith(holderId) && lease.charCodeAt(holderId.length) === 10)
        )
          continue;
        found.push(ids[i]!, lease);
        if (found.length / 2 >= want) break;
      }
      scanned += Math.min(i + 1, ids.length);
      last = ids[Math.min(i, ids.length - 1)]!;
      if (found.length / 2 >= want) return { done: false, last, found };
      if (ids.length < chunk) return { done: true, last, found };
      if (scanned >= cap) return { done: false, last, found };
      min = `(${last}`;
    }
  }

  /**
   * Pages in work id order (bytewise UTF-8, i.e. code point order) across buckets. Each round asks
   * every bucket, in parallel, for its next few matching leases after the cursor; a bucket that was
   * not read to its end has examined its ids only up to the last one it scanned, so only leases up
   * to the smallest such "frontier" are known to be complete and may be returned. The cursor is the
   * last work id returned (or the frontier), so an item that exists for the whole walk is returned
   * exactly once, whatever is written meanwhile.
   */
  /**
   * Without a holder filter: ZLEXCOUNT of each bucket's id index (pruned items are removed from
   * it), all buckets in parallel, so nothing but counts crosses the network. The holder is only in
   * the lease hashes, so with a holder filter the matching pages are walked (10 000 a round).
   */
  async count(workIdPrefix: string | undefined, holderId: string | undefined): Promise<number> {
    if (holderId !== undefined) {
      let n = 0;
      let cursor: string | null = null;
      do {
        const page = await this.list({ cursor, limit: 10_000, workIdPrefix, holderId });
        n += page.items.length;
        cursor = page.nextCursor;
      } while (cursor !== null);
      return n;
    }
    const L = this.layout;
    const min: Arg = workIdPrefix === undefined ? '-' : `[${workIdPrefix}`;
    // As in list: every UTF-8 string that starts with the prefix sorts before prefix + 0xFF.
    const max: Arg =
      workIdPrefix === undefined
        ? '+'
        : Buffer.concat([Buffer.from(`[${workIdPrefix}`, 'utf8'), Buffer.from([0xff])]);
    const counts = await Promise.all(
      L.ids.map((key) => this.send<number>('count', 'zlexcount', [key, min, max])),
    );
    return counts.reduce((a, b) => a + Number(b), 0);
  }

  async list(options: DriverListOptions): Promise<LeasePage> {
    const L = this.layout;
    let after = options.cursor === null ? null : decodeListCursor(options.cursor);
    const prefix =
      options.workIdPrefix === undefined || options.workIdPrefix === '' ? null : options.workIdPrefix;
    // Every UTF-8 string that starts with the prefix sorts before prefix + 0xFF (never a UTF-8 byte).
    const max: Arg =
      prefix === null ? '+' : Buffer.concat([Buffer.from(`[${prefix}`, 'utf8'), Buffer.from([0xff])]);
    const items: LeaseInfo[] = [];
    for (let round = 0; round < 16; round++) {
      const min =
        after !== null && (prefix === null || compareUtf8(after, prefix) >= 0)
          ? `(${after}`
          : prefix === null
            ? '-'
            : `[${prefix}`;
      const want = options.limit - items.length;
      // This bucket's share of the page with slack for uneven buckets: about 2 standard deviations of
      // a bucket's count, so that one round usually fills the page (a second round costs a round
      // trip and re-reads what the first one read past the frontier).
      const share = want / L.buckets;
      const perBucket = Math.min(want, Math.ceil(share + 2 * Math.sqrt(share)) + 8);
      const replies = await Promise.all(
        L.ids.map((_, b) =>
          this.scanBucket(b, min, max, perBucket, options.holderId, Math.max(perBucket, 500)),
        ),
      );
      // Leases up to the smallest last-examined id of an unfinished bucket are complete.
      let frontier: string | null = null;
      for (const { done, last } of replies) {
        if (done || last === null) continue;
        if (frontier === null || compareUtf8(last, frontier) < 0) frontier = last;
      }
      // Indexes into `all` (workId at i, packed lease at i + 1) of the complete leases.
      const all: string[] = [];
      for (const { found } of replies) for (const x of found) all.push(x);
      const rows: number[] = [];
      for (let i = 0; i < all.length; i += 2) {
        if (frontier === null || compareUtf8(all[i]!, frontier) <= 0) rows.push(i);
      }
      // Each bucket's run is already in order; the sort merges them.
      rows.sort((x, y) => compareUtf8(all[x]!, all[y]!));
      const n = Math.min(rows.length, want);
      for (let k = 0; k < n; k++) {
        const i = rows[k]!;
        const info = parsePacked(all[i]!, all[i + 1]!);
        if (info !== null) items.push(info);
      }
      if (rows.length >= want) {
        const last = all[rows[want - 1]!]!;
        const more = frontier !== null || rows.length > want;
        return { items, nextCursor: more ? encodeListCursor(last) : null };
      }
      if (frontier === null) return { items, nextCursor: null };
      after = frontier;
    }
    return { items, nextCursor: after === null ? null : encodeListCursor(after) };
  }

  async forceRelease(
    workId: string,
    expectedToken: bigint,
    operator: string,
    reason: string,
    batchId: string | null,
  ): Promise<LeaseInfo> {
    const L = this.layout;
    const b = L.bucketOf(workId);
    const reply = await this.runIn<string | unknown[]>(
      'forceRelease',
      S.forceRelease,
      b,
      [L.m[b]!, L.exp[b]!, L.chg[b]!, L.wake[b]!, L.aud[b]!],
      [workId, expectedToken.toString(), operator, reason, batchId ?? ''],
    );
    if (typeof reply === 'string') {
      await this.confirm('forceRelease', b);
      const info = parsePacked(workId, reply);
      if (info === null) throw new InternalError(`force-release of '${workId}' returned no lease`);
      return info;
    }
    switch (reply[0]) {
      case 'NOTFOUND':
        throw new NotFoundError(`work item '${workId}' has no lease`, { details: { workId } });
      case 'CONFLICT': {
        const ended = reply[2] === 'released' || reply[2] === 'force-released' ? String(reply[2]) : null;
        const why =
          String(reply[1]) !== expectedToken.toString()
            ? `its token is now ${String(reply[1])}, not ${expectedToken}`
            : `the lease was already ${ended}`;
        throw new ConflictError(`cannot force-release '${workId}': ${why}`, {
          details: { workId, expectedToken, currentToken: String(reply[1]), ended },
        });
      }
      default:
        throw new InternalError(`unexpected reply from the Redis force-release script: ${String(reply[0])}`);
    }
  }

  async requestRelease(
    workId: string,
    expectedToken: bigint,
    operator: string,
    reason: string,
  ): Promise<LeaseInfo> {
    const L = this.layout;
    const b = L.bucketOf(workId);
    const reply = await this.runIn<string | unknown[]>(
      'requestRelease',
      S.requestRelease,
      b,
      [L.m[b]!, L.chg[b]!, L.wake[b]!, L.aud[b]!],
      [workId, expectedToken.toString(), operator, reason, JSON.stringify(reason)],
    );
    if (typeof reply === 'string') {
      const info = parsePacked(workId, reply);
      if (info === null) throw new InternalError(`request-release of '${workId}' returned no lease`);
      return info;
    }
    switch (reply[0]) {
      case 'NOTFOUND':
        throw new NotFoundError(`work item '${workId}' has no lease to request the release of`, {
          details: { workId },
        });
      case 'CONFLICT':
        throw requestConflict(
          workId,
          expectedToken,
          BigInt(String(reply[1])),
          String(reply[3]),
          String(reply[2]),
        );
      default:
        throw new InternalError(
          `unexpected reply from the Redis request-release script: ${String(reply[0])}`,
        );
    }
  }

  async audit(workId: string | undefined, limit: number): Promise<AuditEntry[]> {
    const L = this.layout;
    type Raw = Array<[string, string[]]>;
    const toEntry = (bucket: number, [id, fields]: [string, string[]]): AuditEntry => {
      const m = fieldMap(fields);
      const at = m.get('at');
      return {
        id: `b${bucket}:${id}`,
        at: new Date(at === undefined ? Number(id.split('-')[0]) : Number(at)),
        action: m.get('action') === 'request-release' ? 'request-release' : 'force-release',
        workId: m.get('workId') ?? '',
        operator: m.get('operator') ?? '',
        reason: m.get('reason') ?? '',
        oldHolderId: m.get('old_holder') ?? '',
        oldToken: BigInt(m.get('old_token') ?? '0'),
        newToken: BigInt(m.get('new_token') ?? '0'),
        batchId: m.get('batch') ?? null,
      };
    };
    if (workId !== undefined) {
      // One bucket's stream holds other work items' entries too: page back through it until enough match.
      const b = L.bucketOf(workId);
      const out: AuditEntry[] = [];
      let end = '+';
      for (;;) {
        const page = await this.send<Raw>('audit', 'xrevrange', [L.aud[b]!, end, '-', 'COUNT', 500]);
        for (const raw of page) {
          const entry = toEntry(b, raw);
          if (entry.workId === workId) out.push(entry);
          if (out.length >= limit) return out;
        }
        if (page.length < 500) return out;
        end = `(${page[page.length - 1]![0]}`;
      }
    }
    const pages = await Promise.all(
      L.aud.map((key) => this.send<Raw>('audit', 'xrevrange', [key, '+', '-', 'COUNT', limit])),
    );
    const all: Array<{ bucket: number; raw: [string, string[]] }> = [];
    pages.forEach((page, bucket) => {
      for (const raw of page) all.push({ bucket, raw });
    });
    all.sort((x, y) => compareStreamIds(y.raw[0], x.raw[0]) || x.bucket - y.bucket);
    return all.slice(0, limit).map(({ bucket, raw }) => toEntry(bucket, raw));
  }

  async prune(olderThanMs: number, limit: number): Promise<number> {
    const L = this.layout;
    let total = 0;
    // Bucket by bucket, so the total never exceeds `limit`.
    for (let b = 0; b < L.buckets && total < limit; b++) {
      const n = await this.runIn<number>(
        'prune',
        S.prune,
        b,
        [L.exp[b]!, L.ids[b]!, L.chg[b]!, L.wake[b]!, L.m[b]!],
        [olderThanMs, limit - total, L.statePrefixes[b]!],
      );
      total += Number(n);
    }
    return total;
  }

  async readState(workId: string, offset: number, length: number): Promise<StatePage | null> {
    const L = this.layout;
    const b = L.bucketOf(workId);
    const reply = await this.runIn<[Buffer, number | null, Buffer] | null>(
      'readState',
      S.readState,
      b,
      [L.m[b]!, L.stateKey(b, workId)],
      [workId, offset, length],
      true,
    );
    if (reply === null) return null;
    const [token, size, bytes] = reply;
    return { fencingToken: BigInt(token.toString('latin1')), size: size ?? null, offset, bytes };
  }

  async serverTime(): Promise<Date> {
    const [s, us] = await this.send<[string, string]>('serverTime', 'time', []);
    return new Date(Number(s) * 1000 + Math.floor(Number(us) / 1000));
  }

  async serverVersion(): Promise<string> {
    const info = String(await this.send<string>('serverVersion', 'info', ['server']));
    return /^redis_version:(.+)$/m.exec(info)?.[1]?.trim() ?? '';
  }

  async changeCursor(): Promise<string> {
    const L = this.layout;
    // Buckets live on different masters on a cluster: one call per bucket, all in flight at once.
    const heads = await Promise.all(
      L.chg.map((key, b) => this.runIn<[string, number]>('changeCursor', S.streamHead, b, [key], [])),
    );
    return encodeChangeCursor(heads.map(([id, ordinal]) => ({ id: String(id), ordinal: Number(ordinal) })));
  }

  /**
   * Changes after the cursor, merged across buckets. Only buckets with entries after their cursor
   * position are read (with the exact gap check of scripts.ts, changesRead). On standalone Redis one
   * XREAD over every bucket's stream finds them, so an idle poll is one command; a cluster cannot
   * put keys of different slots in one command, so there every bucket is read (readers there wait
   * for {@link watchChanges} instead of polling often). XREAD sees nothing in a bucket whose
   * entries after the cursor were all removed from outside (XTRIM MAXLEN 0, DEL); that gap is
   * reported with the bucket's next write. The backend's own trimming (MAXLEN ~) always keeps the
   * newest entries, so it is reported at once.
   */
  async changes(cursor: string, limit: number): Promise<ChangeBatch> {
    const L = this.layout;
    const positions = decodeChangeCursor(cursor, L.buckets);
    // Each bucket contributes at most its share, so one batch costs O(limit) however many buckets are busy;
    // the merged batch is cut to `limit` and each bucket's cursor moves only past what was returned.
    const perBucket = Math.max(1, Math.ceil(limit / L.buckets));
    let busy: number[];
    if (this.kind === 'redis') {
      const ids = positions.map((p) => p.id);
      const found = await this.send<Array<[string, unknown]> | null>('changes', 'xread', [
        'COUNT',
        1,
        'STREAMS',
        ...L.chg,
        ...ids,
      ]);
      if (found === null) return { changes: [], cursor, gap: false };
      busy = found.map(([key]) => L.bucketOfStream(key));
    } else {
      busy = L.chg.map((_, b) => b);
    }
    const replies = await Promise.all(
      busy.map((b) =>
        this.runIn<[number, Array<[string, string[]]>]>(
          'changes',
          S.changesRead,
          b,
          [L.chg[b]!],
          [positions[b]!.id, perBucket, positions[b]!.ordinal],
        ),
      ),
    );
    if (replies.some(([gap]) => gap === 1)) return { changes: [], cursor, gap: true };
    const merged: Array<{ bucket: number; id: string; change: string }> = [];
    replies.forEach(([, entries], i) => {
      const bucket = busy[i]!;
      for (const [id, fields] of entries) merged.push({ bucket, id, change: fields[1] ?? '' });
    });
    merged.sort((x, y) => compareStreamIds(x.id, y.id) || x.bucket - y.bucket);
    const next = positions.map((p) => ({ ...p }));
    const changes: LeaseChange[] = [];
    for (const { bucket, id, change } of merged.slice(0, limit)) {
      next[bucket] = { id, ordinal: next[bucket]!.ordinal + 1 };
      // kind LF workId LF (packed lease | token LF version): see scripts.ts.
      const a = change.indexOf('\n');
      const z = change.indexOf('\n', a + 1);
      if (a < 0 || z < 0) continue;
      const kind = change.slice(0, a);
      const workId = change.slice(a + 1, z);
      if (!KINDS.has(kind)) continue;
      if (kind === 'pruned') {
        const [token = '0', version = '0'] = change.slice(z + 1).split('\n');
        changes.push({ workId, kind, lease: null, fencingToken: BigInt(token), version: BigInt(version) });
        continue;
      }
      const lease = parsePacked(workId, change, 2);
      if (lease === null) continue;
      changes.push({
        workId,
        kind: kind as ChangeKind,
        lease,
        fencingToken: lease.fencingToken,
        version: lease.version,
      });
    }
    return { changes, cursor: encodeChangeCursor(next), gap: false };
  }

  /**
   * Wakes `onWake` when a bucket is written: every write script SPUBLISHes on its bucket's shard
   * channel (scripts.ts), and one subscriber connection per backend (per master on a cluster, by
   * ioredis' sharded subscribers) listens to all of them, so an idle reader sends no commands at
   * all. Readers are also woken whenever the subscription (re)connects, since messages published
   * while it was down are lost.
   */
  watchChanges(onWake: () => void): () => void {
    this.watchers.add(onWake);
    if (this.subscriber === null) this.subscriber = this.startWatch();
    let active = true;
    return () => {
      if (!active) return;
      active = false;
      this.watchers.delete(onWake);
      if (this.watchers.size === 0) this.stopWatch();
    };
  }

  /** One wake-up per burst of messages (a busy bucket publishes thousands a second). */
  private wakeAll(): void {
    if (this.wakePending) return;
    this.wakePending = true;
    queueMicrotask(() => {
      this.wakePending = false;
      for (const w of [...this.watchers]) {
        try {
          w();
        } catch {
          // One failing watcher must not starve the others.
        }
      }
    });
  }

  private startWatch(): RedisClient {
    const sub = createSubscriber(this.target, this.options);
    sub.on('error', () => {});
    sub.on('smessage', () => this.wakeAll());
    const channels = this.layout.wake;
    if (this.kind === 'redis') {
      // Subscribing again on every connection (autoResubscribe is off) keeps one code path.
      sub.on('ready', () => {
        (sub as Redis)
          .ssubscribe(...channels)
          .then(() => this.wakeAll())
          .catch(() => {});
      });
    } else {
      // A channel per slot: ioredis routes each to the master owning it and resubscribes after moves.
      Promise.all(channels.map((channel) => sub.ssubscribe(channel)))
        .then(() => this.wakeAll())
        .catch(() => {});
      sub.on('ready', () => this.wakeAll());
    }
    sub.connect().catch(() => {});
    return sub;
  }

  private stopWatch(): void {
    const sub = this.subscriber;
    this.subscriber = null;
    sub?.disconnect();
  }

  async close(): Promise<void> {
    this.watchers.clear();
    this.stopWatch();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.client.quit().catch(() => undefined),
      new Promise((resolve) => {
        timer = setTimeout(resolve, Math.min(this.callTimeoutMs, 2000));
      }),
    ]);
    clearTimeout(timer);
    this.client.disconnect();
  }
}

async function connect(client: RedisClient, target: RedisTarget, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      client.connect(),
      new Promise((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new BackendUnavailableError(`could not connect to ${target.redacted} within ${timeoutMs} ms`),
            ),
          timeoutMs,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Checks (and with `migrate`, creates) `<prefix>:meta`; returns the prefix's bucket count. */
/**
 * Opens a Redis or Redis Cluster lease backend. With `migrate` (default) the
 * prefix's meta key is created if missing; without it a missing or different
 * layout is a SchemaMismatchError.
 */
export async function openRedis(url: string, options: OpenOptions = {}): Promise<LeaseBackend> {
  const {
    address,
    options: o,
    url: effective,
  } = resolveTarget(url, options, ['redis', 'redis-cluster'], 'Redis');
  const target = { ...parseRedisUrl(address.driverUrl), redacted: effective };
  const client = createClient(target, o);
  // Failures reach callers through the calls; an unhandled 'error' event would crash the process.
  // The last socket error is kept: it is the only place ioredis says why a connection never came up.
  let socketError: unknown;
  const onSocketError = (err: unknown): void => {
    // Later wrappers ("Failed to refresh slots cache.") must not hide the errno seen before them.
    if (socketErrno(err) !== undefined || socketError === undefined) socketError = err;
  };
  client.on('error', onSocketError);
  const driver = new RedisDriver(client, target, o);
  try {
    await connect(client, target, o.callTimeoutMs);
    await driver.checkLayout(o.migrate);
  } catch (err) {
    client.disconnect();
    throw classifyRedisError(err, 'open', target.redacted, socketError);
  }
  return createBackend(driver, o.maxStateBytes, o.telemetry);
}
