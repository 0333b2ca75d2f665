/**
 * The SQL driver's part for a work item's history and holds (docs/history.md): hold, unhold,
 * history, handoffCheckpoint, the history's retention, and the ON_HOLD error of a refused
 * acquire. The statements are in statements/history.ts; driver.ts delegates to these.
 */
import { InternalError, InvalidArgumentError, NotFoundError, OnHoldError } from '../../lease/errors.ts';
import type { HistoryEntry, HistoryKind, LeaseInfo, StatePage } from '../../lease/types.ts';
import type { SqlClient } from './client.ts';
import { leaseInfoFromText, toBigInt, toBytes, toDate } from './rows.ts';
import { INFO_COLUMNS } from './statements/fragments.ts';
import type { HistoryStatements } from './statements/history.ts';

/** The SQLSTATE of lease_on_hold (migration 13). */
export const ON_HOLD_SQLSTATE = 'WL004';

const KINDS: readonly HistoryKind[] = [
  'acquired',
  'released',
  'expired',
  'force-released',
  'release-requested',
  'held',
  'unheld',
];

/** Positions in the text row of hold / unhold: changed, the lease before, the lease after. */
const HOLD_BEFORE = 1;
const HOLD_AFTER = HOLD_BEFORE + INFO_COLUMNS.length;

/** Deleted in one prune call at most (the retention catches up over the next calls). */
const HISTORY_PRUNE_BATCH = 100_000;

/**
 * The ON_HOLD error of an acquire refused by lease_on_hold (its WL004 error, the hold as JSON in
 * DETAIL), or undefined for any other error. `err` is what the SqlClient threw; its `cause` is the
 * client's own error, with `code` and `detail` (as for refusedRow in rows.ts).
 */
export function onHoldError(err: unknown, workId: string): OnHoldError | undefined {
  const cause =
    err instanceof Error ? (err.cause as { code?: unknown; detail?: unknown } | undefined) : undefined;
  if (cause?.code !== ON_HOLD_SQLSTATE) return undefined;
  let hold: { at?: unknown; operator?: unknown; reason?: unknown } = {};
  try {
    hold = JSON.parse(String(cause.detail)) as typeof hold;
  } catch {
    // Without its details the refusal is still ON_HOLD.
  }
  const at = typeof hold.at === 'number' ? new Date(hold.at) : null;
  const operator = typeof hold.operator === 'string' ? hold.operator : null;
  const by = operator === null ? '' : ` by ${operator}`;
  const since = at === null ? '' : ` since ${at.toISOString()}`;
  return new OnHoldError(
    `work item '${workId}' is on hold${by}${since}${typeof hold.reason === 'string' ? ` (${hold.reason})` : ''}: acquire refused until an operator unholds it`,
    {
      details: { workId, heldAt: at, operator, reason: typeof hold.reason === 'string' ? hold.reason : null },
    },
  );
}

/** A history page's `before`: an entry id of this backend (a positive decimal integer). */
export function parseHistoryId(before: string): bigint {
  if (!/^[1-9][0-9]{0,18}$/.test(before)) {
    throw new InvalidArgumentError(
      `options.before is not the id of a history entry of this backend: '${before}'`,
    );
  }
  return BigInt(before);
}

export class SqlHistory {
  readonly #client: SqlClient;
  readonly #sql: HistoryStatements;

  constructor(client: SqlClient, sql: HistoryStatements) {
    this.#client = client;
    this.#sql = sql;
  }

  async hold(workId: string, operator: string, reason: string, on: boolean): Promise<LeaseInfo> {
    const rows = await this.#client.queryText(on ? this.#sql.hold : this.#sql.unhold, [
      workId,
      operator,
      reason,
    ]);
    const row = rows[0];
    if (row === undefined) {
      throw new NotFoundError(`work item '${workId}' has no lease to ${on ? 'hold' : 'unhold'}`, {
        details: { workId },
      });
    }
    // Nothing written: it was held already (hold) or not held (unhold); the lease as it is.
    return leaseInfoFromText(row, row[0] === 't' ? HOLD_AFTER : HOLD_BEFORE);
  }

  async history(workId: string, before: string | null, limit: number): Promise<HistoryEntry[]> {
    const id = before === null ? null : parseHistoryId(before);
    const rows = await this.#client.query(this.#sql.history, [workId, id, limit]);
    return rows.map((r) => {
      const kind = KINDS.find((k) => k === r.kind);
      if (kind === undefined) throw new InternalError(`unexpected history kind: ${String(r.kind)}`);
      const entry: HistoryEntry = {
        id: String(r.id),
        kind,
        at: toDate(r.at, 'at'),
        holderId: String(r.holder_id),
        token: toBigInt(r.token, 'token'),
      };
      if (r.operator !== null && r.operator !== undefined) entry.operator = String(r.operator);
      if (r.reason !== null && r.reason !== undefined) entry.reason = String(r.reason);
      if (r.checkpoint_bytes !== null && r.checkpoint_bytes !== undefined)
        entry.checkpointBytes = Number(r.checkpoint_bytes);
      return entry;
    });
  }

  async handoffCheckpoint(workId: string, offset: number, length: number): Promise<StatePage | null> {
    const rows = await this.#client.query(this.#sql.handoffCheckpoint, [workId, offset, length]);
    const row = rows[0];
    if (row === undefined) return null;
    return {
      fencingToken: toBigInt(row.token, 'token'),
      size: Number(row.size),
      offset,
      bytes: toBytes(row.bytes) ?? new Uint8Array(0),
    };
  }

  async prune(olderThanMs: number, keepPerItem: number): Promise<number> {
    const rows = await this.#client.query(this.#sql.pruneHistory, [
      olderThanMs,
      keepPerItem,
      HISTORY_PRUNE_BATCH,
    ]);
    return Number(rows[0]?.deleted ?? 0);
  }
}
