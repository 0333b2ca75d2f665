/**
 * `worklease ls`: the fleet as a table (or JSON), with status derived against
 * the backend's clock, never this machine's.
 */
import { DEFAULT_THRESHOLDS, LEASE_STATUSES, type LeaseStatus, type Thresholds } from '../../console/api.ts';
import { connectionIdFor, leaseUrl } from '../../console/links.ts';
import { leaseStatus } from '../../console/status.ts';
import { InvalidArgumentError } from '../../lease/errors.ts';
import type { LeaseBackend, LeaseInfo, ListOptions } from '../../lease/types.ts';
import { type GlobalOptions, out, resolveConsoleUrl, resolveUrl, withBackend } from '../context.ts';
import { bytes, leaseJson, relative, table } from '../format.ts';

export interface ThresholdOptions {
  stuckAfter?: number;
  expiringFraction?: number;
}

export interface LsOptions extends ThresholdOptions {
  status?: string[];
  holder?: string;
  prefix?: string;
  limit?: number;
  json?: boolean;
  /** Add each lease's console URL (needs `--console-url` or WORKLEASE_CONSOLE_URL). */
  urls?: boolean;
  consoleUrl?: string;
}

export function thresholdsFrom(options: ThresholdOptions): Thresholds {
  return {
    stuckAfterMs: options.stuckAfter ?? DEFAULT_THRESHOLDS.stuckAfterMs,
    expiringFraction: options.expiringFraction ?? DEFAULT_THRESHOLDS.expiringFraction,
  };
}

/** `--status live,stuck --status expired` → a set; unknown names are refused before any I/O. */
export function parseStatuses(values: string[] | undefined): Set<LeaseStatus> | null {
  if (values === undefined || values.length === 0) return null;
  const wanted = new Set<LeaseStatus>();
  for (const name of values.flatMap((v) => v.split(',')).map((v) => v.trim())) {
    if (name === '') continue;
    if (!(LEASE_STATUSES as readonly string[]).includes(name)) {
      throw new InvalidArgumentError(`unknown status '${name}': use one of ${LEASE_STATUSES.join(', ')}`);
    }
    wanted.add(name as LeaseStatus);
  }
  return wanted;
}

type Filter = { holderId?: string | undefined; workIdPrefix?: string | undefined };

function filterOptions(filter: Filter): { holderId?: string; workIdPrefix?: string } {
  const o: { holderId?: string; workIdPrefix?: string } = {};
  if (filter.holderId !== undefined) o.holderId = filter.holderId;
  if (filter.workIdPrefix !== undefined) o.workIdPrefix = filter.workIdPrefix;
  return o;
}

/** The first `limit` leases matching the filters (by work id), in pages of at most 10 000. */
export async function listFirst(backend: LeaseBackend, filter: Filter, limit: number): Promise<LeaseInfo[]> {
  const items: LeaseInfo[] = [];
  let cursor: string | null = null;
  do {
    const page = await backend.admin.list({
      ...filterOptions(filter),
      cursor,
      limit: Math.min(10_000, limit - items.length),
    });
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor !== null && items.length < limit);
  return items;
}

/** The first `limit` leases (by work id) that `match`, reading pages only until they are found. */
async function listMatching<T>(
  backend: LeaseBackend,
  limit: number,
  match: (info: LeaseInfo) => boolean,
  withStatus: (items: LeaseInfo[]) => T[],
): Promise<T[]> {
  const items: LeaseInfo[] = [];
  let cursor: string | null = null;
  do {
    const page = await backend.admin.list({ cursor, limit: 1000 });
    for (const info of page.items) if (items.length < limit && match(info)) items.push(info);
    cursor = page.nextCursor;
  } while (cursor !== null && items.length < limit);
  return withStatus(items);
}

/** Every lease matching the filters, page by page. */
export async function listAll(
  backend: LeaseBackend,
  filter: { holderId?: string | undefined; workIdPrefix?: string | undefined },
): Promise<LeaseInfo[]> {
  const items: LeaseInfo[] = [];
  let cursor: string | null = null;
  do {
    const options: ListOptions = { cursor, limit: 1000 };
    if (filter.holderId !== undefined) options.holderId = filter.holderId;
    if (filter.workIdPrefix !== undefined) options.workIdPrefix = filter.workIdPrefix;
    const page = await backend.admin.list(options);
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return items;
}

export async function lsCommand(
  urlArg: string | undefined,
  options: LsOptions,
  globals: GlobalOptions,
): Promise<void> {
  const url = resolveUrl(urlArg);
  const wanted = parseStatuses(options.status);
  const thresholds = thresholdsFrom(options);
  const consoleUrl = options.urls === true ? resolveConsoleUrl(options.consoleUrl) : null;
  if (options.urls === true && consoleUrl === null) {
    throw new InvalidArgumentError(
      '--urls needs the console: pass --console-url or set WORKLEASE_CONSOLE_URL',
    );
  }
  await withBackend(url, globals, async (backend) => {
    const connectionId = connectionIdFor(backend.url);
    const link = (workId: string) =>
      consoleUrl === null ? null : leaseUrl(consoleUrl, connectionId, workId);
    const filter = { holderId: options.holder, workIdPrefix: options.prefix };
    const serverNow = (await backend.admin.serverTime()).getTime();
    const withStatus = (items: LeaseInfo[]) =>
      items.map((info) => ({ info, status: leaseStatus(rowTimes(info), serverNow, thresholds) }));
    let rows: Array<{ info: LeaseInfo; status: LeaseStatus }>;
    let total: number;
    if (options.limit !== undefined && wanted === null) {
      // Only the first page is read; the total is counted on the server.
      [rows, total] = await Promise.all([
        listFirst(backend, filter, options.limit).then(withStatus),
        backend.admin.count(filterOptions(filter)),
      ]);
    } else if (
      options.limit !== undefined &&
      wanted !== null &&
      filter.holderId === undefined &&
      filter.workIdPrefix === undefined &&
      backend.admin.countByStatus !== undefined
    ) {
      // PostgreSQL and PGlite count by status on the server (one aggregate statement, judged at the
      // server's clock one round trip from `serverNow`): only the pages up to `limit` matches are read.
      const [first, counts] = await Promise.all([
        listMatching(
          backend,
          options.limit,
          (info) => wanted.has(leaseStatus(rowTimes(info), serverNow, thresholds)),
          withStatus,
        ),
        backend.admin.countByStatus(thresholds),
      ]);
      rows = first;
      total = [...wanted].reduce((sum, s) => sum + counts.byStatus[s], 0);
    } else {
      // Statuses are derived here (against the server clock), so a status filter needs every row.
      rows = withStatus(await listAll(backend, filter)).filter(
        (r) => wanted === null || wanted.has(r.status),
      );
      total = rows.length;
      if (options.limit !== undefined) rows = rows.slice(0, options.limit);
    }
    if (options.json) {
      await out(
        JSON.stringify(
          rows.map((r) => {
            const u = link(r.info.workId);
            return u === null
              ? leaseJson(r.info, r.status)
              : { ...leaseJson(r.info, r.status), consoleUrl: u };
          }),
          null,
          2,
        ),
      );
      return;
    }
    if (rows.length === 0) {
      await out(
        `no leases match${total > 0 ? ` (0 of ${total})` : ''} (server time ${new Date(serverNow).toISOString()})`,
      );
      return;
    }
    const body = rows.map(({ info, status }) => [
      info.workId,
      status,
      info.holderId,
      info.fencingToken.toString(),
      info.ended === null
        ? relative(info.expiresAt, serverNow)
        : `ended ${relative(info.releasedAt ?? info.expiresAt, serverNow)}`,
      info.checkpointSize === null
        ? '-'
        : `${bytes(info.checkpointSize)}, ${relative(info.checkpointedAt, serverNow)}`,
      info.stepId ?? '-',
      ...(consoleUrl === null ? [] : [link(info.workId)!]),
    ]);
    const counts = new Map<LeaseStatus, number>();
    for (const r of rows) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
    const summary = LEASE_STATUSES.filter((s) => counts.has(s))
      .map((s) => `${s} ${counts.get(s)}`)
      .join(', ');
    const shown =
      rows.length === total
        ? `${total} lease${total === 1 ? '' : 's'}`
        : `${rows.length} of ${total} leases (first ${rows.length} by work id)`;
    await out(
      `${table(['WORK ID', 'STATUS', 'HOLDER', 'TOKEN', 'EXPIRES', 'CHECKPOINT', 'STEP', ...(consoleUrl === null ? [] : ['URL'])], body)}\n` +
        `${shown} (${summary}); server time ${new Date(serverNow).toISOString()}`,
    );
  });
}

/** The fields `leaseStatus` needs, as epoch ms. */
export function rowTimes(info: LeaseInfo): Parameters<typeof leaseStatus>[0] {
  return {
    workId: info.workId,
    expiresAt: info.expiresAt.getTime(),
    ttlMs: info.ttlMs,
    ended: info.ended,
    acquiredAt: info.acquiredAt.getTime(),
    renewedAt: info.renewedAt?.getTime() ?? null,
    checkpointedAt: info.checkpointedAt?.getTime() ?? null,
  };
}
