/**
 * Conversions from the lease contract's types (bigint tokens, Dates) to the
 * console's wire rows (decimal strings, epoch ms). One place, so the model,
 * the service and the CLI agree on every field.
 */
import type { AuditEntry, LeaseInfo } from '../lease/types.ts';
import type { AuditEntryWire, LeaseRow } from './api.ts';

const ms = (d: Date | null): number | null => (d === null ? null : d.getTime());

export function toLeaseRow(info: LeaseInfo): LeaseRow {
  return {
    workId: info.workId,
    holderId: info.holderId,
    fencingToken: info.fencingToken.toString(),
    expiresAt: info.expiresAt.getTime(),
    ttlMs: info.ttlMs,
    stepId: info.stepId,
    acquiredAt: info.acquiredAt.getTime(),
    renewedAt: ms(info.renewedAt),
    checkpointedAt: ms(info.checkpointedAt),
    releasedAt: ms(info.releasedAt),
    checkpointSize: info.checkpointSize,
    cleanHandoff: info.cleanHandoff,
    predecessorEnd: info.predecessorEnd,
    ended: info.ended,
    version: info.version.toString(),
    releaseRequest:
      info.releaseRequest === null
        ? null
        : {
            at: info.releaseRequest.at.getTime(),
            operator: info.releaseRequest.operator,
            reason: info.releaseRequest.reason,
          },
  };
}

export function toAuditWire(entry: AuditEntry): AuditEntryWire {
  return {
    id: entry.id,
    at: entry.at.getTime(),
    action: entry.action,
    workId: entry.workId,
    operator: entry.operator,
    reason: entry.reason,
    oldHolderId: entry.oldHolderId,
    oldToken: entry.oldToken.toString(),
    newToken: entry.newToken.toString(),
    batchId: entry.batchId,
  };
}
