/**
 * `worklease history`: a work item's ownership changes, newest first (docs/history.md), as a table
 * or `--json`; `worklease hold` / `unhold`: put a work item on hold (acquire and claim fail
 * ON_HOLD) or lift the hold, audited and in the history. Registered by {@link addHistoryCommands}.
 */
import type { Command } from 'commander';
import { leaseStatus } from '../../console/status.ts';
import { InvalidArgumentError } from '../../lease/errors.ts';
import type { HistoryEntry, LeaseInfo } from '../../lease/types.ts';
import { type GlobalOptions, osUser, out, parsePositiveInt, withBackend } from '../context.ts';
import { bytes, leaseJson, relative, table } from '../format.ts';
import { rowTimes, thresholdsFrom } from './ls.ts';
import { splitUrlAndId } from './show.ts';

export interface HistoryCommandOptions {
  limit?: number;
  before?: string;
  json?: boolean;
}

export interface HoldCommandOptions {
  reason: string;
  operator?: string;
  json?: boolean;
}

export function historyJson(e: HistoryEntry): Record<string, unknown> {
  return {
    id: e.id,
    kind: e.kind,
    at: e.at.toISOString(),
    holderId: e.holderId,
    token: e.token.toString(),
    operator: e.operator ?? null,
    reason: e.reason ?? null,
    checkpointBytes: e.checkpointBytes ?? null,
  };
}

export async function historyCommand(
  first: string,
  second: string | undefined,
  options: HistoryCommandOptions,
  globals: GlobalOptions,
): Promise<void> {
  const { url, workId } = splitUrlAndId(first, second);
  const limit = options.limit ?? 100;
  if (limit > 1000) throw new InvalidArgumentError('--limit must be at most 1000');
  await withBackend(url, globals, async (backend) => {
    const entries = await backend.admin.history(workId, {
      limit,
      ...(options.before === undefined ? {} : { before: options.before }),
    });
    if (options.json) {
      await out(JSON.stringify(entries.map(historyJson), null, 2));
      return;
    }
    const serverNow = (await backend.admin.serverTime()).getTime();
    if (entries.length === 0) {
      await out(`no history for ${workId} on ${backend.url}`);
      return;
    }
    const body = entries.map((e) => [
      e.at.toISOString(),
      relative(e.at, serverNow),
      e.kind,
      e.holderId,
      e.token.toString(),
      e.checkpointBytes === undefined ? '-' : bytes(e.checkpointBytes),
      e.operator ?? '-',
      e.reason ?? '',
    ]);
    const more = entries.length === limit ? `; older: --before ${entries.at(-1)!.id}` : '; no older entries';
    await out(
      `${table(['AT', 'WHEN', 'CHANGE', 'HOLDER', 'TOKEN', 'CHECKPOINT', 'OPERATOR', 'REASON'], body)}\n` +
        `${entries.length} entr${entries.length === 1 ? 'y' : 'ies'} for ${workId}, newest first${more}; server time ${new Date(serverNow).toISOString()}`,
    );
  });
}

export async function holdCommand(
  on: boolean,
  first: string,
  second: string | undefined,
  options: HoldCommandOptions,
  globals: GlobalOptions,
): Promise<void> {
  const { url, workId } = splitUrlAndId(first, second);
  const reason = options.reason.trim();
  if (reason === '') throw new InvalidArgumentError('--reason must not be empty: it goes into the audit log');
  const operator = options.operator?.trim() || osUser();
  await withBackend(url, globals, async (backend) => {
    const before = await backend.admin.get(workId);
    const info: LeaseInfo = on
      ? await backend.admin.hold(workId, { operator, reason })
      : await backend.admin.unhold(workId, { operator, reason });
    if (options.json) {
      const serverNow = (await backend.admin.serverTime()).getTime();
      const status = leaseStatus(rowTimes(info), serverNow, thresholdsFrom({}));
      await out(JSON.stringify(leaseJson(info, status), null, 2));
      return;
    }
    const changed = (before?.hold ?? null) === null ? on : !on;
    const text = on
      ? changed
        ? `${workId} is on hold: acquire and claim fail ON_HOLD until unhold; its lease (holder ${info.holderId}, token ${info.fencingToken}) is not fenced (operator ${operator}, recorded in the audit log)`
        : `${workId} was already on hold (by ${info.hold?.operator} at ${info.hold?.at.toISOString()}: ${info.hold?.reason}); nothing changed`
      : changed
        ? `${workId} is no longer on hold: the next acquire may take it (operator ${operator}, recorded in the audit log)`
        : `${workId} was not on hold; nothing changed`;
    await out(text);
  });
}

function holdCommandOf(program: Command, on: boolean, globalsOf: (cmd: Command) => GlobalOptions): void {
  const name = on ? 'hold' : 'unhold';
  program
    .command(name)
    .description(
      on
        ? 'put a work item on hold (quarantine a poison item): acquire and claim fail ON_HOLD; a live lease is not fenced; audited'
        : 'lift the hold on a work item: acquire works again; audited',
    )
    .usage('[options] [url] <workId> --reason <text>')
    .argument('<url-or-workId>', 'backend URL, or the work id when WORKLEASE_URL is set')
    .argument('[workId]', 'work id')
    .requiredOption('--reason <text>', 'why (recorded in the audit log and the history)')
    .option('--operator <name>', 'who (recorded in the audit log; default the OS user)')
    .option('--json', 'print the lease, with its hold, as JSON')
    .addHelpText(
      'after',
      on
        ? '\nExamples:\n  $ worklease hold $URL billing/job-17 --reason "crashes every worker (OOM)"\n  $ worklease release $URL billing/job-17 --token 41 --reason "poison"   # also stop its holder now\n'
        : '\nExamples:\n  $ worklease unhold $URL billing/job-17 --reason "fixed in 2.4.1"\n',
    )
    .action((first: string, second: string | undefined, opts: HoldCommandOptions, cmd: Command) =>
      holdCommand(on, first, second, opts, globalsOf(cmd)),
    );
}

/** Adds `history`, `hold` and `unhold` to the program. */
export function addHistoryCommands(program: Command, globalsOf: (cmd: Command) => GlobalOptions): void {
  program
    .command('history')
    .description(
      "a work item's ownership changes, newest first: acquired, released, expired, force-released, release-requested, held, unheld",
    )
    .usage('[options] [url] <workId>')
    .argument('<url-or-workId>', 'backend URL, or the work id when WORKLEASE_URL is set')
    .argument('[workId]', 'work id')
    .option('--limit <n>', 'at most this many entries, 1..1000 (default 100)', parsePositiveInt)
    .option('--before <id>', 'only entries older than this entry id (printed under a full page)')
    .option('--json', 'print the entries as JSON (tokens as strings, times ISO 8601)')
    .addHelpText(
      'after',
      '\nExamples:\n  $ worklease history $URL billing/job-17\n  $ worklease history $URL billing/job-17 --json --limit 1000\n',
    )
    .action((first: string, second: string | undefined, opts: HistoryCommandOptions, cmd: Command) =>
      historyCommand(first, second, opts, globalsOf(cmd)),
    );
  holdCommandOf(program, true, globalsOf);
  holdCommandOf(program, false, globalsOf);
}
