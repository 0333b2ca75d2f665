/**
 * The part every backend shares: option defaults and the argument checks that
 * run before any I/O. A backend implements {@link LeaseDriver} with arguments
 * already validated and normalised; {@link createBackend} wraps it into the
 * public {@link LeaseBackend}.
 */
import { BackendUnavailableError, ConflictError, InvalidArgumentError } from '../lease/errors.ts';
import {
  attachTelemetry,
  checkTelemetryOptions,
  Telemetry,
  type TelemetryOptions,
} from '../lease/telemetry.ts';
import type {
  AuditEntry,
  AuditOptions,
  BackendKind,
  ChangeBatch,
  ChangeOptions,
  CheckpointRead,
  CheckpointResult,
  CountOptions,
  DatasetLoss,
  DurabilityOptions,
  ForceReleaseOptions,
  HistoryEntry,
  LeaseAdmin,
  LeaseBackend,
  LeaseInfo,
  LeasePage,
  LeaseRecord,
  ListOptions,
  OpenOptions,
  PruneOptions,
  ReadStateOptions,
  RequestReleaseOptions,
  StatePage,
  StatusCounts,
  StatusThresholds,
} from '../lease/types.ts';
import {
  checkBatchId,
  checkId,
  checkInt,
  checkNewId,
  checkOperator,
  checkOptionalPrefix,
  checkOptions,
  checkRecord,
  checkState,
  checkText,
  checkToken,
  checkTtl,
  DEFAULT_MAX_STATE_BYTES,
  MAX_MAX_STATE_BYTES,
  MAX_TTL_MS,
} from '../lease/validate.ts';
import { checkHistoryRetention, historyAdmin } from './history-admin.ts';
import { type BackendAddress, effectiveUrl, redactUrl, resolveBackendUrl } from './url.ts';

export interface ResolvedOptions {
  migrate: boolean;
  schema: string;
  keyPrefix: string;
  maxStateBytes: number;
  poolSize: number;
  callTimeoutMs: number;
  /** Redis: the lease calls connection's busy poll bound, ms (wire.ts); null when not given. */
  busyPollMs: number | null;
  telemetry: TelemetryOptions;
  durability: ResolvedDurability;
}

export interface ResolvedDurability {
  /** 0: no WAIT. */
  replicas: number;
  timeoutMs: number;
  /** null: the server's setting. */
  synchronousCommit: DurabilityOptions['synchronousCommit'] | null;
}

const SYNCHRONOUS_COMMIT = ['off', 'local', 'remote_write', 'on', 'remote_apply'] as const;

function resolveDurability(value: unknown, callTimeoutMs: number): ResolvedDurability {
  const d = checkOptions<DurabilityOptions>('options.durability', value, [
    'replicas',
    'timeoutMs',
    'synchronousCommit',
  ]);
  const replicas = checkInt('options.durability.replicas', d.replicas, 0, 64, 0);
  // WAIT must give up before the call does, or a timed-out call could not tell "not confirmed" apart.
  const timeoutMs = checkInt(
    'options.durability.timeoutMs',
    d.timeoutMs,
    1,
    Math.max(1, callTimeoutMs - 1),
    Math.min(1000, Math.max(1, callTimeoutMs - 1)),
  );
  const sc = d.synchronousCommit;
  if (sc !== undefined && !(SYNCHRONOUS_COMMIT as readonly unknown[]).includes(sc)) {
    throw new InvalidArgumentError(
      `options.durability.synchronousCommit must be one of ${SYNCHRONOUS_COMMIT.join(', ')}`,
    );
  }
  return { replicas, timeoutMs, synchronousCommit: sc ?? null };
}

/** Refuses durability settings that `kind` cannot honour (before any I/O): a silent no-op would be a lie. */
export function checkDurability(kind: BackendKind, d: ResolvedDurability): void {
  const redis = kind === 'redis' || kind === 'redis-cluster';
  if (!redis && d.replicas > 0) {
    throw new InvalidArgumentError(
      `options.durability.replicas is for Redis; on ${kind} use options.durability.synchronousCommit${kind === 'pglite' ? ' (PostgreSQL only; PGlite has no replicas)' : ''}`,
    );
  }
  if (kind !== 'postgres' && d.synchronousCommit !== null) {
    throw new InvalidArgumentError(
      `options.durability.synchronousCommit is for PostgreSQL${redis ? '; on Redis use options.durability.replicas' : ''}`,
    );
  }
}

/** The largest busy poll bound (OpenOptions.busyPollMs), ms. */
const MAX_BUSY_POLL_MS = 10;

function checkBusyPollMs(value: unknown): number {
  if (typeof value !== 'number' || !(value >= 0 && value <= MAX_BUSY_POLL_MS)) {
    throw new InvalidArgumentError(
      `options.busyPollMs must be a number of milliseconds from 0 to ${MAX_BUSY_POLL_MS} (such as 0.1), got ${String(value)}`,
    );
  }
  return value;
}

/** Refuses a busy poll bound on a backend that has no such poll (before any I/O). */
function checkBusyPoll(kind: BackendKind, busyPollMs: number | null): void {
  if (busyPollMs !== null && kind !== 'redis' && kind !== 'redis-cluster') {
    throw new InvalidArgumentError(`options.busyPollMs is for Redis; ${kind} has no busy poll`);
  }
}

const NAME = /^[a-z_][a-z0-9_]{0,39}$/;
const PREFIX = /^[A-Za-z0-9_.:-]{1,64}$/;

export function resolveOptions(options: OpenOptions = {}): ResolvedOptions {
  const o = checkOptions<OpenOptions>('options', options, [
    'migrate',
    'schema',
    'keyPrefix',
    'maxStateBytes',
    'poolSize',
    'callTimeoutMs',
    'busyPollMs',
    'durability',
    'logger',
    'meterProvider',
    'tracerProvider',
  ]);
  checkTelemetryOptions(o);
  if (o.migrate !== undefined && typeof o.migrate !== 'boolean') {
    throw new InvalidArgumentError('options.migrate must be a boolean');
  }
  const schema = o.schema ?? 'worklease';
  if (typeof schema !== 'string' || !NAME.test(schema)) {
    throw new InvalidArgumentError(
      'options.schema must be a lower-case SQL identifier (letters, digits, _; at most 40 characters)',
    );
  }
  const keyPrefix = o.keyPrefix ?? 'worklease';
  if (typeof keyPrefix !== 'string' || !PREFIX.test(keyPrefix)) {
    throw new InvalidArgumentError('options.keyPrefix must be 1-64 characters of A-Z a-z 0-9 _ . : -');
  }
  const callTimeoutMs = checkInt('options.callTimeoutMs', o.callTimeoutMs, 1, MAX_TTL_MS, 10_000);
  return {
    migrate: o.migrate ?? true,
    schema,
    keyPrefix,
    maxStateBytes: checkInt(
      'options.maxStateBytes',
      o.maxStateBytes,
      0,
      MAX_MAX_STATE_BYTES,
      DEFAULT_MAX_STATE_BYTES,
    ),
    poolSize: checkInt('options.poolSize', o.poolSize, 1, 1000, 10),
    callTimeoutMs,
    busyPollMs: o.busyPollMs === undefined ? null : checkBusyPollMs(o.busyPollMs),
    durability: resolveDurability(o.durability, callTimeoutMs),
    telemetry: {
      ...(o.logger === undefined ? {} : { logger: o.logger }),
      ...(o.meterProvider === undefined ? {} : { meterProvider: o.meterProvider }),
      ...(o.tracerProvider === undefined ? {} : { tracerProvider: o.tracerProvider }),
    },
  };
}

/** What a backend's open function works from: the URL resolved against the options. */
export interface OpenTarget {
  address: BackendAddress;
  options: ResolvedOptions;
  /** The effective URL (redacted, namespace explicit): `backend.url` and every message's. */
  url: string;
}

/**
 * The first step of every backend's open: the URL's query options merged with
 * the caller's (see url.ts), then every option checked, before any I/O.
 */
export function resolveTarget(
  url: string,
  options: OpenOptions | undefined,
  kinds: readonly BackendKind[],
  what: string,
): OpenTarget {
  // The caller's own options are checked first, so a bad shape is named as theirs.
  resolveOptions(options);
  const address = resolveBackendUrl(url, options);
  if (!kinds.includes(address.kind)) throw new InvalidArgumentError(`not a ${what} URL: ${redactUrl(url)}`);
  const resolved = resolveOptions(address.options);
  checkDurability(address.kind, resolved.durability);
  checkBusyPoll(address.kind, resolved.busyPollMs);
  return { address, options: resolved, url: effectiveUrl(address, resolved) };
}

export interface DriverListOptions {
  cursor: string | null;
  limit: number;
  workIdPrefix: string | undefined;
  holderId: string | undefined;
}

/** The history retention prune applies ({@link PruneOptions.history}), defaults filled in. */
export interface HistoryPruning {
  olderThanMs: number;
  keepPerItem: number;
}

/** What a backend implements. Arguments arrive validated; ttl is whole milliseconds. */
export interface LeaseDriver {
  readonly kind: BackendKind;
  readonly url: string;
  acquire(workId: string, holderId: string, ttlMs: number, stepId: string | null): Promise<LeaseRecord>;
  checkpoint(record: LeaseRecord, state: Uint8Array, ttlMs: number): Promise<CheckpointResult>;
  renew(record: LeaseRecord, ttlMs: number): Promise<LeaseRecord>;
  release(record: LeaseRecord): Promise<void>;
  readCheckpoint(record: LeaseRecord): Promise<CheckpointRead>;
  get(workId: string): Promise<LeaseInfo | null>;
  /** Many leases in one round trip, in the order asked (see LeaseAdmin.getMany). */
  getMany?(workIds: readonly string[]): Promise<Array<LeaseInfo | null>>;
  /** See LeaseAdmin.countByStatus. */
  countByStatus?(thresholds: StatusThresholds): Promise<StatusCounts>;
  list(options: DriverListOptions): Promise<LeasePage>;
  count(workIdPrefix: string | undefined, holderId: string | undefined): Promise<number>;
  requestRelease(workId: string, expectedToken: bigint, operator: string, reason: string): Promise<LeaseInfo>;
  /** `batchId` null when none was given; recorded on the audit entry. */
  forceRelease(
    workId: string,
    expectedToken: bigint,
    operator: string,
    reason: string,
    batchId: string | null,
  ): Promise<LeaseInfo>;
  audit(workId: string | undefined, limit: number): Promise<AuditEntry[]>;
  prune(olderThanMs: number, limit: number, history: HistoryPruning): Promise<number>;
  /** `before` is an entry id the backend wrote, checked for its shape only. */
  history(workId: string, before: string | null, limit: number): Promise<HistoryEntry[]>;
  hold(workId: string, operator: string, reason: string): Promise<LeaseInfo>;
  unhold(workId: string, operator: string, reason: string): Promise<LeaseInfo>;
  handoffCheckpoint(workId: string, offset: number, length: number): Promise<StatePage | null>;
  readState(workId: string, offset: number, length: number): Promise<StatePage | null>;
  serverTime(): Promise<Date>;
  serverVersion(): Promise<string>;
  changeCursor(): Promise<string>;
  changes(cursor: string, limit: number): Promise<ChangeBatch>;
  /** See {@link LeaseAdmin.watchChanges}; optional. */
  watchChanges?(onWake: () => void): () => void;
  /** See {@link LeaseAdmin.watchEnded}; optional. */
  watchEnded?(onEnded: (workId: string | null) => void): () => void;
  /** See {@link LeaseAdmin.notifyEnd}; optional. */
  notifyEnd?(workId: string, forMs: number): Promise<boolean>;
  /** See {@link LeaseAdmin.datasetLoss}; optional (Redis). Work ids arrive validated. */
  datasetLoss?(workIds: readonly string[]): Promise<DatasetLoss>;
  close(): Promise<void>;
}

/** The driver calls that get a span and a duration metric; the first argument names the work item. */
const INSTRUMENTED = [
  'acquire',
  'checkpoint',
  'renew',
  'release',
  'readCheckpoint',
  'get',
  'list',
  'count',
  'forceRelease',
  'requestRelease',
  'audit',
  'prune',
  'history',
  'hold',
  'unhold',
  'handoffCheckpoint',
  'readState',
  'serverTime',
  'serverVersion',
  'changeCursor',
  'changes',
] as const;

// Every driver call is either instrumented above or passed through in instrument(): a call added
// to LeaseDriver and forgotten here fails to compile instead of vanishing from the wrapped driver.
type NotWrapped = Exclude<
  keyof LeaseDriver,
  | (typeof INSTRUMENTED)[number]
  | 'kind'
  | 'url'
  | 'close'
  | 'watchChanges'
  | 'watchEnded'
  | 'notifyEnd'
  | 'datasetLoss'
  | 'getMany'
  | 'countByStatus'
>;
const everyCallWrapped: [NotWrapped] extends [never] ? true : NotWrapped = true;
void everyCallWrapped;

/** The driver with every call run through {@link Telemetry.call}: the one seam of instrumentation. */
function instrument(driver: LeaseDriver, telemetry: Telemetry): LeaseDriver {
  // Not a prototype link to the driver: its methods use private fields and must run with it as `this`.
  const wrapped: Record<string, unknown> = {
    kind: driver.kind,
    url: driver.url,
    close: driver.close.bind(driver),
  };
  if (driver.watchChanges !== undefined) wrapped.watchChanges = driver.watchChanges.bind(driver);
  if (driver.watchEnded !== undefined) wrapped.watchEnded = driver.watchEnded.bind(driver);
  if (driver.notifyEnd !== undefined) wrapped.notifyEnd = driver.notifyEnd.bind(driver);
  if (driver.datasetLoss !== undefined) wrapped.datasetLoss = driver.datasetLoss.bind(driver);
  if (driver.getMany !== undefined) {
    const getMany = driver.getMany.bind(driver);
    wrapped.getMany = (ids: readonly string[]) => telemetry.call('get', undefined, () => getMany(ids));
  }
  if (driver.countByStatus !== undefined) {
    const countByStatus = driver.countByStatus.bind(driver);
    wrapped.countByStatus = (t: StatusThresholds) =>
      telemetry.call('count', undefined, () => countByStatus(t));
  }
  for (const name of INSTRUMENTED) {
    const method = driver[name] as (...args: unknown[]) => Promise<unknown>;
    wrapped[name] = (...args: unknown[]) => {
      const first = args[0];
      const workId =
        typeof first === 'string' && name !== 'changes'
          ? first
          : ((first as { workId?: string } | undefined)?.workId ?? undefined);
      return telemetry.call(name, workId, () => method.apply(driver, args));
    };
  }
  return wrapped as unknown as LeaseDriver;
}

/** Wraps a driver with the contract's argument checks, the closed-state check and telemetry. */
export function createBackend(
  bare: LeaseDriver,
  maxStateBytes: number,
  telemetryOptions: TelemetryOptions = {},
): LeaseBackend {
  const telemetry = new Telemetry(bare.kind, telemetryOptions);
  const driver = instrument(bare, telemetry);
  let closed = false;
  const open = (): void => {
    if (closed) throw new BackendUnavailableError(`backend ${driver.url} is closed`);
  };
  const admin: LeaseAdmin = {
    async get(workId) {
      checkId('workId', workId);
      open();
      return driver.get(workId);
    },
    ...(driver.getMany === undefined
      ? {}
      : {
          async getMany(workIds: readonly string[]) {
            if (!Array.isArray(workIds) || workIds.length > 10_000) {
              throw new InvalidArgumentError('workIds must be an array of at most 10 000 work ids');
            }
            for (const id of workIds) checkId('workId', id);
            open();
            return workIds.length === 0 ? [] : driver.getMany!(workIds);
          },
        }),
    ...(driver.countByStatus === undefined
      ? {}
      : {
          async countByStatus(thresholds: StatusThresholds) {
            const t = thresholds as Partial<StatusThresholds> | null;
            const f = t?.expiringFraction;
            const s = t?.stuckAfterMs;
            if (typeof f !== 'number' || !(f >= 0 && f <= 1) || typeof s !== 'number' || !(s >= 0)) {
              throw new InvalidArgumentError(
                'thresholds must be {expiringFraction: 0..1, stuckAfterMs: a number of ms >= 0}',
              );
            }
            open();
            return driver.countByStatus!({ expiringFraction: f, stuckAfterMs: s });
          },
        }),
    async list(options: ListOptions = {}) {
      const o = checkOptions<ListOptions>('options', options, [
        'cursor',
        'limit',
        'workIdPrefix',
        'holderId',
      ]);
      if (o.cursor !== undefined && o.cursor !== null && typeof o.cursor !== 'string') {
        throw new InvalidArgumentError('options.cursor must be a string or null');
      }
      const holderId = o.holderId === undefined ? undefined : checkId('options.holderId', o.holderId);
      const listOptions: DriverListOptions = {
        cursor: o.cursor ?? null,
        limit: checkInt('options.limit', o.limit, 1, 10_000, 500),
        workIdPrefix: checkOptionalPrefix('options.workIdPrefix', o.workIdPrefix),
        holderId,
      };
      open();
      return driver.list(listOptions);
    },
    async count(options: CountOptions = {}) {
      const o = checkOptions<CountOptions>('options', options, ['workIdPrefix', 'holderId']);
      const holderId = o.holderId === undefined ? undefined : checkId('options.holderId', o.holderId);
      const prefix = checkOptionalPrefix('options.workIdPrefix', o.workIdPrefix);
      open();
      return driver.count(prefix === '' ? undefined : prefix, holderId);
    },
    async forceRelease(workId, options: ForceReleaseOptions) {
      checkId('workId', workId);
      const o = checkOptions<ForceReleaseOptions>('options', options, [
        'expectedToken',
        'operator',
        'reason',
        'batchId',
      ]);
      const expectedToken = checkToken(o.expectedToken, 'options.expectedToken');
      const operator = checkOperator('options.operator', o.operator);
      const reason = checkText('options.reason', o.reason, 2000);
      const batchId = checkBatchId('options.batchId', o.batchId) ?? null;
      open();
      return driver.forceRelease(workId, expectedToken, operator, reason, batchId);
    },
    async requestRelease(workId, options: RequestReleaseOptions) {
      checkId('workId', workId);
      const o = checkOptions<RequestReleaseOptions>('options', options, [
        'expectedToken',
        'operator',
        'reason',
      ]);
      const expectedToken = checkToken(o.expectedToken, 'options.expectedToken');
      const operator = checkOperator('options.operator', o.operator);
      const reason = checkText('options.reason', o.reason, 2000);
      open();
      return driver.requestRelease(workId, expectedToken, operator, reason);
    },
    async audit(options: AuditOptions = {}) {
      const o = checkOptions<AuditOptions>('options', options, ['workId', 'limit']);
      const workId = o.workId === undefined ? undefined : checkId('options.workId', o.workId);
      const limit = checkInt('options.limit', o.limit, 1, 1000, 100);
      open();
      return driver.audit(workId, limit);
    },
    async prune(options: PruneOptions) {
      const o = checkOptions<PruneOptions>('options', options, ['olderThanMs', 'limit', 'history']);
      const olderThanMs = checkInt('options.olderThanMs', o.olderThanMs, 0, Number.MAX_SAFE_INTEGER, -1);
      if (olderThanMs < 0) throw new InvalidArgumentError('options.olderThanMs is required');
      const limit = checkInt('options.limit', o.limit, 1, 100_000, 1000);
      const history = checkHistoryRetention(o.history);
      open();
      return driver.prune(olderThanMs, limit, history);
    },
    ...historyAdmin(driver, open),
    async readState(workId, options: ReadStateOptions = {}) {
      checkId('workId', workId);
      const o = checkOptions<ReadStateOptions>('options', options, ['offset', 'length']);
      const offset = checkInt('options.offset', o.offset, 0, MAX_MAX_STATE_BYTES, 0);
      const length = checkInt('options.length', o.length, 1, 1024 * 1024, 65_536);
      open();
      return driver.readState(workId, offset, length);
    },
    async serverTime() {
      open();
      return driver.serverTime();
    },
    async serverVersion() {
      open();
      return driver.serverVersion();
    },
    async changeCursor() {
      open();
      return driver.changeCursor();
    },
    async changes(options: ChangeOptions) {
      const o = checkOptions<ChangeOptions>('options', options, ['cursor', 'limit']);
      if (typeof o.cursor !== 'string' || o.cursor.length === 0) {
        throw new InvalidArgumentError(
          'options.cursor must be a cursor string from changeCursor() or changes()',
        );
      }
      const limit = checkInt('options.limit', o.limit, 1, 10_000, 1000);
      open();
      return driver.changes(o.cursor, limit);
    },
  };
  if (driver.watchChanges !== undefined) {
    const watch = driver.watchChanges.bind(driver);
    admin.watchChanges = (onWake) => {
      if (typeof onWake !== 'function') throw new InvalidArgumentError('onWake must be a function');
      open();
      return watch(onWake);
    };
  }
  if (driver.watchEnded !== undefined) {
    const watch = driver.watchEnded.bind(driver);
    admin.watchEnded = (onEnded) => {
      if (typeof onEnded !== 'function') throw new InvalidArgumentError('onEnded must be a function');
      open();
      return watch(onEnded);
    };
  }
  if (driver.notifyEnd !== undefined) {
    const notify = driver.notifyEnd.bind(driver);
    admin.notifyEnd = async (workId, forMs) => {
      checkNewId('workId', workId);
      const ms = checkTtl(forMs, 'forMs');
      open();
      return notify(workId, ms);
    };
  }
  if (driver.datasetLoss !== undefined) {
    const inspect = driver.datasetLoss.bind(driver);
    admin.datasetLoss = async (workIds = []) => {
      if (!Array.isArray(workIds) || workIds.length > 10_000) {
        throw new InvalidArgumentError('workIds must be an array of at most 10 000 work ids');
      }
      for (const w of workIds) checkId('workIds[]', w);
      open();
      return inspect(workIds);
    };
  }
  const backend: LeaseBackend = {
    kind: driver.kind,
    url: driver.url,
    maxStateBytes,
    async acquire(workId, holderId, ttlMs, options = {}) {
      checkNewId('workId', workId);
      checkNewId('holderId', holderId);
      const ttl = checkTtl(ttlMs);
      const o = checkOptions<{ stepId: string }>('options', options, ['stepId']);
      const stepId = o.stepId === undefined ? null : checkNewId('options.stepId', o.stepId);
      open();
      return driver.acquire(workId, holderId, ttl, stepId);
    },
    async checkpoint(record, state, ttlMs) {
      checkRecord(record);
      checkState(state, maxStateBytes);
      const ttl = checkTtl(ttlMs);
      open();
      return driver.checkpoint(record, state, ttl);
    },
    async renew(record, ttlMs) {
      checkRecord(record);
      const ttl = checkTtl(ttlMs);
      open();
      return driver.renew(record, ttl);
    },
    async release(record) {
      checkRecord(record);
      open();
      return driver.release(record);
    },
    async readCheckpoint(record) {
      checkRecord(record);
      open();
      return driver.readCheckpoint(record);
    },
    admin,
    async close() {
      if (closed) return;
      closed = true;
      await driver.close();
    },
  };
  attachTelemetry(backend, telemetry);
  return backend;
}

/**
 * Why a refused force-release or request-release was refused, when the stored token is not the one
 * the operator saw. Given how the lease ended (`ended`, force-release only), a lease force-released
 * since is said as such; anything else changed hands (taken by another holder, perhaps released
 * since). Request-release's refusal carries no `ended` and always says the latter.
 */
function tokenMoved(expectedToken: bigint, storedToken: bigint, ended: string | null): string {
  const since = ended === 'force-released' ? 'it was force-released since' : 'it changed hands';
  return `its fencing token is now ${storedToken}, not ${expectedToken} (${since})`;
}

/**
 * The CONFLICT of a refused forceRelease, worded and detailed the same on every backend: the stored
 * token is not `expectedToken`, or the lease already ended (`ended`: released, force-released).
 */
export function forceConflict(
  workId: string,
  expectedToken: bigint,
  storedToken: bigint,
  holderId: string,
  ended: string | null,
): ConflictError {
  const why =
    storedToken !== expectedToken
      ? tokenMoved(expectedToken, storedToken, ended)
      : `its lease already ended (${ended})`;
  return new ConflictError(`force-release of work item '${workId}' refused: ${why}`, {
    details: { workId, expectedToken, storedToken, holderId, ended },
  });
}

/** The CONFLICT of a refused requestRelease (both SQL and Redis word it the same way). */
export function requestConflict(
  workId: string,
  expectedToken: bigint,
  storedToken: bigint,
  holderId: string,
  why: string,
): ConflictError {
  const text =
    why === 'token'
      ? tokenMoved(expectedToken, storedToken, null)
      : why === 'expired'
        ? 'its lease ran out (by the server clock): there is no holder to ask'
        : `its lease already ended (${why})`;
  return new ConflictError(`request-release of work item '${workId}' refused: ${text}`, {
    details: { workId, expectedToken, storedToken, holderId, why },
  });
}
