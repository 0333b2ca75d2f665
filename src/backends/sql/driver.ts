/**
 * The lease driver shared by the Postgres and PGlite backends: it runs the
 * statements of statements.ts through a {@link SqlClient} and turns their
 * result rows into contract values or errors. One statement per call.
 */
import {
  FencedError,
  InternalError,
  LeaseExpiredError,
  LeaseHeldError,
  NotFoundError,
} from '../../lease/errors.ts';
import type {
  AuditEntry,
  BackendKind,
  ChangeBatch,
  CheckpointRead,
  CheckpointResult,
  HistoryEntry,
  LeaseChange,
  LeaseInfo,
  LeasePage,
  LeaseRecord,
  StatePage,
  StatusCounts,
  StatusThresholds,
} from '../../lease/types.ts';
import {
  type DriverListOptions,
  forceConflict,
  type HistoryPruning,
  type LeaseDriver,
  requestConflict,
} from '../common.ts';
import { ServerClock } from '../server-clock.ts';
import type { Row, SqlClient, Statement, TextRow } from './client.ts';
import { countStatement } from './count.ts';
import { onHoldError, SqlHistory } from './history-driver.ts';
import {
  changeScanParams,
  decodeChangeCursor,
  decodeListCursor,
  encodeChangeCursor,
  encodeListCursor,
  type HeldNotice,
  heldNotice,
  leaseInfoFromText,
  prefixUpperBound,
  type RefusedRow,
  refusedRow,
  releaseRequestFromRow,
  toAuditEntry,
  toBigInt,
  toBytes,
  toDate,
} from './rows.ts';
import { buildStatements, endedChannel, INFO_COLUMNS, type Statements } from './statements.ts';
import { STATUS_CODE_NAMES, statusCountsStatement } from './status-counts.ts';

/** Positions in the text rows of `changes` (see statements.ts): the LeaseInfo columns follow these. */
const CHANGE_SNAP_XMIN = 0;
const CHANGE_XID = 1;
const CHANGE_KIND = 2;
const CHANGE_INFO = 3;
/** Positions in the text row of `forceRelease`. */
const FORCED_STORED_TOKEN = 0;
const FORCED_STORED_HOLDER = 1;
const FORCED_STORED_ENDED = 2;
const FORCED_INFO = 4;
/** Positions in the text row of `requestRelease`: live, requested, the lease before, the lease after. */
const REQ_LIVE = 0;
const REQ_REQUESTED = 1;
const REQ_BEFORE = 2;
const REQ_AFTER = REQ_BEFORE + INFO_COLUMNS.length;

/**
 * Builds the driver for an open, migrated client. Asks the server's version
 * first (one round trip): the statements depend on it (see `epochMs` in
 * statements.ts).
 */
export async function openSqlDriver(
  kind: BackendKind,
  url: string,
  client: SqlClient,
  schema: string,
): Promise<SqlLeaseDriver> {
  const [row] = await client.query(
    {
      text: "SELECT current_setting('server_version_num')::int AS server_version_num, floor(extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now_ms",
    },
    [],
  );
  const received = performance.now();
  const version = Number(row?.server_version_num);
  if (!Number.isInteger(version)) throw new InternalError('the server did not report its version');
  const driver = new SqlLeaseDriver(kind, url, client, schema, version);
  driver.clock.observe(Number(row?.now_ms), received);
  return driver;
}

/** How often a waiting acquire's wake-ups are polled where LISTEN cannot work (a transaction pooler), ms. */
export const ENDED_POLL_MS = 250;

export class SqlLeaseDriver implements LeaseDriver {
  readonly kind: BackendKind;
  readonly url: string;
  readonly #client: SqlClient;
  readonly #sql: Statements;
  readonly #count: Statement;
  readonly #statusCounts: Statement;
  readonly #schema: string;
  readonly #history: SqlHistory;
  /** The server's clock, for acquire deadlines (see {@link ServerClock}). */
  readonly clock = new ServerClock();

  constructor(kind: BackendKind, url: string, client: SqlClient, schema: string, serverVersionNum: number) {
    this.kind = kind;
    this.url = url;
    this.#client = client;
    this.#schema = schema;
    this.#sql = buildStatements(schema, { serverVersionNum });
    this.#count = countStatement(schema);
    this.#history = new SqlHistory(client, this.#sql);
    this.#statusCounts = statusCountsStatement(schema, serverVersionNum >= 140000);
  }

  async acquire(
    workId: string,
    holderId: string,
    ttlMs: number,
    stepId: string | null,
  ): Promise<LeaseRecord> {
    let held: HeldNotice | undefined;
    const timeout = this.#client.callTimeoutMs;
    const deadline = timeout === undefined ? null : this.clock.deadline(timeout);
    const rows = await this.#client
      .query(this.#sql.acquire, [workId, holderId, ttlMs, stepId, deadline], (n) => {
        held = heldNotice(n) ?? held;
      })
      .catch((err: unknown) => {
        throw onHoldError(err, workId) ?? err;
      });
    const row = rows[0];
    if (row !== undefined) {
      const expiresAt = toDate(row.expires_at, 'expires_at');
      // expires_at is the statement's start + ttl: a server time read before this answer came.
      if (timeout !== undefined) this.clock.observe(expiresAt.getTime() - ttlMs, performance.now());
      return {
        workId,
        holderId,
        fencingToken: toBigInt(row.token, 'token'),
        expiresAt,
      };
    }
    if (held === undefined) {
      // The server sent no notice (client_min_messages above NOTICE): held, by someone we cannot name.
      throw new LeaseHeldError(`work item '${workId}' is held by another holder`, { details: { workId } });
    }
    throw new LeaseHeldError(
      `work item '${workId}' is held by '${held.holder}' until ${held.expiresAt.toISOString()} (server time)`,
      {
        details: {
          workId,
          holderId: held.holder,
          expiresAt: held.expiresAt,
          storedToken: toBigInt(held.token, 'token'),
        },
      },
    );
  }

  async checkpoint(record: LeaseRecord, state: Uint8Array, ttlMs: number): Promise<CheckpointResult> {
    const row = await this.#write(
      this.#sql.checkpoint,
      [record.workId, record.fencingToken, state, ttlMs],
      record,
      'checkpoint',
    );
    const requested = releaseRequestFromRow(row);
    return requested === undefined ? {} : { releaseRequested: requested };
  }

  async renew(record: LeaseRecord, ttlMs: number): Promise<LeaseRecord> {
    const row = await this.#write(
      this.#sql.renew,
      [record.workId, record.fencingToken, ttlMs],
      record,
      'renew',
    );
    const renewed = {
      workId: record.workId,
      holderId: record.holderId,
      fencingToken: record.fencingToken,
      expiresAt: toDate(row.expires_at, 'expires_at'),
    };
    const requested = releaseRequestFromRow(row);
    return requested === undefined ? renewed : { ...renewed, releaseRequested: requested };
  }

  async release(record: LeaseRecord): Promise<void> {
    await this.#write(this.#sql.release, [record.workId, record.fencingToken], record, 'release');
  }

  /**
   * Runs checkpoint / renew / release (see statements.ts): the written row, or the error of a
   * refusal, from the stored row its WL001 error carries (no row at all: nothing was stored).
   */
  async #write(
    statement: Statement,
    params: readonly unknown[],
    record: LeaseRecord,
    what: string,
  ): Promise<Row> {
    let rows: Row[];
    try {
      rows = await this.#client.query(statement, params);
    } catch (err) {
      const stored = refusedRow(err);
      throw stored === undefined ? err : this.#lost(record, stored, what);
    }
    const row = rows[0];
    if (row === undefined) throw this.#lost(record, undefined, what);
    return row;
  }

  /** The FENCED / LEASE_EXPIRED error for a refused call, from the stored row (undefined when there is none). */
  #lost(record: LeaseRecord, row: Row | RefusedRow | undefined, what: string): Error {
    // A pruned row is a tombstone: its lease is gone even though it keeps the token.
    const gone = row === undefined || row.last_op === 'pruned';
    const storedToken = gone ? null : toBigInt(row.token, 'token');
    const expiresAt = gone ? null : toDate(row.expires_at, 'expires_at');
    const details = { workId: record.workId, token: record.fencingToken, storedToken, expiresAt };
    if (storedToken !== record.fencingToken) {
      const now =
        storedToken === null
          ? 'no lease is stored for it now'
          : `the stored fencing token is now ${storedToken}`;
      return new FencedError(
        `${what} refused: work item '${record.workId}' was taken over (token ${record.fencingToken}; ${now})`,
        { details },
      );
    }
    return new LeaseExpiredError(
      `${what} refused: the lease on work item '${record.workId}' (token ${record.fencingToken}) ran out at ${expiresAt?.toISOString()} (server time)`,
      { details },
    );
  }

  async readCheckpoint(record: LeaseRecord): Promise<CheckpointRead> {
    const rows = await this.#client.query(this.#sql.readCheckpoint, [record.workId, record.fencingToken]);
    const row = rows[0];
    if (
      row === undefined ||
      row.last_op === 'pruned' ||
      toBigInt(row.token, 'token') !== record.fencingToken
    ) {
      throw this.#lost(record, row, 'readCheckpoint');
    }
    return { state: toBytes(row.state), cleanHandoff: row.clean_handoff === true };
  }

  async get(workId: string): Promise<LeaseInfo | null> {
    const rows = await this.#client.queryText(this.#sql.get, [workId]);
    return rows[0] === undefined ? null : leaseInfoFromText(rows[0], 0);
  }

  async getMany(workIds: readonly string[]): Promise<Array<LeaseInfo | null>> {
    const rows = await this.#client.queryText(this.#sql.getMany, [workIds]);
    const byId = new Map<string, LeaseInfo>();
    for (const row of rows) {
      const info = leaseInfoFromText(row, 0);
      byId.set(info.workId, info);
    }
    return workIds.map((id) => byId.get(id) ?? null);
  }

  async list(options: DriverListOptions): Promise<LeasePage> {
    const after = options.cursor === null ? undefined : decodeListCursor(options.cursor);
    const prefix = options.workIdPrefix === '' ? undefined : options.workIdPrefix;
    const { text, params } = this.#sql.list({
      // One extra row tells whether another page exists.
      limit: options.limit + 1,
      after,
      from: prefix,
      below: prefix === undefined ? undefined : prefixUpperBound(prefix),
      holder: options.holderId,
    });
    const rows = await this.#client.queryText({ text }, params);
    const n = Math.min(rows.length, options.limit);
    const items: LeaseInfo[] = new Array(n);
    for (let i = 0; i < n; i++) items[i] = leaseInfoFromText(rows[i]!, 0);
    const last = items.at(-1);
    return {
      items,
      nextCursor: rows.length > options.limit && last !== undefined ? encodeListCursor(last.workId) : null,
    };
  }

  async count(workIdPrefix: string | undefined, holderId: string | undefined): Promise<number> {
    const below = workIdPrefix === undefined ? undefined : prefixUpperBound(workIdPrefix);
    const rows = await this.#client.query(this.#count, [
      workIdPrefix ?? null,
      below ?? null,
      holderId ?? null,
    ]);
    return Number(rows[0]?.n ?? 0);
  }

  async countByStatus(thresholds: StatusThresholds): Promise<StatusCounts> {
    const rows = await this.#client.queryText(this.#statusCounts, [
      thresholds.expiringFraction,
      thresholds.stuckAfterMs,
    ]);
    const byStatus = { live: 0, expiring: 0, expired: 0, released: 0, stuck: 0, 'force-released': 0 };
    let total = 0;
    let at = Number.NaN;
    for (const r of rows) {
      at = Number(r[0]);
      const name = STATUS_CODE_NAMES[Number(r[1])];
      if (name === undefined) continue;
      const n = Number(r[2]);
      byStatus[name] = n;
      total += n;
    }
    if (!Number.isSafeInteger(at)) throw new InternalError('unexpected server time in the status counts');
    return { at: new Date(at), total, byStatus };
  }

  async forceRelease(
    workId: string,
    expectedToken: bigint,
    operator: string,
    reason: string,
    batchId: string | null,
  ): Promise<LeaseInfo> {
    const rows = await this.#client.queryText(this.#sql.forceRelease, [
      workId,
      expectedToken,
      operator,
      reason,
      batchId,
    ]);
    const row = rows[0];
    if (row === undefined) {
      throw new NotFoundError(`work item '${workId}' has no lease to force-release`, { details: { workId } });
    }
    if (row[FORCED_INFO] === null) {
      // The LEFT JOIN found no updated row: refused.
      throw forceConflict(
        workId,
        expectedToken,
        toBigInt(row[FORCED_STORED_TOKEN], 'stored_token'),
        String(row[FORCED_STORED_HOLDER]),
        row[FORCED_STORED_ENDED] ?? null,
      );
    }
    return leaseInfoFromText(row, FORCED_INFO);
  }

  async requestRelease(
    workId: string,
    expectedToken: bigint,
    operator: string,
    reason: string,
  ): Promise<LeaseInfo> {
    const rows = await this.#client.queryText(this.#sql.requestRelease, [
      workId,
      expectedToken,
      operator,
      reason,
    ]);
    const row = rows[0];
    if (row === undefined) {
      throw new NotFoundError(`work item '${workId}' has no lease to request the release of`, {
        details: { workId },
      });
    }
    if (row[REQ_AFTER] !== null) return leaseInfoFromText(row, REQ_AFTER);
    const before = leaseInfoFromText(row, REQ_BEFORE);
    const live = row[REQ_LIVE] === 't';
    const why =
      before.fencingToken !== expectedToken
        ? 'token'
        : before.ended !== null
          ? before.ended
          : !live
            ? 'expired'
            : null;
    if (why === null && row[REQ_REQUESTED] === 't') return before; // asked before: idempotent
    throw requestConflict(workId, expectedToken, before.fencingToken, before.holderId, why ?? 'token');
  }

  async readState(workId: string, offset: number, length: number): Promise<StatePage | null> {
    const rows = await this.#client.query(this.#sql.readState, [workId, offset, length]);
    const row = rows[0];
    if (row === undefined) return null;
    return {
      fencingToken: toBigInt(row.token, 'token'),
      size: row.size === null || row.size === undefined ? null : Number(row.size),
      offset,
      bytes: toBytes(row.bytes) ?? new Uint8Array(0),
    };
  }

  async audit(workId: string | undefined, limit: number): Promise<AuditEntry[]> {
    const rows = await this.#client.query(this.#sql.audit, [workId ?? null, limit]);
    return rows.map(toAuditEntry);
  }

  /** Ended work items first, then the history's retention (statements/history.ts). */
  async prune(olderThanMs: number, limit: number, history: HistoryPruning): Promise<number> {
    const rows = await this.#client.query(this.#sql.prune, [olderThanMs, limit]);
    await this.#history.prune(history.olderThanMs, history.keepPerItem);
    return Number(rows[0]?.pruned ?? 0);
  }

  hold(workId: string, operator: string, reason: string): Promise<LeaseInfo> {
    return this.#history.hold(workId, operator, reason, true);
  }

  unhold(workId: string, operator: string, reason: string): Promise<LeaseInfo> {
    return this.#history.hold(workId, operator, reason, false);
  }

  history(workId: string, before: string | null, limit: number): Promise<HistoryEntry[]> {
    return this.#history.history(workId, before, limit);
  }

  handoffCheckpoint(workId: string, offset: number, length: number): Promise<StatePage | null> {
    return this.#history.handoffCheckpoint(workId, offset, length);
  }

  async serverTime(): Promise<Date> {
    const rows = await this.#client.query(this.#sql.serverTime, []);
    const now = toDate(rows[0]?.now, 'now');
    this.clock.observe(now.getTime(), performance.now());
    return now;
  }

  async serverVersion(): Promise<string> {
    const rows = await this.#client.query({ text: "SELECT current_setting('server_version') AS v" }, []);
    return String(rows[0]?.v ?? '');
  }

  async changeCursor(): Promise<string> {
    const rows = await this.#client.query(this.#sql.changeCursor, []);
    return encodeChangeCursor({ from: toBigInt(rows[0]?.xmin, 'xmin'), page: null });
  }

  /**
   * Why no committed change is missed: a transaction not visible to a snapshot
   * is either still running (its xid >= the snapshot's xmin) or starts later
   * (a larger xid still). So every row version committed after a poll's snapshot
   * carries change_xid >= that snapshot's xmin, and the next scan, which starts
   * at that xmin, sees it or a later version of the same row (a later version
   * too was committed after the snapshot). Rows changed by transactions in flight
   * are invisible now and delivered by a later scan; some rows are delivered
   * twice, which the contract allows.
   *
   * Paging: a scan larger than `limit` continues by keyset (change_xid, work_id)
   * on fresh snapshots. A row rewritten mid-scan may get an xid below the keyset;
   * it is not lost, because the scan's end cursor restarts from the xmin of the
   * scan's *first* page, which is at most that xid.
   */
  async changes(cursor: string, limit: number): Promise<ChangeBatch> {
    const c = decodeChangeCursor(cursor);
    const rows = await this.#client.queryText(this.#sql.changes, changeScanParams(c, limit));
    const first = rows[0];
    if (first === undefined) throw new InternalError('change query returned no row');
    const snapXmin = toBigInt(first[CHANGE_SNAP_XMIN], 'snap_xmin');
    // The left join's row without a change has NULLs after snap_xmin.
    const found = rows.filter((r) => r[CHANGE_XID] !== null);
    const page = found.slice(0, limit);
    const changes = page.map(toChange);
    const scanXmin = c.page?.scanXmin ?? snapXmin;
    const last = page.at(-1);
    const next =
      found.length > limit && last !== undefined
        ? encodeChangeCursor({
            from: c.from,
            page: {
              scanXmin,
              afterXid: toBigInt(last[CHANGE_XID], 'change_xid'),
              afterWorkId: String(last[CHANGE_INFO]),
            },
          })
        : encodeChangeCursor({ from: scanXmin, page: null });
    return { changes, cursor: next, gap: false };
  }

  /**
   * See {@link LeaseDriver.watchEnded}: the NOTIFY of migration 3, where the client can LISTEN. Since
   * migration 6 it is only sent for leases a waiter asked for with {@link notifyEnd}.
   */
  watchEnded(onEnded: (workId: string | null) => void): () => void {
    const listen = this.#client.listen;
    if (listen === undefined) return this.#pollEnded(onEnded);
    return listen.call(this.#client, endedChannel(this.#schema), onEnded);
  }

  /**
   * {@link watchEnded} where the client cannot LISTEN (behind a transaction pooler, whose server
   * connection goes back to the pool after the LISTEN): the change feed read every
   * {@link ENDED_POLL_MS} while anyone waits, each ended lease announced as a NOTIFY would. A lease
   * that ended and was taken again between two reads is not announced: it is held again anyway.
   */
  #pollEnded(onEnded: (workId: string | null) => void): () => void {
    let stopped = false;
    let cursor: string | null = null;
    let timer: NodeJS.Timeout | undefined;
    const tick = async (): Promise<void> => {
      try {
        if (cursor === null) {
          cursor = await this.changeCursor();
          if (!stopped) onEnded(null);
        } else {
          for (let page = 0; page < 10 && !stopped; page++) {
            const batch = await this.changes(cursor, 1000);
            cursor = batch.cursor;
            for (const c of batch.changes) {
              if (!stopped && (c.kind === 'released' || c.kind === 'force-released' || c.kind === 'pruned'))
                onEnded(c.workId);
            }
            if (batch.changes.length < 1000) break;
          }
        }
      } catch {
        // The next read starts from a fresh cursor, which wakes every waiter once.
        cursor = null;
      }
      if (!stopped) {
        timer = setTimeout(() => void tick(), ENDED_POLL_MS);
        timer.unref();
      }
    };
    void tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }

  /** See {@link LeaseDriver.notifyEnd}: sets wanted_until, which the trigger of migration 6 reads. */
  async notifyEnd(workId: string, forMs: number): Promise<boolean> {
    const rows = await this.#client.query(this.#sql.notifyEnd, [workId, forMs]);
    return rows[0]?.live === true;
  }

  async close(): Promise<void> {
    await this.#client.close();
  }
}

function toChange(row: TextRow): LeaseChange {
  const kind = String(row[CHANGE_KIND]) as LeaseChange['kind'];
  if (kind === 'pruned') {
    // A tombstone: only its identity, token and version mean anything.
    const token = CHANGE_INFO + INFO_COLUMNS.indexOf('token');
    const version = CHANGE_INFO + INFO_COLUMNS.indexOf('version');
    return {
      workId: String(row[CHANGE_INFO]),
      kind,
      lease: null,
      fencingToken: toBigInt(row[token], 'token'),
      version: toBigInt(row[version], 'version'),
    };
  }
  const lease = leaseInfoFromText(row, CHANGE_INFO);
  return { workId: lease.workId, kind, lease, fencingToken: lease.fencingToken, version: lease.version };
}
