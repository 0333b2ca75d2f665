/**
 * `worklease watch`: follows the backend's change feed and prints one line
 * per change as it happens. Polls adaptively: at once while changes keep
 * coming, backing off to `--max-interval` when the fleet is quiet. A gap in
 * the feed (the backend trimmed changes we had not read) is reported and the
 * watch resumes from the head. Transient backend errors are reported once and
 * retried; only the first connection failure ends the command.
 */

import { hasCode, InvalidArgumentError } from '../../lease/errors.ts';
import type { ChangeKind, LeaseChange } from '../../lease/types.ts';
import { type GlobalOptions, openCli, out, resolveUrl, warn } from '../context.ts';
import { describeFailure } from '../errors.ts';

const KINDS: ChangeKind[] = ['acquired', 'renewed', 'checkpointed', 'released', 'force-released', 'pruned'];

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
    warn(`watching ${backend.url} (Ctrl-C to stop)`);
    const seen = new Map<string, { token: bigint; version: bigint }>();
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
          if (!isNew(seen, change)) continue;
          if (!matches(change, options, kinds)) continue;
          lines.push(render(change, Date.now() + offsetMs, options.json === true));
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
    if (!(KINDS as string[]).includes(v)) {
      throw new InvalidArgumentError(`unknown change kind '${v}': use one of ${KINDS.join(', ')}`);
    }
    set.add(v as ChangeKind);
  }
  return set;
}

/** The feed may deliver a change twice; a (token, version) not above the last one seen is a repeat. */
function isNew(seen: Map<string, { token: bigint; version: bigint }>, change: LeaseChange): boolean {
  const last = seen.get(change.workId);
  if (
    last !== undefined &&
    (change.fencingToken < last.token ||
      (change.fencingToken === last.token && change.version <= last.version))
  ) {
    return false;
  }
  seen.set(change.workId, { token: change.fencingToken, version: change.version });
  return true;
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
        : change.kind === 'renewed'
          ? lease.renewedAt
          : change.kind === 'checkpointed'
            ? lease.checkpointedAt
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
  const extra =
    change.kind === 'checkpointed' && lease?.checkpointSize != null ? `  size=${lease.checkpointSize}` : '';
  return `${at}  ${change.workId}  ${change.kind}  holder=${lease?.holderId ?? '-'}  token=${change.fencingToken}${extra}`;
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
