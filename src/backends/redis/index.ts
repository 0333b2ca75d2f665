/**
 * The Redis backend: standalone Redis (`redis://`, `rediss://`) and Redis
 * Cluster (`redis+cluster://host:port[,host:port…]`) with the same scripts.
 *
 * Layout and the reasons for it: layout.ts. The scripts, their atomicity and
 * every outcome: scripts.ts. Connection and retry policy: connection.ts.
 * Error classification: errors.ts.
 *
 * Orderings this backend gives (documented because they are not global):
 * - `list` pages are ordered by bucket, then by work id (bytewise) within a
 *   bucket — not globally by work id. A work item that exists for the whole
 *   walk is listed exactly once.
 * - `changes` are oldest-first within a bucket; across buckets they are merged
 *   by stream id (the writing master's clock), which is not a global order on
 *   a cluster. Apply them by (token, version).
 * - `audit` without a work id merges the buckets' audit streams by time.
 */
import type { Cluster, Redis } from 'ioredis';
import {
  BackendUnavailableError,
  ConflictError,
  FencedError,
  InternalError,
  LeaseExpiredError,
  LeaseHeldError,
  NotFoundError,
  SchemaMismatchError,
} from '../../lease/errors.ts';
import type {
  AuditEntry,
  ChangeBatch,
  ChangeKind,
  CheckpointRead,
  LeaseBackend,
  LeaseChange,
  LeaseInfo,
  LeasePage,
  LeaseRecord,
  OpenOptions,
  PredecessorEnd,
  StatePage,
} from '../../lease/types.ts';
import { createBackend, type DriverListOptions, type LeaseDriver, resolveOptions } from '../common.ts';
import { createClient, parseRedisUrl, type RedisClient, type RedisTarget } from './connection.ts';
import { classifyRedisError } from './errors.ts';
import {
  compareStreamIds,
  DEFAULT_BUCKETS,
  decodeChangeCursor,
  decodeListCursor,
  encodeChangeCursor,
  encodeListCursor,
  INFO_FIELDS,
  LAYOUT_VERSION,
  Layout,
} from './layout.ts';
import { SCRIPTS, type ScriptName } from './scripts.ts';

export { parseRedisUrl } from './connection.ts';
export { Layout } from './layout.ts';

type Arg = string | Buffer | number;
type ScriptFn = (...args: Arg[]) => Promise<unknown>;
/** The commands `defineCommand` adds: `name` (string replies) and `nameBuffer` (Buffer replies). */
type ScriptClient = { [K in ScriptName | `${ScriptName}Buffer`]: ScriptFn };

type Nullable = string | null;
const KINDS = new Set<string>([
  'acquired',
  'renewed',
  'checkpointed',
  'released',
  'force-released',
  'pruned',
]);
const PRED_ENDS = new Set<string>(['none', 'released', 'expired', 'force-released']);

/** Parses INFO_FIELDS values (in that order) as stored; null when the lease hash does not exist. */
function parseInfo(workId: string, f: readonly unknown[] | null | undefined): LeaseInfo | null {
  if (!f || f[1] === null || f[1] === undefined) return null;
  const s = (i: number): string => {
    const v = f[i];
    return v === null || v === undefined ? '' : String(v);
  };
  const date = (i: number): Date | null => (s(i) === '' ? null : new Date(Number(s(i))));
  const pred = s(11);
  const ended = s(12);
  return {
    workId,
    holderId: s(0),
    fencingToken: BigInt(s(1)),
    expiresAt: new Date(Number(s(2))),
    ttlMs: Number(s(3)),
    stepId: s(4) === '' ? null : s(4),
    acquiredAt: new Date(Number(s(5))),
    renewedAt: date(6),
    checkpointedAt: date(7),
    releasedAt: date(8),
    checkpointSize: s(9) === '' ? null : Number(s(9)),
    cleanHandoff: s(10) === '1',
    predecessorEnd: (PRED_ENDS.has(pred) ? pred : 'none') as PredecessorEnd,
    ended: ended === 'released' || ended === 'force-released' ? ended : null,
    version: s(13) === '' ? 0n : BigInt(s(13)),
  };
}

const iso = (ms: unknown): string => new Date(Number(ms)).toISOString();

class RedisDriver implements LeaseDriver {
  readonly kind: 'redis' | 'redis-cluster';
  readonly url: string;
  private readonly scripts: ScriptClient;
  private readyWait: Promise<void> | null = null;

  constructor(
    private readonly client: RedisClient,
    readonly layout: Layout,
    target: RedisTarget,
    private readonly callTimeoutMs: number,
  ) {
    this.kind = target.kind;
    this.url = target.redacted;
    this.scripts = client as unknown as ScriptClient;
  }

  /**
   * Runs one call: waits (bounded) for a ready connection instead of letting
   * ioredis queue the call, then sends it exactly once. See connection.ts.
   */
  private async run<T>(op: string, fn: (c: ScriptClient) => Promise<T>): Promise<T> {
    try {
      if (this.client.status !== 'ready') await this.waitReady(op);
      return await fn(this.scripts);
    } catch (err) {
      throw classifyRedisError(err, op, this.url);
    }
  }

  private async waitReady(op: string): Promise<void> {
    const deadline = Date.now() + this.callTimeoutMs;
    while (this.client.status !== 'ready') {
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
      await Promise.race([
        this.readyWait,
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, left);
        }),
      ]);
      clearTimeout(timer);
    }
  }

  private leaseKeys(workId: string): { b: number; key: string } {
    const b = this.layout.bucketOf(workId);
    return { b, key: this.layout.leaseKey(b, workId) };
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

  /** Shared outcome handling of renew/checkpoint/release replies. */
  private guarded(record: LeaseRecord, reply: unknown[]): number {
    switch (reply[0]) {
      case 'OK':
        return Number(reply[1]);
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
    const { b, key } = this.leaseKeys(workId);
    const reply = (await this.run('acquire', (c) =>
      c.wlAcquire(key, L.tok[b]!, L.ids[b]!, L.exp[b]!, L.chg[b]!, workId, holderId, ttlMs, stepId ?? ''),
    )) as unknown[];
    if (reply[0] === 'OK') {
      return {
        workId,
        holderId,
        fencingToken: BigInt(reply[1] as number),
        expiresAt: new Date(Number(reply[2])),
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

  async checkpoint(record: LeaseRecord, state: Uint8Array, ttlMs: number): Promise<void> {
    const L = this.layout;
    const { b, key } = this.leaseKeys(record.workId);
    const bytes = Buffer.isBuffer(state)
      ? state
      : Buffer.from(state.buffer, state.byteOffset, state.byteLength);
    const reply = (await this.run('checkpoint', (c) =>
      c.wlCheckpoint(key, L.exp[b]!, L.chg[b]!, record.workId, record.fencingToken.toString(), ttlMs, bytes),
    )) as unknown[];
    this.guarded(record, reply);
  }

  async renew(record: LeaseRecord, ttlMs: number): Promise<LeaseRecord> {
    const L = this.layout;
    const { b, key } = this.leaseKeys(record.workId);
    const reply = (await this.run('renew', (c) =>
      c.wlRenew(key, L.exp[b]!, L.chg[b]!, record.workId, record.fencingToken.toString(), ttlMs),
    )) as unknown[];
    const expiresAt = this.guarded(record, reply);
    return {
      workId: record.workId,
      holderId: record.holderId,
      fencingToken: record.fencingToken,
      expiresAt: new Date(expiresAt),
    };
  }

  async release(record: LeaseRecord): Promise<void> {
    const L = this.layout;
    const { b, key } = this.leaseKeys(record.workId);
    const reply = (await this.run('release', (c) =>
      c.wlRelease(key, L.exp[b]!, L.chg[b]!, record.workId, record.fencingToken.toString()),
    )) as unknown[];
    this.guarded(record, reply);
  }

  /** One HMGET: a single command is atomic, so token, state and clean come from one consistent lease. */
  async readCheckpoint(record: LeaseRecord): Promise<CheckpointRead> {
    const { key } = this.leaseKeys(record.workId);
    const [token, state, clean] = await this.run('readCheckpoint', (c) =>
      (c as unknown as Redis).hmgetBuffer(key, 'token', 'state', 'clean'),
    );
    if (
      token === null ||
      token === undefined ||
      token.toString('latin1') !== record.fencingToken.toString()
    ) {
      throw this.fenced(record, token?.toString('latin1') ?? null);
    }
    return { state: state ?? null, cleanHandoff: clean?.toString('latin1') === '1' };
  }

  async get(workId: string): Promise<LeaseInfo | null> {
    const { key } = this.leaseKeys(workId);
    const f = await this.run('get', (c) => (c as unknown as Redis).hmget(key, ...INFO_FIELDS));
    return parseInfo(workId, f);
  }

  async list(options: DriverListOptions): Promise<LeasePage> {
    const L = this.layout;
    const start =
      options.cursor === null ? { bucket: 0, after: null } : decodeListCursor(options.cursor, L.buckets);
    const prefix =
      options.workIdPrefix === undefined || options.workIdPrefix === '' ? null : options.workIdPrefix;
    const prefixBytes = prefix === null ? null : Buffer.from(prefix, 'utf8');
    // Every UTF-8 string that starts with the prefix sorts before prefix + 0xFF (never a UTF-8 byte).
    const max: Arg =
      prefixBytes === null ? '+' : Buffer.concat([Buffer.from('['), prefixBytes, Buffer.from([0xff])]);
    const items: LeaseInfo[] = [];
    let bucket = start.bucket;
    let after = start.after;
    while (bucket < L.buckets) {
      let min: Arg;
      if (
        after !== null &&
        (prefixBytes === null || Buffer.compare(Buffer.from(after, 'utf8'), prefixBytes) >= 0)
      ) {
        min = Buffer.concat([Buffer.from('('), Buffer.from(after, 'utf8')]);
      } else {
        min = prefixBytes === null ? '-' : Buffer.concat([Buffer.from('['), prefixBytes]);
      }
      const want = options.limit - items.length;
      const b = bucket;
      const [done, last, rows] = (await this.run('list', (c) =>
        c.wlListScan(
          L.ids[b]!,
          L.leasePrefixes[b]!,
          min,
          max,
          want,
          options.holderId ?? '',
          Math.max(want, 1000),
        ),
      )) as [number, Nullable, Array<[string, Nullable[]]>];
      for (const [workId, f] of rows) {
        const info = parseInfo(workId, f);
        if (info !== null) items.push(info);
      }
      if (done === 1) {
        bucket++;
        after = null;
        if (items.length >= options.limit) {
          return { items, nextCursor: bucket < L.buckets ? encodeListCursor({ bucket, after: null }) : null };
        }
      } else {
        if (last !== null) after = last;
        if (items.length >= options.limit) return { items, nextCursor: encodeListCursor({ bucket, after }) };
      }
    }
    return { items, nextCursor: null };
  }

  async forceRelease(
    workId: string,
    expectedToken: bigint,
    operator: string,
    reason: string,
  ): Promise<LeaseInfo> {
    const L = this.layout;
    const { b, key } = this.leaseKeys(workId);
    const reply = (await this.run('forceRelease', (c) =>
      c.wlForceRelease(
        key,
        L.tok[b]!,
        L.exp[b]!,
        L.chg[b]!,
        L.aud[b]!,
        workId,
        expectedToken.toString(),
        operator,
        reason,
      ),
    )) as unknown[];
    switch (reply[0]) {
      case 'OK': {
        const info = parseInfo(workId, reply.slice(1));
        if (info === null) throw new InternalError(`force-release of '${workId}' returned no lease`);
        return info;
      }
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

  async audit(workId: string | undefined, limit: number): Promise<AuditEntry[]> {
    const L = this.layout;
    type Raw = Array<[string, string[]]>;
    const toEntry = (bucket: number, [id, fields]: [string, string[]]): AuditEntry => {
      const m = new Map<string, string>();
      for (let i = 0; i + 1 < fields.length; i += 2) m.set(fields[i]!, fields[i + 1]!);
      const at = m.get('at');
      return {
        id: `b${bucket}:${id}`,
        at: new Date(at === undefined ? Number(id.split('-')[0]) : Number(at)),
        action: 'force-release',
        workId: m.get('workId') ?? '',
        operator: m.get('operator') ?? '',
        reason: m.get('reason') ?? '',
        oldHolderId: m.get('old_holder') ?? '',
        oldToken: BigInt(m.get('old_token') ?? '0'),
        newToken: BigInt(m.get('new_token') ?? '0'),
      };
    };
    if (workId !== undefined) {
      // One bucket's stream holds other work items' entries too: page back through it until enough match.
      const b = L.bucketOf(workId);
      const out: AuditEntry[] = [];
      let end = '+';
      for (;;) {
        const page = (await this.run('audit', (c) =>
          (c as unknown as Redis).xrevrange(L.aud[b]!, end, '-', 'COUNT', 500),
        )) as Raw;
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
      L.aud.map((key) =>
        this.run('audit', (c) => (c as unknown as Redis).xrevrange(key, '+', '-', 'COUNT', limit)),
      ),
    );
    const all: Array<{ bucket: number; raw: [string, string[]] }> = [];
    pages.forEach((page, bucket) => {
      for (const raw of page as Raw) all.push({ bucket, raw });
    });
    all.sort((x, y) => compareStreamIds(y.raw[0], x.raw[0]) || x.bucket - y.bucket);
    return all.slice(0, limit).map(({ bucket, raw }) => toEntry(bucket, raw));
  }

  async prune(olderThanMs: number, limit: number): Promise<number> {
    const L = this.layout;
    let total = 0;
    // Bucket by bucket, so the total never exceeds `limit`.
    for (let b = 0; b < L.buckets && total < limit; b++) {
      const n = await this.run('prune', (c) =>
        c.wlPrune(L.exp[b]!, L.ids[b]!, L.chg[b]!, olderThanMs, limit - total, L.leasePrefixes[b]!),
      );
      total += Number(n);
    }
    return total;
  }

  async readState(workId: string, offset: number, length: number): Promise<StatePage | null> {
    const { key } = this.leaseKeys(workId);
    const reply = (await this.run('readState', (c) => c.wlReadStateBuffer(key, offset, length))) as
      | [Buffer, number | null, Buffer]
      | null;
    if (reply === null) return null;
    const [token, size, bytes] = reply;
    return { fencingToken: BigInt(token.toString('latin1')), size: size ?? null, offset, bytes };
  }

  async serverTime(): Promise<Date> {
    const [s, us] = await this.run('serverTime', (c) => (c as unknown as Redis).time());
    return new Date(Number(s) * 1000 + Math.floor(Number(us) / 1000));
  }

  async changeCursor(): Promise<string> {
    const L = this.layout;
    // Buckets live on different masters on a cluster: one call per bucket, all in flight at once.
    const ids = await Promise.all(L.chg.map((key) => this.run('changeCursor', (c) => c.wlStreamHead(key))));
    return encodeChangeCursor(ids.map(String));
  }

  async changes(cursor: string, limit: number): Promise<ChangeBatch> {
    const L = this.layout;
    const ids = decodeChangeCursor(cursor, L.buckets);
    // Each bucket contributes at most its share, so one batch costs O(limit) however many buckets are busy;
    // the merged batch is cut to `limit` and each bucket's cursor moves only past what was returned.
    const perBucket = Math.max(1, Math.ceil(limit / L.buckets));
    type Entry = [string, string, string, string, string, Nullable[] | null];
    const replies = (await Promise.all(
      L.chg.map((key, b) =>
        this.run('changes', (c) => c.wlChangesRead(key, ids[b]!, perBucket, L.leasePrefixes[b]!)),
      ),
    )) as Array<[number, Entry[]]>;
    if (replies.some(([gap]) => gap === 1)) return { changes: [], cursor, gap: true };
    const merged: Array<{ bucket: number; e: Entry }> = [];
    replies.forEach(([, entries], bucket) => {
      for (const e of entries) merged.push({ bucket, e });
    });
    merged.sort((x, y) => compareStreamIds(x.e[0], y.e[0]) || x.bucket - y.bucket);
    const next = [...ids];
    const changes: LeaseChange[] = [];
    for (const { bucket, e } of merged.slice(0, limit)) {
      const [streamId, workId, kind, token, version, fields] = e;
      next[bucket] = streamId;
      if (!KINDS.has(kind)) continue;
      changes.push({
        workId,
        kind: kind as ChangeKind,
        lease: kind === 'pruned' ? null : parseInfo(workId, fields),
        fencingToken: BigInt(token),
        version: BigInt(version),
      });
    }
    return { changes, cursor: encodeChangeCursor(next), gap: false };
  }

  async close(): Promise<void> {
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
async function checkLayout(
  client: RedisClient,
  layoutMeta: string,
  target: RedisTarget,
  prefix: string,
  migrate: boolean,
): Promise<number> {
  const [layout, buckets] = migrate
    ? ((await (client as unknown as ScriptClient).wlMigrate(
        layoutMeta,
        LAYOUT_VERSION,
        DEFAULT_BUCKETS,
      )) as Nullable[])
    : await (client as Redis | Cluster).hmget(layoutMeta, 'layout', 'buckets');
  const hint = `run \`worklease migrate ${target.redacted}\` (key prefix '${prefix}')`;
  if (layout === null || layout === undefined) {
    throw new SchemaMismatchError(
      `no worklease data layout under key prefix '${prefix}' on ${target.redacted}: ${hint}`,
      {
        details: { keyPrefix: prefix, found: null, expected: LAYOUT_VERSION },
      },
    );
  }
  const n = Number(buckets);
  if (layout !== String(LAYOUT_VERSION) || !Number.isInteger(n) || n < 1 || n > 16384) {
    throw new SchemaMismatchError(
      `key prefix '${prefix}' on ${target.redacted} holds data layout ${layout} (buckets ${String(buckets)}); this version of worklease reads layout ${LAYOUT_VERSION}`,
      { details: { keyPrefix: prefix, found: layout, expected: LAYOUT_VERSION } },
    );
  }
  return n;
}

/**
 * Opens a Redis or Redis Cluster lease backend. With `migrate` (default) the
 * prefix's meta key is created if missing; without it a missing or different
 * layout is a SchemaMismatchError.
 */
export async function openRedis(url: string, options: OpenOptions = {}): Promise<LeaseBackend> {
  const o = resolveOptions(options);
  const target = parseRedisUrl(url);
  const client = createClient(target, o);
  // Failures reach callers through the calls; an unhandled 'error' event would crash the process.
  client.on('error', () => {});
  for (const [name, def] of Object.entries(SCRIPTS)) client.defineCommand(name, def);
  const meta = `${o.keyPrefix}:meta`;
  let buckets: number;
  try {
    await connect(client, target, o.callTimeoutMs);
    buckets = await checkLayout(client, meta, target, o.keyPrefix, o.migrate);
  } catch (err) {
    client.disconnect();
    throw classifyRedisError(err, 'open', target.redacted);
  }
  const driver = new RedisDriver(client, new Layout(o.keyPrefix, buckets), target, o.callTimeoutMs);
  return createBackend(driver, o.maxStateBytes);
}
