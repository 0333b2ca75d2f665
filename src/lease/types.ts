/**
 * The lease contract shared by every backend.
 *
 * Terminology (used the same way in code, docs, CLI and console):
 * - **work item**: a unit of work named by a `workId` (a job, a shard, a partition).
 * - **lease**: an exclusive, time-bounded right to work on one work item, granted
 *   to one holder until `expiresAt` by the backend's clock.
 * - **holder**: the worker process that holds a lease, named by a `holderId`.
 * - **fencing token**: a number that strictly increases every time a work item's
 *   lease changes hands (acquire or force-release). Writes carry it; a write with
 *   an old token is refused (`FENCED`), so a holder that lost its lease cannot write.
 * - **checkpoint**: the bytes a holder saves under its lease to record progress;
 *   kept across leases so the next holder resumes from it.
 * - **clean handoff**: a lease began cleanly when the work item was new or its
 *   previous holder released it; it did not when the previous lease ran out
 *   (a **takeover**) or was force-released.
 * - **fleet**: all the work items and holders one backend serves.
 * - **stuck**: a lease that is still renewed but whose checkpoint has not moved
 *   for a configured time.
 * - **force-release**: an operator ends a lease: its token is bumped so the old
 *   holder is fenced out, and the action is written to the audit log.
 * - **request release**: an operator asks the holder to hand its lease over: the
 *   lease is marked (audited, token unchanged), the holder learns it from the answer
 *   of its next renew or checkpoint, saves a checkpoint and releases, so the next
 *   holder starts with a clean handoff. Nothing is taken away; force-release is the
 *   escalation when the holder does not cooperate.
 * - **batch id**: shared by the audit entries of one bulk force-release (the
 *   console's action on a filtered selection).
 *
 * All durations are milliseconds and say so in their names (`ttlMs`).
 */
import type { HistoryEntry, HistoryOptions, HistoryRetention, Hold, HoldOptions } from './history-types.ts';
import type { TelemetryOptions } from './telemetry.ts';

export type * from './history-types.ts';

/** A currently held lease as its holder knows it. Returned by `acquire`, passed back to every other call. */
export interface LeaseRecord {
  readonly workId: string;
  readonly holderId: string;
  readonly fencingToken: bigint;
  /** When the lease runs out, by the backend's clock, as of the last acquire/renew/checkpoint. */
  readonly expiresAt: Date;
  /**
   * Set on the record `renew` returns when an operator asked this lease's holder to hand it over
   * ({@link LeaseAdmin.requestRelease}); absent otherwise. Learnt from the renew's own answer.
   */
  readonly releaseRequested?: ReleaseRequest;
}

/** An operator's request that the holder hand its lease over (see {@link LeaseAdmin.requestRelease}). */
export interface ReleaseRequest {
  /** When it was first requested, by the backend's clock. */
  readonly at: Date;
  readonly operator: string;
  readonly reason: string;
}

/** What `checkpoint` resolves to. */
export interface CheckpointResult {
  /** Present when an operator asked the holder to hand the lease over; see {@link LeaseRecord.releaseRequested}. */
  releaseRequested?: ReleaseRequest;
}

export interface AcquireOptions {
  /**
   * Which step of the work this holder is on (for idempotent side effects).
   * Stored with the lease so operators can see it. Default: none.
   */
  stepId?: string;
}

export interface CheckpointRead {
  /** The latest checkpoint bytes, or null when none was ever saved. */
  state: Uint8Array | null;
  /** True when this lease began cleanly: the work item was new or its previous holder released it. */
  cleanHandoff: boolean;
}

/** How the lease before the current one ended, as seen when the current one was acquired. */
export type PredecessorEnd = 'none' | 'released' | 'expired' | 'force-released';

/** How the current lease ended, if it was ended explicitly. Running out is derived from `expiresAt`. */
export type LeaseEnd = 'released' | 'force-released';

/** Everything stored about one work item's lease, for operators. */
export interface LeaseInfo {
  workId: string;
  holderId: string;
  fencingToken: bigint;
  expiresAt: Date;
  /** The ttl given by the last acquire/renew/checkpoint. */
  ttlMs: number;
  stepId: string | null;
  acquiredAt: Date;
  renewedAt: Date | null;
  checkpointedAt: Date | null;
  releasedAt: Date | null;
  /** Size in bytes of the stored checkpoint, or null when none was ever saved. */
  checkpointSize: number | null;
  /** See {@link CheckpointRead.cleanHandoff}. */
  cleanHandoff: boolean;
  predecessorEnd: PredecessorEnd;
  /** Null while the lease has not been released or force-released (it may still have run out). */
  ended: LeaseEnd | null;
  /**
   * The operator's request that this lease's holder hand it over, or null. Cleared whenever the
   * work item changes hands or ends (acquire, release, force-release, prune).
   */
  releaseRequest: ReleaseRequest | null;
  /**
   * The operator's hold on the work item ({@link LeaseAdmin.hold}), or null when it is not held.
   * Absent on backends that predate holds.
   */
  hold?: Hold | null;
  /**
   * Bumped by every write to this work item. With `fencingToken` it orders the
   * versions of one lease row: (token, version) strictly increases.
   */
  version: bigint;
  /**
   * How often this work item changed hands and ended since it was created or last pruned. A change feed
   * that coalesces writes (Postgres delivers each row's latest version) still lets a reader count
   * every handoff exactly once from the differences. Absent where the feed delivers every write
   * (Redis: one stream entry per write).
   */
  handoffs?: HandoffCounts;
}

export interface HandoffCounts {
  /** Acquisitions of the work item (every lease it had). */
  acquisitions: number;
  /** Clean releases by their holder. */
  releases: number;
  /** Force-releases by an operator. */
  forceReleases: number;
}

export interface ListOptions {
  /** Opaque cursor from the previous page's `nextCursor`. */
  cursor?: string | null;
  /** Page size, 1..10 000. Default 500. */
  limit?: number;
  /** Only work ids starting with this prefix. */
  workIdPrefix?: string;
  /** Only leases whose current or last holder is this one. */
  holderId?: string;
}

/** Filters of {@link LeaseAdmin.count}: the same as {@link ListOptions}'. */
export interface CountOptions {
  /** Only work ids starting with this prefix. */
  workIdPrefix?: string;
  /** Only leases whose current or last holder is this one. */
  holderId?: string;
}

export interface LeasePage {
  items: LeaseInfo[];
  /** Null on the last page. */
  nextCursor: string | null;
}

export interface ForceReleaseOptions {
  /**
   * The fencing token the operator saw; the call refuses with CONFLICT if the stored one differs,
   * and also when the lease already ended (released or force-released). The error's `details`
   * are `{ workId, expectedToken, storedToken, holderId, ended }` on every backend (`ended` null
   * for a lease not ended), and its message says which: a token that moved because the lease was
   * force-released since, or changed hands, or a lease that already ended. Nothing is written.
   */
  expectedToken: bigint;
  /** Who did it (recorded in the audit log). */
  operator: string;
  /** Why (recorded in the audit log). Required, non-empty. */
  reason: string;
  /**
   * Groups the audit entries of one bulk action (the console's force-release of a filtered
   * selection): 1..64 characters of `A-Z a-z 0-9 _ -`. Recorded on the audit entry; no effect
   * on the lease itself.
   */
  batchId?: string;
}

/** Options of {@link LeaseAdmin.requestRelease}: the same shape as {@link ForceReleaseOptions}. */
export interface RequestReleaseOptions {
  /** The fencing token the operator saw; the call refuses with CONFLICT if the stored one differs. */
  expectedToken: bigint;
  /** Who asked (recorded in the audit log and shown to the holder). */
  operator: string;
  /** Why (recorded in the audit log and shown to the holder). Required, non-empty. */
  reason: string;
}

/**
 * `recover` (Redis only): an operator re-initialised a lost bucket (`worklease recover`); it names no
 * work item. `hold` / `unhold`: docs/history.md.
 */
export type AuditAction = 'force-release' | 'request-release' | 'recover' | 'hold' | 'unhold';

export interface AuditEntry {
  /** Opaque, unique per backend. */
  id: string;
  at: Date;
  action: AuditAction;
  workId: string;
  operator: string;
  reason: string;
  oldHolderId: string;
  oldToken: bigint;
  /** For a request-release, hold and unhold, equal to `oldToken`: they do not change the token. */
  newToken: bigint;
  /** The {@link ForceReleaseOptions.batchId} the entry was written with; null when none. */
  batchId: string | null;
}

export interface AuditOptions {
  workId?: string;
  /** Newest first; 1..1000, default 100. */
  limit?: number;
}

export interface ReadStateOptions {
  /** Byte offset, default 0. */
  offset?: number;
  /** At most this many bytes, 1..1 048 576, default 65 536. */
  length?: number;
}

export interface StatePage {
  /** Token of the lease the checkpoint was read under (the current one). */
  fencingToken: bigint;
  /** Total checkpoint size in bytes; null when no checkpoint was ever saved. */
  size: number | null;
  offset: number;
  /** The bytes from `offset`, at most `length` of them. */
  bytes: Uint8Array;
}

export interface PruneOptions {
  /** Remove work items whose lease ended (released, force-released or ran out) more than this long ago. */
  olderThanMs: number;
  /** At most this many in one call; default 1000. */
  limit?: number;
  /** How long a work item's history is kept (docs/history.md); defaults apply when absent. */
  history?: HistoryRetention;
}

/**
 * What kind of write produced a change. The feed carries the writes that change who holds a work
 * item, end its lease or ask for it: acquire, release, force-release, release request, prune.
 * Renew and checkpoint (the heartbeat-rate writes, many per lease) bump the version but add no
 * change, so the feed costs the hot path nothing; a reader that needs heartbeats re-reads live rows
 * (the console does: README, Heartbeat checks). `renewed` and `checkpointed` remain in the type for
 * readers of older backends; current backends never deliver them.
 */
export type ChangeKind =
  | 'acquired'
  | 'renewed'
  | 'checkpointed'
  | 'released'
  | 'force-released'
  | 'release-requested'
  | 'pruned';

export interface LeaseChange {
  workId: string;
  kind: ChangeKind;
  /** The lease after the change; null for `pruned`. */
  lease: LeaseInfo | null;
  /** For `pruned`: the last token the work item had (a later acquire continues from it). */
  fencingToken: bigint;
  version: bigint;
}

export interface ChangeBatch {
  changes: LeaseChange[];
  /** Pass to the next `changes` call to resume after this batch. */
  cursor: string;
  /**
   * True when the given cursor is too old for the backend's retained changes
   * (some were trimmed). The caller must take a fresh snapshot with `list`
   * after `changeCursor()` and resume from there.
   */
  gap: boolean;
}

export interface ChangeOptions {
  /** From `changeCursor()` or a previous batch. */
  cursor: string;
  /** At most this many changes; 1..10 000, default 1000. The batch may hold fewer even when more exist. */
  limit?: number;
}

/** How a lease's status is judged (the console's thresholds). */
export interface StatusThresholds {
  /** Expiring when less than this fraction of its ttl is left (0..1). */
  expiringFraction: number;
  /** Stuck when renewed but without progress (acquire or checkpoint) for this long, ms. */
  stuckAfterMs: number;
}

/** Counts by status of every work item `list` returns, judged at the server time `at`. */
export interface StatusCounts {
  at: Date;
  total: number;
  byStatus: Record<'live' | 'expiring' | 'expired' | 'released' | 'stuck' | 'force-released', number>;
}

/** Operator-facing calls: reading the fleet, force-release, audit, pruning, the change feed. */
export interface LeaseAdmin {
  get(workId: string): Promise<LeaseInfo | null>;
  /**
   * Optional: the leases of many work items in one round trip (one statement on PostgreSQL and
   * PGlite, one pipeline of HMGETs on Redis), in the order asked, null where there is none. At most
   * 10 000 ids. What the console's heartbeat checks read (issue 43).
   */
  getMany?(workIds: readonly string[]): Promise<Array<LeaseInfo | null>>;
  /**
   * Optional: the whole fleet's counts by console status, judged at the server's clock `at`, in one
   * aggregate statement (PostgreSQL and PGlite). What the console shows while its index loads.
   */
  countByStatus?(thresholds: StatusThresholds): Promise<StatusCounts>;
  /** Pages ordered by work id; a work item that exists for the whole walk is listed exactly once. */
  list(options?: ListOptions): Promise<LeasePage>;
  /** How many work items `list` with these filters would return in all (pages of `ls --limit` say "N of M"). */
  count(options?: CountOptions): Promise<number>;
  /** Ends a lease at once and fences its holder. See {@link ForceReleaseOptions}. */
  forceRelease(workId: string, options: ForceReleaseOptions): Promise<LeaseInfo>;
  /**
   * Asks the holder of the live lease on `workId` to hand it over: marks the lease with
   * {at (server clock), operator, reason} and writes an audit entry (`request-release`, newToken =
   * oldToken); the token does not change and nothing is taken away. The holder sees the request in
   * the answer of its next renew or checkpoint. Returns the lease after the call.
   *
   * - NOT_FOUND: the work item has no lease (never acquired, or pruned).
   * - CONFLICT: the stored token is not `expectedToken` (it changed hands), or the lease is not
   *   live: released, force-released or ran out by the server's clock (`details.why` says which:
   *   `token`, `released`, `force-released`, `expired`). Nothing is written.
   * - Idempotent: asking again on the same lease writes nothing and returns the lease with the
   *   first request (its `at`, operator and reason are kept; no second audit entry).
   * - The request is cleared when the work item changes hands or ends.
   */
  requestRelease(workId: string, options: RequestReleaseOptions): Promise<LeaseInfo>;
  audit(options?: AuditOptions): Promise<AuditEntry[]>;
  /**
   * The ownership changes of `workId`, newest first (docs/history.md). Empty for a work item never
   * acquired. INVALID_ARGUMENT for a bad id, limit or `before`.
   */
  history(workId: string, options?: HistoryOptions): Promise<HistoryEntry[]>;
  /**
   * Puts `workId` on hold: until {@link unhold}, acquire (and so claim) fails with ON_HOLD. A live
   * lease is not fenced: its holder goes on until it releases or the operator force-releases it.
   * Audited (`hold`) and in the history (`held`). Holding a held item writes nothing and returns it
   * with the first hold. NOT_FOUND when the work item has no lease (never acquired, or pruned).
   * Returns the lease after the call, with {@link LeaseInfo.hold} set.
   */
  hold(workId: string, options: HoldOptions): Promise<LeaseInfo>;
  /**
   * Lifts the hold: acquire works again. Audited (`unhold`) and in the history (`unheld`).
   * Unholding an item not held writes nothing. NOT_FOUND as {@link hold}.
   */
  unhold(workId: string, options: HoldOptions): Promise<LeaseInfo>;
  /**
   * The checkpoint as it was at the work item's last handoff (when the current or last lease was
   * acquired), one page at a time like {@link readState}: its `fencingToken` is the token of the
   * lease it was handed to. Null when the work item has no lease or no checkpoint was stored at
   * its last handoff. Kept by acquire, at no cost to renew or checkpoint.
   */
  handoffCheckpoint(workId: string, options?: ReadStateOptions): Promise<StatePage | null>;
  /**
   * Deletes ended work items (their checkpoints too; held items are kept); tokens continue where
   * they were. Also applies the history retention ({@link PruneOptions.history}). Returns how many
   * work items it deleted.
   */
  prune(options: PruneOptions): Promise<number>;
  /**
   * Reads stored checkpoint bytes for operators, without a lease record, one page at a time
   * (large payloads are never fetched whole). Null when the work item does not exist.
   */
  readState(workId: string, options?: ReadStateOptions): Promise<StatePage | null>;
  /** The backend's clock. */
  serverTime(): Promise<Date>;
  /**
   * The backend server's version as it reports it: PostgreSQL's `server_version`
   * (PGlite's embedded PostgreSQL too), Redis' `redis_version` from `INFO server`.
   */
  serverVersion(): Promise<string>;
  /** A cursor at the current head of the change feed; changes after this call come after it. */
  changeCursor(): Promise<string>;
  /**
   * Changes after `cursor`, oldest first (see {@link ChangeKind} for which writes appear). A change may
   * be delivered more than once; apply by (token, version). Its lease is the row as stored at the
   * write (Redis) or as stored when read (PostgreSQL, PGlite), so it may show later heartbeats.
   */
  changes(options: ChangeOptions): Promise<ChangeBatch>;
  /**
   * Optional: calls `onWake` soon after writes (possibly once for many, possibly spuriously, and once
   * after the watch (re)connects), so a change reader can wait instead of polling. A hint only: a
   * wake-up can be lost (e.g. while reconnecting), so readers still poll now and then. Returns a
   * function that stops the watch. Backends without a push channel leave it undefined.
   */
  watchChanges?(onWake: () => void): () => void;
  /**
   * Optional: calls `onEnded(workId)` soon after a lease on `workId` ended by release, force-release
   * or prune (not by running out: that needs no write), on PostgreSQL and PGlite only for leases
   * someone asked about with {@link notifyEnd} in time, and `onEnded(null)` after the watch
   * (re)connects, when any may have ended unseen. A hint only, like {@link watchChanges}; waiting
   * acquires use it to wake. Returns a function that stops the watch. PostgreSQL and PGlite have it
   * (LISTEN/NOTIFY); on Redis the holder layer derives it from {@link watchChanges} and the feed.
   */
  watchEnded?(onEnded: (workId: string | null) => void): () => void;
  /**
   * Optional, with {@link watchEnded} on PostgreSQL and PGlite: a waiting acquire's request to hear
   * of the end of the live lease on `workId` during the next `forMs` milliseconds (server clock).
   * Only ends that someone asked for send a notification, so releases pay nothing when nobody
   * waits. Resolves false when the lease is not live any more (it ended before the request: try
   * the acquire again at once), true otherwise. Writes nothing a reader can see (no version, no
   * change). `INVALID_ARGUMENT` for a bad work id or a `forMs` that is not a valid ttl.
   */
  notifyEnd?(workId: string, forMs: number): Promise<boolean>;
  /**
   * Optional, Redis only: which buckets of the key prefix lost their data (a Cluster master that
   * came back empty), read from the server now. The work items in a lost bucket fail `DATASET_LOST`
   * until `worklease recover` (or {@link recoverBackend}); the others work on. `affected` lists the
   * given `workIds` that live in a lost bucket (at most 10 000 of them). Writes nothing.
   */
  datasetLoss?(workIds?: readonly string[]): Promise<DatasetLoss>;
}

/** What a Redis key prefix lost: see {@link LeaseAdmin.datasetLoss}. */
export interface DatasetLoss {
  keyPrefix: string;
  /** The dataset id the surviving keys carry; null when nothing of the prefix is left. */
  dataset: string | null;
  /** How many buckets the prefix has (work items are spread over them by the hash of their id). */
  buckets: number;
  /** Buckets whose data is gone: their work items fail DATASET_LOST until recovered. */
  lost: number[];
  /** Buckets that hold another dataset (never recovered: two datasets are not mixed). */
  foreign: number[];
  /** True when the prefix's meta key is gone while buckets survive (opening is refused until recovered). */
  metaLost: boolean;
  /** Of the work ids asked about, those in a lost bucket. */
  affected: string[];
}

/** Options of {@link recoverBackend}. */
export interface RecoverOptions {
  /** Recorded on each recovered bucket's audit entry (action `recover`). Required. */
  operator: string;
  /** Why, recorded with it. Required. */
  reason: string;
  /** Only report what would be recovered; write nothing. Default false. */
  dryRun?: boolean;
}

/** What a recovery did (or, with `dryRun`, would do). */
export interface RecoveryResult extends Omit<DatasetLoss, 'affected'> {
  /** The buckets it re-initialised; empty on a dry run. */
  recovered: number[];
  /** True when it wrote the meta key again. */
  metaRecreated: boolean;
  dryRun: boolean;
}

/** The lease contract (DESIGN §2). Every call is a single attempt and one round trip. */
export interface LeaseBackend {
  /** `postgres`, `redis`, `redis-cluster` or `pglite`. */
  readonly kind: BackendKind;
  /** The URL it was opened with, password removed. */
  readonly url: string;
  /** The largest checkpoint this backend accepts, in bytes. */
  readonly maxStateBytes: number;
  acquire(workId: string, holderId: string, ttlMs: number, options?: AcquireOptions): Promise<LeaseRecord>;
  /** Resolves to a {@link CheckpointResult}, which tells whether a release was requested. */
  checkpoint(record: LeaseRecord, state: Uint8Array, ttlMs: number): Promise<CheckpointResult>;
  /** The record with the new expiry; its `releaseRequested` is set when a release was requested. */
  renew(record: LeaseRecord, ttlMs: number): Promise<LeaseRecord>;
  release(record: LeaseRecord): Promise<void>;
  readCheckpoint(record: LeaseRecord): Promise<CheckpointRead>;
  readonly admin: LeaseAdmin;
  close(): Promise<void>;
}

export type BackendKind = 'postgres' | 'redis' | 'redis-cluster' | 'pglite';

export interface OpenOptions extends TelemetryOptions {
  /** Create or upgrade the schema on open. Default true. When false, a missing or old schema is a SCHEMA_MISMATCH error. */
  migrate?: boolean;
  /** Postgres/PGlite schema name. Default `worklease`. */
  schema?: string;
  /** Redis key prefix. Default `worklease`. */
  keyPrefix?: string;
  /** Largest checkpoint accepted, in bytes. Default 1 MiB (1 048 576); at most 64 MiB. */
  maxStateBytes?: number;
  /**
   * Postgres connections, per kind: at most this many for the lease calls (acquire, renew,
   * checkpoint, release, readCheckpoint; opened at the first one) and as many for everything else
   * (both closed after 30 s idle). Default 10.
   */
  poolSize?: number;
  /** How long one call may wait for the server before failing with BACKEND_UNAVAILABLE. Default 10 000 ms. */
  callTimeoutMs?: number;
  /**
   * Redis: how long, in milliseconds, the process busy-polls for the reply of a lease call sent
   * while no other is in flight, before it sleeps until the reply comes; 0 never polls, at most 10.
   * Default 0.2 (200 µs), and 0 in a process that may run on one CPU only (a host with one CPU, or
   * a process pinned to one: the poll would hold the core a local server needs).
   * Polling skips the kernel's wake-up of a sleeping process, a large part of a round trip to a
   * server on the same host, for some client CPU; it only runs while most polled replies come
   * within the bound, so a server across a network gets none but one lone call in 16, which polls
   * to see whether that changed. Standalone Redis without
   * `durability` only (elsewhere the lease calls go through ioredis, which does not poll). Not
   * accepted by PostgreSQL or PGlite.
   */
  busyPollMs?: number;
  /**
   * When a write counts as done (docs/durability.md). Default: when the primary applied it. A write
   * that did not get the confirmation asked for fails with NOT_DURABLE (it may or may not survive).
   */
  durability?: DurabilityOptions;
}

/** See {@link OpenOptions.durability} and docs/durability.md. */
export interface DurabilityOptions {
  /**
   * Redis and Redis Cluster: how many replicas must confirm each acquire, checkpoint and
   * force-release (`WAIT` after the script) before the call succeeds. Default 0 (no WAIT).
   * Not accepted by PostgreSQL or PGlite.
   */
  replicas?: number;
  /** Redis: how long WAIT waits for those replicas, in milliseconds. Default 1000; below callTimeoutMs. */
  timeoutMs?: number;
  /**
   * PostgreSQL: `synchronous_commit` of the backend's sessions (`remote_apply` / `on` with
   * `synchronous_standby_names` set on the server make a commit wait for a synchronous standby).
   * Default: the server's setting. Not accepted by Redis or PGlite.
   */
  synchronousCommit?: 'off' | 'local' | 'remote_write' | 'on' | 'remote_apply';
}
