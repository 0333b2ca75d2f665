/**
 * `worklease release`: force-release one lease. It bumps the fencing token so
 * the current holder is fenced out, and writes an audit entry. It only acts on
 * the token the operator saw (`--expected-token`), so a lease that changed
 * hands meanwhile is refused with CONFLICT instead of fencing an innocent holder.
 */
import { InvalidArgumentError } from '../../lease/errors.ts';
import { type GlobalOptions, osUser, out, withBackend } from '../context.ts';
import { leaseJson } from '../format.ts';
import { splitUrlAndId } from './show.ts';

export interface ReleaseOptions {
  force?: boolean;
  expectedToken: bigint;
  reason: string;
  operator?: string;
  json?: boolean;
}

export async function releaseCommand(
  first: string,
  second: string | undefined,
  options: ReleaseOptions,
  globals: GlobalOptions,
): Promise<void> {
  const { url, workId } = splitUrlAndId(first, second);
  if (!options.force) {
    throw new InvalidArgumentError(
      `refusing to force-release '${workId}' without --force: it fences out the current holder (its next write fails) and is recorded in the audit log`,
    );
  }
  const reason = options.reason.trim();
  if (reason === '') throw new InvalidArgumentError('--reason must not be empty: it goes into the audit log');
  const operator = options.operator?.trim() || osUser();
  await withBackend(url, globals, async (backend) => {
    const info = await backend.admin.forceRelease(workId, {
      expectedToken: options.expectedToken,
      operator,
      reason,
    });
    if (options.json) {
      await out(
        JSON.stringify(
          {
            ...leaseJson(info, 'force-released'),
            previousToken: options.expectedToken.toString(),
            operator,
            reason,
          },
          null,
          2,
        ),
      );
      return;
    }
    await out(
      `force-released ${workId}: token ${options.expectedToken} -> ${info.fencingToken}; ` +
        `holder ${info.holderId} is fenced out (operator ${operator}, recorded in the audit log)`,
    );
  });
}
