/**
 * The fleet requests of pages from before the server-side views (issue 43): whole-row snapshot
 * pages, an export paged over a held snapshot, and a bulk force-release of a given list of ids.
 * Kept for the CLI and older pages; new pages use fleet.view, fleet.exportMatching and
 * lease.forceReleaseMatching (fleet-api.ts).
 */
import { randomBytes } from 'node:crypto';
import { errorToData, ForbiddenError } from '../lease/errors.ts';
import type { Caller, Permission } from './access.ts';
import type { BulkResult, ParsedParams, Result } from './api.ts';
import type { Connection } from './connection.ts';
import { fleetRecord, textMatches } from './export.ts';
import { toLeaseRow } from './rows.ts';
import { leaseStatus } from './status.ts';

/** Force-releases of one bulk call in flight at once. */
const BULK_CONCURRENCY = 8;

type LegacyMethod = 'fleet.snapshot' | 'lease.forceReleaseMany' | 'fleet.export';

export interface LegacyHost {
  now(): number;
  visibleConnection(id: string, caller: Caller): Connection;
  operatorPermission(caller: Caller, conn: Connection, action: 'force-release'): Permission;
}

export function legacyHandlers(host: LegacyHost): {
  [M in LegacyMethod]: (p: ParsedParams<M>, caller: Caller) => Promise<Result<M>>;
} {
  return {
    'fleet.snapshot': async ({ connectionId, offset, limit, seq }, caller) => {
      const conn = host.visibleConnection(connectionId, caller);
      const model = conn.model;
      if (model === null) {
        const empty = {
          connectionId,
          rows: [],
          seq: 0,
          serverTime: Math.round(host.now()),
          heartbeatsAsOf: null,
        };
        return limit === undefined ? empty : { ...empty, total: 0 };
      }
      if (limit === undefined) {
        const snap = model.snapshot();
        return {
          connectionId,
          rows: snap.rows,
          seq: snap.seq,
          serverTime: snap.serverTime,
          heartbeatsAsOf: snap.heartbeatsAsOf,
        };
      }
      const snap = conn.pagedSnapshot(model, seq);
      const from = offset ?? 0;
      return {
        connectionId,
        rows: snap.rows.slice(from, from + limit),
        seq: snap.seq,
        serverTime: snap.serverTime,
        heartbeatsAsOf: snap.heartbeatsAsOf,
        total: snap.rows.length,
      };
    },
    'lease.forceReleaseMany': async ({ connectionId, items, reason, operator }, caller) => {
      const conn = host.visibleConnection(connectionId, caller);
      const allowed = host.operatorPermission(caller, conn, 'force-release');
      if (!allowed.allowed) throw new ForbiddenError(allowed.reason, { details: { connectionId } });
      if (caller.via !== 'desktop' && operator !== undefined && operator !== caller.user) {
        throw new ForbiddenError(
          `the audit log records the signed-in user ('${caller.user}'); another operator name is refused`,
          { details: { connectionId } },
        );
      }
      const admin = conn.requireAdmin();
      const batchId = `b_${randomBytes(9).toString('base64url')}`;
      const who = caller.via === 'desktop' ? (operator ?? caller.user) : caller.user;
      const results: BulkResult[] = new Array(items.length);
      // A few at a time: bounded load on the backend, each row its own compare-and-set.
      let next = 0;
      const worker = async (): Promise<void> => {
        for (let i = next++; i < items.length; i = next++) {
          const item = items[i]!;
          try {
            const info = await admin.forceRelease(item.workId, {
              expectedToken: BigInt(item.expectedToken),
              operator: who,
              reason,
              batchId,
            });
            conn.model?.applyInfo(info);
            results[i] = { workId: item.workId, ok: true, row: toLeaseRow(info) };
          } catch (err) {
            const data = errorToData(err);
            results[i] = {
              workId: item.workId,
              ok: false,
              error: { code: data.code, message: data.message },
            };
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(BULK_CONCURRENCY, items.length) }, worker));
      conn.model?.wake();
      return { batchId, results };
    },
    'fleet.export': async ({ connectionId, format, filter, offset, limit, seq, statusAt }, caller) => {
      const conn = host.visibleConnection(connectionId, caller);
      const model = conn.model;
      if (model === null)
        return { records: [], total: 0, nextOffset: null, seq: 0, statusAt: conn.statusNow() };
      const snap = conn.pagedSnapshot(model, seq);
      // A later page of the same snapshot keeps the first page's time: one status per row per file.
      const at =
        offset > 0 && seq === snap.seq && statusAt !== undefined
          ? statusAt
          : conn.statusNow(snap.heartbeatsAsOf);
      const statuses =
        filter.statuses !== undefined && filter.statuses.length > 0 ? new Set(filter.statuses) : null;
      const records: string[] = [];
      const end = Math.min(snap.rows.length, offset + limit);
      for (let i = offset; i < end; i++) {
        const row = snap.rows[i]!;
        if (!textMatches(filter, row)) continue;
        const status = leaseStatus(row, at, conn.input.thresholds);
        if (statuses !== null && !statuses.has(status)) continue;
        records.push(fleetRecord(format, conn.input.name, row, status));
      }
      return {
        records,
        total: snap.rows.length,
        nextOffset: end < snap.rows.length ? end : null,
        seq: snap.seq,
        statusAt: at,
      };
    },
  };
}
