/**
 * The change feed of the Redis backend: cursors over the buckets' change streams, reading and
 * merging them, and the wake-ups of idle readers (a blocking XREAD on standalone Redis, sharded
 * Pub/Sub on a Cluster).
 */
import type { Redis } from 'ioredis';
import type { ChangeBatch, ChangeKind, LeaseChange } from '../../lease/types.ts';
import { createSubscriber, type RedisClient } from './connection.ts';
import { addHolds } from './history.ts';
import { compareStreamIds, decodeChangeCursor, encodeChangeCursor } from './layout.ts';
import { parsePacked } from './packed.ts';
import { S, type Sender, sleep } from './send.ts';

/**
 * The kinds this backend delivers. Entries of `renewed` and `checkpointed`, which versions before
 * the feed's contract change wrote, are skipped (the cursor still moves past them).
 */
const KINDS = new Set<string>(['acquired', 'released', 'force-released', 'release-requested', 'pruned']);

export async function changeCursor(io: Sender): Promise<string> {
  const L = io.layout;
  // Buckets live on different masters on a cluster: one call per bucket, all in flight at once.
  const heads = await Promise.all(
    L.chg.map((key, b) => io.runIn<[string, number]>('changeCursor', S.streamHead, b, [key], [])),
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
export async function changes(io: Sender, cursor: string, limit: number): Promise<ChangeBatch> {
  const L = io.layout;
  const positions = decodeChangeCursor(cursor, L.buckets);
  // Each bucket contributes at most its share, so one batch costs O(limit) however many buckets are busy;
  // the merged batch is cut to `limit` and each bucket's cursor moves only past what was returned.
  const perBucket = Math.max(1, Math.ceil(limit / L.buckets));
  let busy: number[];
  if (io.kind === 'redis') {
    const ids = positions.map((p) => p.id);
    const found = await io.send<Array<[string, unknown]> | null>('changes', 'xread', [
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
      io.runIn<[number, Array<[string, string[]]>]>(
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
  await addHolds(io, changes);
  return { changes, cursor: encodeChangeCursor(next), gap: false };
}

/**
 * How long the standalone watch waits after a wake-up before it blocks again: at most one XREAD
 * per this many ms on a busy fleet, instead of one wake-up per write. A write in that pause answers
 * the next XREAD at once, so it delays a reader by at most this long.
 */
const REBLOCK_MS = 5;

/** Each stream's newest entry id ('0-0' for one without entries), read in one round trip. */
async function heads(conn: Redis, keys: readonly string[]): Promise<string[]> {
  const pipeline = conn.pipeline();
  for (const key of keys) pipeline.xrevrange(key, '+', '-', 'COUNT', 1);
  const replies = (await pipeline.exec()) ?? [];
  return keys.map((_, i) => {
    const [err, entries] = replies[i] ?? [new Error('no reply')];
    if (err) throw err;
    const newest = (entries as Array<[string, string[]]>)[0];
    return newest === undefined ? '0-0' : newest[0];
  });
}

/** The readers of one backend waiting for writes, and the one watch connection that wakes them. */
export class ChangeWatch {
  private readonly watchers = new Set<() => void>();
  private subscriber: RedisClient | null = null;
  private wakePending = false;

  constructor(private readonly io: Sender) {}

  /**
   * Wakes `onWake` when a bucket gets a change entry, through one watch connection per backend, so
   * an idle reader sends no commands at all. On standalone Redis it blocks in one XREAD over every
   * bucket's stream ({@link startBlockingWatch}). On a Cluster one XREAD cannot span slots: every
   * script that adds an entry there SPUBLISHes on its bucket's shard channel (scripts.ts, WAKE),
   * and the connection (one per master, by ioredis' sharded subscribers) listens to all of them.
   * Readers are also woken whenever the watch (re)connects, since writes made while it was down
   * woke nobody.
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
    const sub = createSubscriber(this.io.target, this.io.options);
    sub.on('error', () => {});
    if (this.io.kind === 'redis') {
      // Connected here: a pipeline on a lazy connection would wait for another command to connect it.
      sub.on('ready', () => this.wakeAll());
      sub.connect().catch(() => {});
      // Started once `this.subscriber` is this connection (the loop runs while it is).
      queueMicrotask(() => void this.startBlockingWatch(sub as Redis));
      return sub;
    }
    sub.on('smessage', () => this.wakeAll());
    // Each bucket's writes publish on the shard channel named as its stream key (scripts.ts, emit).
    // A channel per slot: ioredis routes each to the master owning it and resubscribes after moves.
    Promise.all(this.io.layout.chg.map((channel) => sub.ssubscribe(channel)))
      .then(() => this.wakeAll())
      .catch(() => {});
    sub.on('ready', () => this.wakeAll());
    sub.connect().catch(() => {});
    return sub;
  }

  /**
   * The standalone watch, until {@link stopWatch}: reads each stream's newest entry id, wakes the
   * readers, then blocks in `XREAD BLOCK 0` over every stream from those ids. An XADD answers it
   * by itself (the scripts publish nothing on standalone Redis: scripts.ts, WAKE). On an answer it
   * reads the newest ids of the streams that moved, wakes the readers, and blocks again from there
   * after {@link REBLOCK_MS}: a write after that read answers the next XREAD, and one before it is
   * seen by the readers just woken, so no write goes unnoticed. When the connection breaks, ioredis
   * sends the XREAD again once it is back, from the same ids, so the writes made meanwhile answer
   * it at once (a server that restarted empty gives its new entries later ids: they are made of
   * its clock); the readers are woken on every reconnect too. Any other failure (a reply that is
   * not a stream's) starts over from the heads, after a backoff.
   */
  private async startBlockingWatch(conn: Redis): Promise<void> {
    const L = this.io.layout;
    let ids: string[] | null = null;
    let failures = 0;
    while (this.subscriber === conn) {
      try {
        if (ids === null) {
          ids = await heads(conn, L.chg);
          if (this.subscriber !== conn) return;
          this.wakeAll();
        }
        const reply = (await conn.call(
          'XREAD',
          'COUNT',
          '1',
          'BLOCK',
          '0',
          'STREAMS',
          ...L.chg,
          ...ids,
        )) as Array<[string, unknown]> | null;
        failures = 0;
        if (reply === null || this.subscriber !== conn) continue;
        const moved = reply.map(([key]) => L.bucketOfStream(String(key)));
        const newest = await heads(
          conn,
          moved.map((b) => L.chg[b]!),
        );
        moved.forEach((b, i) => {
          ids![b] = newest[i]!;
        });
        this.wakeAll();
        await sleep(REBLOCK_MS);
      } catch {
        if (this.subscriber !== conn) return;
        ids = null;
        await sleep(Math.min(1000, 25 * 2 ** Math.min(++failures, 6)));
      }
    }
  }

  private stopWatch(): void {
    const sub = this.subscriber;
    this.subscriber = null;
    sub?.disconnect();
  }

  /** Stops the subscription and forgets every reader. */
  close(): void {
    this.watchers.clear();
    this.stopWatch();
  }
}
