/**
 * `worklease audit`: the audit log of admin actions (force-releases: who, when,
 * why, old holder, old and new token), newest first. Read-only.
 *
 * The backend filters by work id and returns at most 1000 entries, newest
 * first; operator and time-range filters are applied to those entries here. So
 * with --operator/--since/--until the search covers the newest 1000 entries
 * (of that work id, if given), and the command says so when it hit that bound.
 */
import { InvalidArgumentError as CommanderArgumentError } from 'commander';
import type { AuditEntry } from '../../lease/types.ts';
import { type GlobalOptions, out, resolveUrl, warn, withBackend } from '../context.ts';
import { relative, table } from '../format.ts';

export interface AuditCommandOptions {
  workId?: string;
  operator?: string;
  since?: TimeBound;
  until?: TimeBound;
  limit?: number;
  json?: boolean;
}

/** An absolute time, or a duration before the server's now (`90m` = 90 minutes ago). */
export type TimeBound = { at: number } | { agoMs: number };

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
/** The backend's largest audit page. */
const MAX_SCAN = 1000;

/** `2026-11-30T08:00:00Z`, `2026-11-30` or `90m` / `2h` / `7d` (ago). Refused before any I/O. */
export function parseTimeBound(value: string): TimeBound {
  const rel = /^([0-9]{1,9})(ms|s|m|h|d)$/.exec(value);
  if (rel !== null) return { agoMs: Number(rel[1]) * UNIT_MS[rel[2]!]! };
  if (/^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9:.]+(Z|[+-][0-9]{2}:?[0-9]{2})?)?$/.test(value)) {
    const at = Date.parse(value);
    if (Number.isFinite(at)) return { at };
  }
  throw new CommanderArgumentError(
    'expected an ISO 8601 time (2026-11-30T08:00:00Z) or a duration ago (90s, 30m, 2h, 7d).',
  );
}

function resolveBound(bound: TimeBound | undefined, serverNow: number): number | undefined {
  if (bound === undefined) return undefined;
  return 'at' in bound ? bound.at : serverNow - bound.agoMs;
}

export function auditJson(e: AuditEntry): Record<string, unknown> {
  return {
    id: e.id,
    at: e.at.toISOString(),
    action: e.action,
    workId: e.workId,
    operator: e.operator,
    reason: e.reason,
    oldHolderId: e.oldHolderId,
    oldToken: e.oldToken.toString(),
    newToken: e.newToken.toString(),
    batchId: e.batchId,
  };
}

export async function auditCommand(
  urlArg: string | undefined,
  options: AuditCommandOptions,
  globals: GlobalOptions,
): Promise<void> {
  const url = resolveUrl(urlArg);
  const limit = options.limit ?? 100;
  const filtered =
    options.operator !== undefined || options.since !== undefined || options.until !== undefined;
  await withBackend(url, globals, async (backend) => {
    const serverNow = (await backend.admin.serverTime()).getTime();
    const since = resolveBound(options.since, serverNow);
    const until = resolveBound(options.until, serverNow);
    const scan = filtered ? MAX_SCAN : Math.min(limit, MAX_SCAN);
    const entries = await backend.admin.audit({
      ...(options.workId === undefined ? {} : { workId: options.workId }),
      limit: scan,
    });
    const matching = entries
      .filter((e) => options.operator === undefined || e.operator === options.operator)
      .filter((e) => since === undefined || e.at.getTime() >= since)
      .filter((e) => until === undefined || e.at.getTime() <= until)
      .slice(0, limit);
    if (filtered && entries.length >= scan) {
      warn(`searched the newest ${scan} audit entries only; narrow with --work-id to search further back`);
    }
    if (options.json) {
      await out(JSON.stringify(matching.map(auditJson), null, 2));
      return;
    }
    if (matching.length === 0) {
      await out(
        `no audit entries match on ${backend.url} (server time ${new Date(serverNow).toISOString()})`,
      );
      return;
    }
    const body = matching.map((e) => [
      e.at.toISOString(),
      relative(e.at, serverNow),
      e.workId,
      e.action,
      e.operator,
      `${e.oldToken} -> ${e.newToken}`,
      e.oldHolderId,
      e.reason,
    ]);
    await out(
      `${table(['AT', 'WHEN', 'WORK ID', 'ACTION', 'OPERATOR', 'TOKEN', 'OLD HOLDER', 'REASON'], body)}\n` +
        `${matching.length} entr${matching.length === 1 ? 'y' : 'ies'}, newest first; server time ${new Date(serverNow).toISOString()}`,
    );
  });
}
