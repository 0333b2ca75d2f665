/**
 * `worklease request-release`: ask the holder of one lease to hand it over
 * (docs/request-release.md). The lease is marked and audited; the holder learns
 * of it at its next renew or checkpoint, saves and releases, so the next holder
 * starts with a clean handoff. Nothing is taken away: the token does not change.
 * Like `release`, it only acts on the token the operator saw (`--token`), so a
 * lease that changed hands meanwhile is refused with CONFLICT.
 */
import { InvalidArgumentError } from '../../lease/errors.ts';
import { type GlobalOptions, osUser, out, withBackend } from '../context.ts';
import { leaseJson, terminalText } from '../format.ts';
import { splitUrlAndId } from './show.ts';

export interface RequestReleaseOptions {
  token?: bigint;
  /** The name `release` uses for the same thing; either may be given. */
  expectedToken?: bigint;
  reason: string;
  operator?: string;
  json?: boolean;
}

export async function requestReleaseCommand(
  first: string,
  second: string | undefined,
  options: RequestReleaseOptions,
  globals: GlobalOptions,
): Promise<void> {
  const { url, workId } = splitUrlAndId(first, second);
  if (
    options.token !== undefined &&
    options.expectedToken !== undefined &&
    options.token !== options.expectedToken
  ) {
    throw new InvalidArgumentError('--token and --expected-token disagree: give the token you saw once');
  }
  const expectedToken = options.token ?? options.expectedToken;
  if (expectedToken === undefined) {
    throw new InvalidArgumentError(
      '--token is required: the fencing token you saw (from ls/show); a lease that changed hands is refused',
    );
  }
  const reason = options.reason.trim();
  if (reason === '') throw new InvalidArgumentError('--reason must not be empty: it goes into the audit log');
  const operator = options.operator?.trim() || osUser();
  await withBackend(url, globals, async (backend) => {
    const info = await backend.admin.requestRelease(workId, { expectedToken, operator, reason });
    const request = info.releaseRequest;
    if (options.json) {
      await out(JSON.stringify(leaseJson(info, 'live'), null, 2));
      return;
    }
    const first = request !== null && request.operator === operator && request.reason === reason;
    await out(
      terminalText(
        `requested release of ${workId} (token ${info.fencingToken}) from holder ${info.holderId}: ` +
          (first
            ? `it hands over at its next renew or checkpoint (operator ${operator}, recorded in the audit log)`
            : `already requested by ${request?.operator} at ${request?.at.toISOString()} (${request?.reason}); nothing changed`),
      ),
    );
  });
}
