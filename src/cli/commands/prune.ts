/**
 * `worklease prune`: removes work items whose lease ended (released,
 * force-released or ran out) more than `--older-than` ago, with their
 * checkpoints. A dry run unless `--force`: it prints what would go and writes
 * nothing.
 *
 * What it never removes: the fencing token. The backends keep each pruned work
 * item's last token (Postgres/PGlite: a tombstone row; Redis: the bucket's
 * token counter), so a later lease on the same work id gets a larger token
 * than any holder ever saw, and a fenced-out holder stays fenced out.
 */
import { InvalidArgumentError as CommanderArgumentError } from 'commander';
import { DEFAULT_THRESHOLDS } from '../../console/api.ts';
import { leaseStatus } from '../../console/status.ts';
import { InvalidArgumentError } from '../../lease/errors.ts';
import { type GlobalOptions, out, resolveUrl, withBackend } from '../context.ts';
import { duration, leaseJson, relative, table } from '../format.ts';
import { listAll, rowTimes } from './ls.ts';

export interface PruneCommandOptions {
  olderThan: number;
  /** History retention (docs/history.md): entries older than this, ms. */
  historyOlderThan?: number;
  /** History retention: entries kept per work item. */
  historyKeep?: number;
  force?: boolean;
  prefix?: string;
  json?: boolean;
}

/** The backend's largest prune batch. */
const BATCH = 1000;

/** `7d`, `12h`, `30m`, `90s`, `500ms` → ms. */
export function parseDuration(value: string): number {
  const m = /^([0-9]{1,9})(ms|s|m|h|d)$/.exec(value);
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  if (m === null) throw new CommanderArgumentError('expected a duration such as 7d, 12h, 30m, 90s or 500ms.');
  return Number(m[1]) * unit[m[2]!]!;
}

export async function pruneCommand(
  urlArg: string | undefined,
  options: PruneCommandOptions,
  globals: GlobalOptions,
): Promise<void> {
  const url = resolveUrl(urlArg);
  const olderThanMs = options.olderThan;
  if (options.force && options.prefix !== undefined) {
    throw new InvalidArgumentError(
      '--prefix only narrows the dry run: prune --force removes every ended work item older than --older-than',
    );
  }
  await withBackend(url, globals, async (backend) => {
    const serverNow = (await backend.admin.serverTime()).getTime();
    const cutoff = serverNow - olderThanMs;
    // The same rule as admin.prune: the lease's expiry (for an ended lease, when it ended) is before
    // the cutoff, and the work item is not on hold.
    const candidates = (await listAll(backend, { workIdPrefix: options.prefix }))
      .filter((info) => info.expiresAt.getTime() < cutoff && (info.hold ?? null) === null)
      .map((info) => ({ info, status: leaseStatus(rowTimes(info), serverNow, DEFAULT_THRESHOLDS) }));
    let pruned: number | null = null;
    if (options.force) {
      pruned = 0;
      for (;;) {
        const n = await backend.admin.prune({
          olderThanMs,
          limit: BATCH,
          history: {
            ...(options.historyOlderThan === undefined ? {} : { olderThanMs: options.historyOlderThan }),
            ...(options.historyKeep === undefined ? {} : { keepPerItem: options.historyKeep }),
          },
        });
        pruned += n;
        if (n < BATCH) break;
      }
    }
    if (options.json) {
      await out(
        JSON.stringify(
          {
            dryRun: pruned === null,
            olderThanMs,
            cutoff: new Date(cutoff).toISOString(),
            candidates: candidates.map((c) => leaseJson(c.info, c.status)),
            pruned,
          },
          null,
          2,
        ),
      );
      return;
    }
    const lines: string[] = [];
    if (candidates.length > 0) {
      lines.push(
        table(
          ['WORK ID', 'STATUS', 'LAST HOLDER', 'TOKEN', 'ENDED', 'CHECKPOINT'],
          candidates.map(({ info, status }) => [
            info.workId,
            status,
            info.holderId,
            info.fencingToken.toString(),
            relative(info.releasedAt ?? info.expiresAt, serverNow),
            info.checkpointSize === null ? '-' : `${info.checkpointSize} B`,
          ]),
        ),
      );
    }
    const what = `work item${candidates.length === 1 ? '' : 's'} ended more than ${duration(olderThanMs)} ago on ${backend.url}`;
    const tokens = 'fencing tokens are kept: a new lease on a pruned work id continues above its last token';
    if (pruned === null) {
      lines.push(
        `dry run: ${candidates.length} ${what} would be pruned (with their checkpoints); ${tokens}. Nothing was changed: add --force to prune.`,
      );
    } else {
      lines.push(
        `pruned ${pruned} ${what.replace(/^work items?/, `work item${pruned === 1 ? '' : 's'}`)}; ${tokens}.`,
      );
    }
    await out(lines.join('\n'));
  });
}
