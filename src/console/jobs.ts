/**
 * Server-side jobs over one snapshot of the leases a filter matches (issue 43): a bulk
 * force-release (each lease by compare-and-set on the token it had in the snapshot, a few at a
 * time, progress pushed as `job` events at most 4 times a second) and an export read page by
 * page. The browser sends a filter and the count the operator saw, never a list of ids.
 * A job belongs to the person who started it; it is dropped 10 minutes after it finished.
 */
import { randomBytes } from 'node:crypto';
import { ConflictError, errorToData, NotFoundError } from '../lease/errors.ts';
import type { LeaseAdmin } from '../lease/types.ts';
import type { Caller } from './access.ts';
import type { ConsoleEvent } from './api.ts';
import type { Job, ViewFilter, ViewSort } from './common/view.ts';
import { type ExportFormat, fleetRecord } from './export.ts';
import type { FleetStore } from './fleet/store.ts';
import type { FleetModel } from './model.ts';
import { queriesOf } from './views.ts';

/** Force-releases in flight at once. */
const CONCURRENCY = 8;
const KEEP_MS = 10 * 60_000;
const PROGRESS_GAP_MS = 250;
const MAX_FAILURES = 100;

interface Entry {
  job: Job;
  owner: string;
  /** Export: the snapshot's work ids and their statuses (codes) at `job.statusAt`. */
  ids?: string[];
  statuses?: Uint8Array;
  store?: FleetStore;
  connectionName?: string;
  dropTimer?: NodeJS.Timeout;
}

export interface JobConnection {
  readonly id: string;
  readonly name: string;
  readonly model: FleetModel | null;
  statusNow(): number;
  requireAdmin(): LeaseAdmin;
}

export class Jobs {
  private readonly jobs = new Map<string, Entry>();

  constructor(private readonly emit: (event: ConsoleEvent) => void) {}

  get(jobId: string, caller: Caller): Job {
    const e = this.jobs.get(jobId);
    if (e === undefined || e.owner !== owner(caller)) {
      throw new NotFoundError(`no job with id '${jobId}'`, { details: { what: 'job', jobId } });
    }
    return { ...e.job, failures: [...e.job.failures] };
  }

  /** Takes the snapshot, checks the count the operator confirmed, and starts releasing. */
  forceRelease(
    conn: JobConnection,
    caller: Caller,
    p: { filter: ViewFilter; expectCount: number; reason: string; operator: string },
  ): Job {
    const model = requireModel(conn);
    const statusAt = conn.statusNow();
    const store = model.judged(statusAt);
    const slots = queriesOf(store).matching(p.filter);
    if (slots.length !== p.expectCount) {
      throw new ConflictError(
        `${slots.length} leases match the filter now, not the ${p.expectCount} confirmed: check the selection and confirm again`,
        { details: { count: slots.length, expected: p.expectCount } },
      );
    }
    const items = slots.map((s) => ({ workId: store.cols.workId[s]!, token: store.cols.token[s]! }));
    const admin = conn.requireAdmin();
    const job = this.add(conn, caller, 'force-release', items.length, statusAt);
    job.batchId = `b_${randomBytes(9).toString('base64url')}`;
    void this.runReleases(job, admin, model, items, p);
    return { ...job };
  }

  /** An export page: the first call (no jobId) takes the snapshot. */
  exportPage(
    conn: JobConnection,
    caller: Caller,
    p: {
      format: ExportFormat;
      filter: ViewFilter;
      sort: ViewSort;
      jobId?: string | undefined;
      offset: number;
      limit: number;
    },
  ): { jobId: string; records: string[]; total: number; nextOffset: number | null; statusAt: number } {
    let entry: Entry;
    if (p.jobId === undefined) {
      const model = requireModel(conn);
      const statusAt = conn.statusNow();
      const store = model.judged(statusAt);
      const slots = queriesOf(store).matching(p.filter, p.sort.column, p.sort.dir);
      const job = this.add(conn, caller, 'export', slots.length, statusAt);
      entry = this.jobs.get(job.jobId)!;
      entry.ids = slots.map((s) => store.cols.workId[s]!);
      entry.statuses = Uint8Array.from(slots, (s) => store.status[s]!);
      entry.store = store;
      entry.connectionName = conn.name;
    } else {
      const found = this.jobs.get(p.jobId);
      if (found === undefined || found.owner !== owner(caller) || found.ids === undefined) {
        throw new NotFoundError(`no export with id '${p.jobId}'`, {
          details: { what: 'job', jobId: p.jobId },
        });
      }
      entry = found;
    }
    const ids = entry.ids!;
    const store = entry.store!;
    const end = Math.min(ids.length, p.offset + p.limit);
    const records: string[] = [];
    for (let i = p.offset; i < end; i++) {
      const slot = store.find(ids[i]!);
      // Pruned since the snapshot: left out (its row is gone).
      if (slot < 0) continue;
      const status = STATUS(entry.statuses![i]!);
      records.push(fleetRecord(p.format, entry.connectionName!, store.cols.row(slot), status));
    }
    const job = entry.job;
    job.done = Math.max(job.done, end);
    job.ok = job.done;
    if (end >= ids.length && !job.finished) this.finish(entry);
    return {
      jobId: job.jobId,
      records,
      total: ids.length,
      nextOffset: end < ids.length ? end : null,
      statusAt: job.statusAt,
    };
  }

  clear(): void {
    for (const e of this.jobs.values()) if (e.dropTimer !== undefined) clearTimeout(e.dropTimer);
    this.jobs.clear();
  }

  private add(conn: JobConnection, caller: Caller, kind: Job['kind'], total: number, statusAt: number): Job {
    const job: Job = {
      jobId: `j_${randomBytes(9).toString('base64url')}`,
      connectionId: conn.id,
      kind,
      total,
      done: 0,
      ok: 0,
      failed: 0,
      finished: false,
      batchId: null,
      failures: [],
      statusAt,
    };
    this.jobs.set(job.jobId, { job, owner: owner(caller) });
    return job;
  }

  private async runReleases(
    job: Job,
    admin: LeaseAdmin,
    model: FleetModel,
    items: Array<{ workId: string; token: bigint }>,
    p: { reason: string; operator: string },
  ): Promise<void> {
    let next = 0;
    let lastSent = 0;
    const progress = (force: boolean): void => {
      const now = performance.now();
      if (!force && now - lastSent < PROGRESS_GAP_MS) return;
      lastSent = now;
      this.emit({ type: 'job', job: { ...job, failures: [...job.failures] } });
    };
    const worker = async (): Promise<void> => {
      for (let i = next++; i < items.length; i = next++) {
        const item = items[i]!;
        try {
          const info = await admin.forceRelease(item.workId, {
            expectedToken: item.token,
            operator: p.operator,
            reason: p.reason,
            ...(job.batchId === null ? {} : { batchId: job.batchId }),
          });
          model.applyInfo(info);
          job.ok++;
        } catch (err) {
          job.failed++;
          if (job.failures.length < MAX_FAILURES) {
            const data = errorToData(err);
            job.failures.push({ workId: item.workId, code: data.code, message: data.message });
          }
        }
        job.done++;
        progress(false);
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, items.length) }, worker));
    model.wake();
    const entry = this.jobs.get(job.jobId);
    if (entry !== undefined) this.finish(entry);
    progress(true);
  }

  private finish(entry: Entry): void {
    entry.job.finished = true;
    entry.dropTimer = setTimeout(() => this.jobs.delete(entry.job.jobId), KEEP_MS);
    entry.dropTimer.unref();
  }
}

const STATUS_CODES = ['live', 'expiring', 'expired', 'released', 'stuck', 'force-released'] as const;
const STATUS = (code: number): (typeof STATUS_CODES)[number] => STATUS_CODES[code] ?? 'live';

function owner(caller: Caller): string {
  return `${caller.via}:${caller.user}`;
}

function requireModel(conn: JobConnection): FleetModel {
  const model = conn.model;
  if (model === null) throw new ConflictError(`connection '${conn.name}' is not connected yet`);
  if (model.loading !== null) {
    throw new ConflictError(
      `connection '${conn.name}' is still loading its fleet: try again once it is loaded`,
      {
        details: { loading: model.loading },
      },
    );
  }
  return model;
}
