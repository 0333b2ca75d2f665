/**
 * The Redis backend: standalone Redis (`redis://`, `rediss://`), a Sentinel-managed master
 * (`redis+sentinel://host:port[,host:port…]/masterName`, followed across failovers: sentinel.ts)
 * and Redis Cluster (`redis+cluster://host:port[,host:port…]`) with the same scripts.
 *
 * This file: the driver and its lease calls. Layout and the reasons for it:
 * layout.ts. The scripts, their atomicity and every outcome: scripts.ts.
 * Sending (at most once, cork, watchdog): send.ts. Opening and the layout
 * check: open.ts. Admin calls: admin.ts. The change feed: feed.ts. Listing:
 * listing.ts. Parsing packed leases: packed.ts. Connection and retry policy:
 * connection.ts. Error classification: errors.ts.
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

import type { Redis } from 'ioredis';
import {
  BackendUnavailableError,
  FencedError,
  InternalError,
  LeaseExpiredError,
  LeaseHeldError,
} from '../../lease/errors.ts';
import type {
  AuditEntry,
  ChangeBatch,
  CheckpointRead,
  CheckpointResult,
  DatasetLoss,
  HistoryEntry,
  LeaseBackend,
  LeaseInfo,
  LeasePage,
  LeaseRecord,
  OpenOptions,
  RecoverOptions,
  RecoveryResult,
  ReleaseRequest,
  StatePage,
} from '../../lease/types.ts';
import {
  createBackend,
  type DriverListOptions,
  type HistoryPruning,
  type LeaseDriver,
  type ResolvedOptions,
  resolveTarget,
} from '../common.ts';
import { socketErrno } from '../errno.ts';
import { ServerClock } from '../server-clock.ts';
import * as admin from './admin.ts';
import { createClient, parseRedisUrl, type RedisClient, type RedisTarget } from './connection.ts';
import { withTlsHint } from './diagnose.ts';
import { classifyRedisError } from './errors.ts';
import { ChangeWatch, changeCursor, changes } from './feed.ts';
import { getMany } from './get-many.ts';
import * as history from './history.ts';
import { Layout } from './layout.ts';
import { count, list } from './listing.ts';
import { checkLayout, connect, selectDb } from './open.ts';
import { iso, parsePacked, parseRequest } from './packed.ts';
import { inspectLoss, recover } from './recover.ts';
import { STAGED_MIN_BYTES } from './scripts.ts';
import { type Nullable, S, Sender } from './send.ts';
import { keepConnecting, MasterFollower, SentinelWatch } from './sentinel.ts';

export { parseRedisUrl } from './connection.ts';

export { Layout } from './layout.ts';

class RedisDriver implements LeaseDriver {
  readonly kind: 'redis' | 'redis-cluster';
  readonly url: string;
  private readonly io: Sender;
  private readonly watch: ChangeWatch;
  /**
   * The server's clock for acquire deadlines (scripts.ts, acquire): one per bucket, since on a
   * Cluster each bucket's master runs on its own clock, learnt from that bucket's acquire replies;
   * {@link opened} (TIME when the backend opened) until a bucket has one.
   */
  private readonly clocks: (ServerClock | undefined)[] = [];
  private readonly opened = new ServerClock();
  /** A Sentinel target's `+switch-master` subscriptions (sentinel.ts); null otherwise. */
  private readonly sentinelWatch: SentinelWatch | null;
  /** Set by {@link close} / {@link drop}: the client may end for good. */
  private closed = false;

  constructor(
    private readonly client: RedisClient,
    target: RedisTarget,
    options: ResolvedOptions,
  ) {
    this.io = new Sender(client, target, options);
    this.watch = new ChangeWatch(this.io);
    this.kind = target.kind;
    this.url = target.redacted;
    if (target.sentinel === undefined) this.sentinelWatch = null;
    else {
      const follower = new MasterFollower(client as Redis);
      keepConnecting(client as Redis, () => this.closed);
      this.sentinelWatch = new SentinelWatch(
        target,
        Math.max(1, Math.floor(options.callTimeoutMs / 2)),
        (to) => follower.switched(to),
      );
    }
  }

  async checkLayout(migrate: boolean): Promise<void> {
    await selectDb(this.io);
    return checkLayout(this.io, migrate);
  }

  /** Reads the server's clock once (TIME), for the deadlines of the first acquires. */
  async measureClock(): Promise<void> {
    const [sec, usec] = await this.io.send<[string, string]>('open', 'time', []);
    this.opened.observe(Number(sec) * 1000 + Math.floor(Number(usec) / 1000), performance.now());
  }

  /**
   * The server-clock ms at or before this call's give-up moment (its call timeout), '' when the
   * server's clock was never read.
   */
  private deadline(b: number): string {
    const at = (this.clocks[b] ?? this.opened).deadline(this.io.callTimeoutMs);
    return at === null ? '' : String(at);
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
    const L = this.io.layout;
    const b = L.bucketOf(workId);
    const ttl = String(ttlMs);
    const deadline = this.deadline(b);
    const reply = await this.io.runChecked<string | unknown[]>(
      'acquire',
      S.acquire,
      b,
      [L.m[b]!, L.chg[b]!, L.historyKey(b, workId)],
      stepId === null ? [workId, holderId, ttl, deadline] : [workId, holderId, ttl, stepId, deadline],
    );
    if (typeof reply === 'string') {
      const space = reply.indexOf(' ');
      const expiresAt = Number(reply.slice(space + 1));
      // expires_at is the script's TIME + ttl: a server time read before this answer came.
      const received = performance.now();
      let clock = this.clocks[b];
      if (clock === undefined) {
        clock = new ServerClock();
        this.clocks[b] = clock;
      }
      clock.observe(expiresAt - ttlMs, received);
      if (this.io.durable) await this.io.confirm('acquire', b);
      return {
        workId,
        holderId,
        fencingToken: BigInt(reply.slice(0, space)),
        expiresAt: new Date(expiresAt),
      };
    }
    if (reply[0] === 'LATE') {
      throw new BackendUnavailableError(
        `acquire of '${workId}' on ${this.url} refused: its caller had given up (the call's deadline, ${deadline} ms in the server's clock, had passed when the server came to it at ${String(reply[1])}; nothing was written)`,
        { details: { workId, deadlineMs: Number(deadline), serverMs: Number(reply[1]) } },
      );
    }
    if (reply[0] === 'ONHOLD') throw history.onHoldError(workId, String(reply[1]));
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
    const L = this.io.layout;
    const b = L.bucketOf(record.workId);
    const bytes = Buffer.isBuffer(state)
      ? state
      : Buffer.from(state.buffer, state.byteOffset, state.byteLength);
    const keys = [L.m[b]!, L.stateKey(b, record.workId)];
    const token = record.fencingToken.toString();
    // A large state skips Lua (scripts.ts, checkpointStaged); a small one costs less as one script.
    const staged =
      bytes.length < STAGED_MIN_BYTES
        ? undefined
        : await this.io.runHeldStaged<string | unknown[]>(
            'checkpoint',
            b,
            L.stagingKey(b, record.workId),
            bytes,
            keys,
            [record.workId, token, String(ttlMs), String(bytes.length)],
          );
    const reply =
      staged ??
      (await this.io.runHeld<string | unknown[]>('checkpoint', S.checkpoint, b, keys, [
        record.workId,
        token,
        String(ttlMs),
        bytes,
      ]));
    const { request } = this.guarded(record, reply);
    if (this.io.durable) await this.io.confirm('checkpoint', b);
    return request === undefined ? {} : { releaseRequested: request };
  }

  async renew(record: LeaseRecord, ttlMs: number): Promise<LeaseRecord> {
    const L = this.io.layout;
    const b = L.bucketOf(record.workId);
    const reply = await this.io.runHeld<string | unknown[]>(
      'renew',
      S.renew,
      b,
      [L.m[b]!],
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
    const L = this.io.layout;
    const b = L.bucketOf(record.workId);
    const reply = await this.io.runHeld<string | unknown[]>(
      'release',
      S.release,
      b,
      [L.m[b]!, L.chg[b]!, L.historyKey(b, record.workId)],
      [record.workId, record.fencingToken.toString()],
    );
    this.guarded(record, reply);
  }

  /**
   * Token, clean flag and state read together from one consistent lease. On the lease calls
   * connection: one transaction of three reads, the lease, the state and the bucket's dataset id,
   * checked here as the readCheckpoint script checks them, so no Lua runs and the bytes go from the
   * GET to the socket (server instructions per read, callgrind, private Redis 7.0, 1 920 reads
   * pipelined 16 at a time: 64 B 36.7k by the script / 17.3k this way, 1 KiB 47.7k / 17.7k, 64 KiB
   * 997.6k / 84.0k: Redis hashes every byte of a string Lua gets, scripts.ts checkpointStaged).
   * Elsewhere (a Cluster, durability on, that connection not up) the script.
   */
  async readCheckpoint(record: LeaseRecord): Promise<CheckpointRead> {
    const L = this.io.layout;
    const b = L.bucketOf(record.workId);
    const token = record.fencingToken.toString();
    const tx = await this.io.transaction(
      'readCheckpoint',
      [
        { name: 'hget', args: [L.m[b]!, record.workId] },
        { name: 'get', args: [L.stateKey(b, record.workId)] },
        { name: 'get', args: [L.id[b]!] },
      ],
      true,
    );
    if (tx !== undefined) {
      this.io.fail('readCheckpoint', tx);
      const [packed, state, dataset] = tx as [Buffer | null, Buffer | null, Buffer | null];
      // As the script's pattern (scripts.ts, tokenAnd(11)): the token is field 2, the clean flag
      // field 11, and a lease has more fields after it; a tombstone (a pruned item) has none.
      const fields = packed === null ? [] : packed.toString('utf8').split('\n', 12);
      const stored = fields.length === 12 ? fields[1]! : null;
      if (stored !== token) {
        this.io.checkRefusal('readCheckpoint', b, ['FENCED', stored, dataset?.toString('utf8') ?? null]);
        throw this.fenced(record, stored);
      }
      return { state, cleanHandoff: fields[10] === '1' };
    }
    const [first, second] = await this.io.runHeld<[Buffer, Buffer | null]>(
      'readCheckpoint',
      S.readCheckpoint,
      b,
      [L.m[b]!],
      [record.workId, token],
      true,
    );
    // The clean flag ('0' or '1') on success; 'FENCED' otherwise.
    if (first.length !== 1) throw this.fenced(record, second?.toString('latin1') ?? null);
    return { state: second ?? null, cleanHandoff: first[0] === 0x31 };
  }

  async get(workId: string): Promise<LeaseInfo | null> {
    const L = this.io.layout;
    const b = L.bucketOf(workId);
    const [packed, held] = await Promise.all([
      this.io.send<Nullable>('get', 'hget', [L.m[b]!, workId]),
      this.io.send<Nullable>('get', 'hget', [L.hold[b]!, workId]),
    ]);
    const info = packed === null ? null : parsePacked(workId, packed);
    return info === null ? null : history.withHold(info, held);
  }

  getMany(workIds: readonly string[]): Promise<Array<LeaseInfo | null>> {
    return getMany(this.io, workIds);
  }

  count(workIdPrefix: string | undefined, holderId: string | undefined): Promise<number> {
    return count(this.io, workIdPrefix, holderId);
  }

  list(options: DriverListOptions): Promise<LeasePage> {
    return list(this.io, options);
  }

  forceRelease(
    workId: string,
    expectedToken: bigint,
    operator: string,
    reason: string,
    batchId: string | null,
  ): Promise<LeaseInfo> {
    return admin.forceRelease(this.io, workId, expectedToken, operator, reason, batchId);
  }

  requestRelease(
    workId: string,
    expectedToken: bigint,
    operator: string,
    reason: string,
  ): Promise<LeaseInfo> {
    return admin.requestRelease(this.io, workId, expectedToken, operator, reason);
  }

  audit(workId: string | undefined, limit: number): Promise<AuditEntry[]> {
    return admin.audit(this.io, workId, limit);
  }

  async prune(olderThanMs: number, limit: number, retention: HistoryPruning): Promise<number> {
    const n = await admin.prune(this.io, olderThanMs, limit);
    await history.pruneHistory(this.io, retention);
    return n;
  }

  readState(workId: string, offset: number, length: number): Promise<StatePage | null> {
    return admin.readState(this.io, workId, offset, length);
  }

  history(workId: string, before: string | null, limit: number): Promise<HistoryEntry[]> {
    return history.history(this.io, workId, before, limit);
  }

  hold(workId: string, operator: string, reason: string): Promise<LeaseInfo> {
    return history.hold(this.io, workId, operator, reason, true);
  }

  unhold(workId: string, operator: string, reason: string): Promise<LeaseInfo> {
    return history.hold(this.io, workId, operator, reason, false);
  }

  handoffCheckpoint(workId: string, offset: number, length: number): Promise<StatePage | null> {
    return history.handoffCheckpoint(this.io, workId, offset, length);
  }

  serverTime(): Promise<Date> {
    return admin.serverTime(this.io);
  }

  serverVersion(): Promise<string> {
    return admin.serverVersion(this.io);
  }

  changeCursor(): Promise<string> {
    return changeCursor(this.io);
  }

  async datasetLoss(workIds: readonly string[]): Promise<DatasetLoss> {
    const loss = await inspectLoss(this.io);
    const lost = new Set(loss.lost);
    const L = new Layout(this.io.prefix, loss.buckets);
    return { ...loss, affected: workIds.filter((w) => lost.has(L.bucketOf(w))) };
  }

  /** See {@link recoverRedis}. */
  async recover(options: RecoverOptions): Promise<RecoveryResult> {
    if (options.dryRun === true) {
      return { ...(await inspectLoss(this.io)), recovered: [], metaRecreated: false, dryRun: true };
    }
    return { ...(await recover(this.io, options.operator, options.reason)), dryRun: false };
  }

  changes(cursor: string, limit: number): Promise<ChangeBatch> {
    return changes(this.io, cursor, limit);
  }

  watchChanges(onWake: () => void): () => void {
    return this.watch.watchChanges(onWake);
  }

  /** Ends every connection at once, without QUIT (an open that failed). */
  drop(): void {
    this.closed = true;
    this.sentinelWatch?.close();
    this.watch.close();
    this.io.close();
    this.client.disconnect();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.sentinelWatch?.close();
    this.watch.close();
    this.io.close();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.client.quit().catch(() => undefined),
      new Promise((resolve) => {
        timer = setTimeout(resolve, Math.min(this.io.callTimeoutMs, 2000));
      }),
    ]);
    clearTimeout(timer);
    this.client.disconnect();
  }
}

/** A client and driver for `url`, connected (not yet checked: the caller reads the prefix). */
async function connectDriver(
  url: string,
  options: OpenOptions,
  run: (driver: RedisDriver, o: ResolvedOptions) => Promise<void>,
): Promise<{ client: RedisClient; driver: RedisDriver; o: ResolvedOptions }> {
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
    await run(driver, o);
  } catch (err) {
    driver.drop();
    const e = classifyRedisError(err, 'open', target.redacted, socketError, target.sentinel !== undefined);
    throw await withTlsHint(e, target, Math.min(o.callTimeoutMs, 2000));
  }
  return { client, driver, o };
}

/**
 * Opens a Redis or Redis Cluster lease backend. With `migrate` (default) the
 * prefix's meta key is created if missing; without it a missing or different
 * layout is a SchemaMismatchError.
 */
export async function openRedis(url: string, options: OpenOptions = {}): Promise<LeaseBackend> {
  const { driver, o } = await connectDriver(url, options, async (d, resolved) => {
    await d.checkLayout(resolved.migrate);
    await d.measureClock();
  });
  return createBackend(driver, o.maxStateBytes, o.telemetry);
}

/**
 * Re-initialises the lost buckets of a Redis key prefix (recover.ts): what `worklease recover` and
 * the console's recover action run. Opens no backend (a prefix whose meta key is gone cannot be
 * opened until it is recovered) and closes its connection before it returns.
 */
export async function recoverRedis(
  url: string,
  recoverOptions: RecoverOptions,
  options: OpenOptions = {},
): Promise<RecoveryResult> {
  let result: RecoveryResult | undefined;
  const { driver } = await connectDriver(url, options, async (d) => {
    result = await d.recover(recoverOptions);
  });
  await driver.close();
  if (result === undefined) throw new InternalError('recover returned nothing');
  return result;
}
