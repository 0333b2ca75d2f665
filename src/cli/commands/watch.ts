/**
 * `worklease watch`: follows the backend's change feed and prints one line
 * per ownership change as it happens: acquired, released, force-released,
 * release-requested, pruned. Renews and checkpoints are not in the feed (issue
 * 14: a feed entry per heartbeat cost the lease calls too much; they bump the
 * row's version only), so `watch` does not print them, says so when it starts,
 * and refuses `--kind renewed`/`checkpointed` rather than wait forever for
 * something that never comes; a backend that still writes them has them
 * dropped here, so the output means the same on every backend. The last
 * heartbeat of a lease is in `worklease show` and the console. Where the feed coalesces writes (Postgres
 * delivers each row's latest version), the rows' handoff counters tell how
 * many acquisitions, releases and force-releases happened in between: each is
 * printed once, marked as seen between two reads. Polls adaptively: at once while changes keep
 * coming, backing off to `--max-interval` when the fleet is quiet. A gap in
 * the feed (the backend trimmed changes we had not read) is reported and the
 * watch resumes from the head. Transient backend errors are reported once and
 * retried; only the first connection failure ends the command.
 */

import { hasCode, InvalidArgumentError } from '../../lease/errors.ts';
import type { ChangeKind, HandoffCounts, LeaseAdmin, LeaseChange } from '../../lease/types.ts';
import { type GlobalOptions, openCli, out, resolveUrl, warn } from '../context.ts';
import { describeFailure } from '../errors.ts';

/** The kinds the change feed carries: ownership changes. */
const KINDS: ChangeKind[] = ['acquired', 'released', 'force-released', 'release-requested', 'pruned'];
/** Written without a feed entry (they only bump the row's version). */
const HEARTBEAT_KINDS: ChangeKind[] = ['renewed', 'checkpointed'];

export interface WatchOptions {
  json?: boolean;
  prefix?: string;
  holder?: string;
  kind?: string[];
  /** Longest pause between polls when nothing changes, ms. Default 1000. */
  maxInterval?: number;
}

export async function watchCommand(
  urlArg: string | undefined,
  options: WatchOptions,
  globals: GlobalOptions,
): Promise<void> {
  const url = resolveUrl(urlArg);
  const kinds = parseKinds(options.kind);
  const minIntervalMs = 50;
  const maxIntervalMs = Math.max(minIntervalMs, options.maxInterval ?? 1000);
  const backend = await openCli(url, globals, false);
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    let cursor = await backend.admin.changeCursor();
    // Measured once: change rows carry no timestamp of their own for every kind.
    const offsetMs = (await backend.admin.serverTime()).getTime() - Date.now();
    // Where the backend counts handoffs (a feed that coalesces writes), the counters of every row at
    // the start are the baseline that lets each later handoff be printed exactly once. Listed after
    // the cursor: a write in between is both in the list and after the cursor, and (token, version)
    // drops the repeat.
    const seen = new Map<string, Seen>();
    await seed(backend.admin, seen);
    warn(
      `watching ${backend.url}: ownership changes (${KINDS.join(', ')}); renews and checkpoints are not in the change feed (Ctrl-C to stop)`,
    );
    let intervalMs = minIntervalMs;
    let failing = false;
    while (!stop.signal.aborted) {
      let full = false;
      try {
        const batch = await backend.admin.changes({ cursor, limit: 1000 });
        if (failing) warn('backend reachable again; watching');
        failing = false;
        if (batch.gap) {
          warn('the change feed was trimmed past our position: some changes were missed; resuming from now');
          cursor = await backend.admin.changeCursor();
          continue;
        }
        cursor = batch.cursor;
        full = batch.changes.length >= 1000;
        const lines: string[] = [];
        for (const change of batch.changes) {
          // A backend from before issue 14 still writes these: not an ownership change, not shown.
          if (HEARTBEAT_KINDS.includes(change.kind)) continue;
          const before = seen.get(change.workId);
          if (!isNew(seen, change)) continue;
          const serverNow = Date.now() + offsetMs;
          for (const kind of coalesced(before, change)) {
            if (kinds !== null && !kinds.has(kind)) continue;
            if (options.prefix !== undefined && !change.workId.startsWith(options.prefix)) continue;
            // Who held the lease in between is not known: a holder filter cannot place these.
            if (options.holder !== undefined) continue;
            lines.push(renderCoalesced(change.workId, kind, serverNow, options.json === true));
          }
          if (!matches(change, options, kinds)) continue;
          lines.push(render(change, serverNow, options.json === true));
        }
        if (lines.length > 0) await out(lines.join('\n'));
        intervalMs = batch.changes.length > 0 ? minIntervalMs : Math.min(maxIntervalMs, intervalMs * 2);
      } catch (err) {
        if (!hasCode(err, 'BACKEND_UNAVAILABLE')) throw err;
        if (!failing) warn(`${describeFailure(err).line.replace(/^worklease: /, '')}; retrying`);
        failing = true;
        intervalMs = maxIntervalMs;
      }
      if (!full) await sleep(intervalMs, stop.signal);
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await backend.close().catch(() => {});
  }
}

function parseKinds(values: string[] | undefined): Set<ChangeKind> | null {
  if (values === undefined || values.length === 0) return null;
  const set = new Set<ChangeKind>();
  for (const v of values.flatMap((x) => x.split(',')).map((x) => x.trim())) {
    if (v === '') continue;
    if ((HEARTBEAT_KINDS as string[]).includes(v)) {
      throw new InvalidArgumentError(
        `'${v}' is not in the change feed: it carries ownership changes only (${KINDS.join(', ')}); a lease's last heartbeat and checkpoint are in 'worklease show' and the console`,
      );
    }
    if (!(KINDS as string[]).includes(v)) {
      throw new InvalidArgumentError(`unknown change kind '${v}': use one of ${KINDS.join(', ')}`);
    }
    set.add(v as ChangeKind);
  }
  return set;
}

interface Seen {
  token: bigint;
  version: bigint;
  handoffs: HandoffCounts | undefined;
}

async function seed(admin: LeaseAdmin, seen: Map<string, Seen>): Promise<void> {
  let page: string | null = null;
  do {
    const res = await admin.list({ cursor: page, limit: 10_000 });
    for (const info of res.items) {
      if (info.handoffs === undefined) return; // this backend's feed delivers every write
      seen.set(info.workId, { token: info.fencingToken, version: info.version, handoffs: info.handoffs });
    }
    page = res.nextCursor;
  } while (page !== null);
}

/** The feed may deliver a change twice; a (token, version) not above the last one seen is a repeat. */
function isNew(seen: Map<string, Seen>, change: LeaseChange): boolean {
  const last = seen.get(change.workId);
  if (
    last !== undefined &&
    (change.fencingToken < last.token ||
      (change.fencingToken === last.token && change.version <= last.version))
  ) {
    return false;
  }
  seen.set(change.workId, {
    token: change.fencingToken,
    version: change.version,
    handoffs: change.lease?.handoffs ?? last?.handoffs,
  });
  return true;
}

/**
 * The handoffs that happened before `change` but after the last version seen, which a coalescing
 * feed never delivered as changes of their own (counted from LeaseInfo.handoffs).
 */
function coalesced(before: Seen | undefined, change: LeaseChange): ChangeKind[] {
  const after = change.lease?.handoffs;
  if (after === undefined) return [];
  // Counters count since creation or the last prune: a work item not seen before (created since the
  // start) and one whose counters went down (pruned in between) start from zero.
  const prev = before?.handoffs;
  const base =
    prev !== undefined &&
    prev.acquisitions <= after.acquisitions &&
    prev.releases <= after.releases &&
    prev.forceReleases <= after.forceReleases
      ? prev
      : { acquisitions: 0, releases: 0, forceReleases: 0 };
  const out: ChangeKind[] = [];
  const add = (kind: ChangeKind, n: number) => {
    for (let i = 0; i < n - (change.kind === kind ? 1 : 0); i++) out.push(kind);
  };
  add('acquired', after.acquisitions - base.acquisitions);
  add('force-released', after.forceReleases - base.forceReleases);
  add('released', after.releases - base.releases);
  return out;
}

function renderCoalesced(workId: string, kind: ChangeKind, serverNow: number, json: boolean): string {
  const at = new Date(serverNow).toISOString();
  if (json) {
    return JSON.stringify({ at, workId, kind, holderId: null, fencingToken: null, coalesced: true });
  }
  return `${at}  ${workId}  ${kind}  holder=?  token=?  (between two reads of the feed)`;
}

function matches(change: LeaseChange, options: WatchOptions, kinds: Set<ChangeKind> | null): boolean {
  if (kinds !== null && !kinds.has(change.kind)) return false;
  if (options.prefix !== undefined && !change.workId.startsWith(options.prefix)) return false;
  if (options.holder !== undefined && change.lease?.holderId !== options.holder) return false;
  return true;
}

/** When the change happened: the lease's own timestamp for its kind, else the estimated server time now. */
function changeTime(change: LeaseChange, serverNow: number): Date {
  const lease = change.lease;
  const at =
    lease === null
      ? null
      : change.kind === 'acquired'
        ? lease.acquiredAt
        : change.kind === 'release-requested'
          ? (lease.releaseRequest?.at ?? null)
          : lease.releasedAt;
  return at ?? new Date(serverNow);
}

function render(change: LeaseChange, serverNow: number, json: boolean): string {
  const at = changeTime(change, serverNow).toISOString();
  const lease = change.lease;
  if (json) {
    return JSON.stringify({
      at,
      workId: change.workId,
      kind: change.kind,
      holderId: lease?.holderId ?? null,
      fencingToken: change.fencingToken.toString(),
      version: change.version.toString(),
      expiresAt: lease?.expiresAt.toISOString() ?? null,
      checkpointSize: lease?.checkpointSize ?? null,
    });
  }
  return `${at}  ${change.workId}  ${change.kind}  holder=${lease?.holderId ?? '-'}  token=${change.fencingToken}`;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
