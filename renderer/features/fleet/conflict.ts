/**
 * A refused lease action (CONFLICT) explained in words, for the force-release and request-release
 * dialogs. Both read the lease again after the refusal (leaseCache.ts, refreshAfterConflict) and
 * word it from that row, which the backend confirmed: a token that moved because the lease was
 * force-released or released since the dialog opened is said as such, not as a change of hands.
 * `seen` is the token the operator saw; `fresh` the lease as read again (null: gone, or the read
 * failed, and the explanation stands without it).
 */
import type { LeaseRow } from '../../../src/console/common/index.ts';

/** Both dialogs' words for a lease taken by another holder since: review it before trying again. */
function changedHands(seen: string, fresh: LeaseRow | null): string {
  return `The lease changed hands since you opened this dialog: token ${seen} is now ${fresh?.fencingToken ?? 'different'}. Review and try again.`;
}

/** Force release: nothing is left to release after an end; after a change of hands, review. */
export function forceReleaseConflict(seen: string, fresh: LeaseRow | null): string {
  if (fresh?.ended === 'force-released') {
    return `The lease was force-released since you opened this dialog: token ${seen} is now ${fresh.fencingToken}. There is nothing left to release.`;
  }
  if (fresh?.ended === 'released') {
    return 'The lease was released since you opened this dialog: there is nothing left to release.';
  }
  return changedHands(seen, fresh);
}

/**
 * Request release, in the words of docs/request-release.md by `details.why` (`token`, `released`,
 * `force-released`, `expired`); a moved token (`token`) of a lease that ended since is said as that end.
 */
export function requestReleaseConflict(why: unknown, seen: string, fresh: LeaseRow | null): string {
  const ended = fresh?.ended;
  const reason = why === 'token' && (ended === 'released' || ended === 'force-released') ? ended : why;
  switch (reason) {
    case 'released':
      return 'The lease was released meanwhile: there is no holder to ask.';
    case 'force-released':
      return 'The lease was force-released meanwhile: there is no holder to ask.';
    case 'expired':
      return 'The lease ran out by the server clock: there is no holder to ask.';
    default:
      return changedHands(seen, fresh);
  }
}
