/** The words of a refused force release or release request, from the lease as read again. */
import { describe, expect, it } from 'vitest';
import { forceReleaseConflict, requestReleaseConflict } from '../../renderer/features/fleet/conflict.ts';
import type { LeaseRow } from '../../src/console/api.ts';

const base: LeaseRow = {
  workId: 'orders/1',
  holderId: 'worker-b',
  fencingToken: '20',
  expiresAt: 2_000_000,
  ttlMs: 30_000,
  stepId: null,
  acquiredAt: 1_000_000,
  renewedAt: null,
  checkpointedAt: null,
  releasedAt: null,
  checkpointSize: null,
  cleanHandoff: true,
  predecessorEnd: 'released',
  ended: null,
  version: '4',
  releaseRequest: null,
};
const ended = (how: 'released' | 'force-released', token = '20'): LeaseRow => ({
  ...base,
  fencingToken: token,
  ended: how,
  releasedAt: 1_500_000,
});

describe('force release refused (CONFLICT)', () => {
  it('a lease force-released since: says so, with the new token, and that nothing is left to do', () => {
    expect(forceReleaseConflict('12', ended('force-released', '21'))).toBe(
      'The lease was force-released since you opened this dialog: token 12 is now 21. There is nothing left to release.',
    );
  });

  it('a lease released since, by its holder or after changing hands: nothing is left to release', () => {
    for (const token of ['12', '20']) {
      expect(forceReleaseConflict('12', ended('released', token))).toBe(
        'The lease was released since you opened this dialog: there is nothing left to release.',
      );
    }
  });

  it('a lease another holder took: changed hands, review the new token', () => {
    expect(forceReleaseConflict('12', base)).toBe(
      'The lease changed hands since you opened this dialog: token 12 is now 20. Review and try again.',
    );
    // Gone, or the read after the refusal failed: the explanation stands without the new token.
    expect(forceReleaseConflict('12', null)).toBe(
      'The lease changed hands since you opened this dialog: token 12 is now different. Review and try again.',
    );
  });
});

describe('release request refused (CONFLICT)', () => {
  it('words each details.why of docs/request-release.md', () => {
    expect(requestReleaseConflict('released', '12', ended('released', '12'))).toBe(
      'The lease was released meanwhile: there is no holder to ask.',
    );
    expect(requestReleaseConflict('force-released', '12', null)).toBe(
      'The lease was force-released meanwhile: there is no holder to ask.',
    );
    expect(requestReleaseConflict('expired', '12', base)).toBe(
      'The lease ran out by the server clock: there is no holder to ask.',
    );
    expect(requestReleaseConflict('token', '12', base)).toBe(
      'The lease changed hands since you opened this dialog: token 12 is now 20. Review and try again.',
    );
  });

  it('a token moved by a force-release or a release since is said as that end, not a change of hands', () => {
    expect(requestReleaseConflict('token', '12', ended('force-released', '21'))).toBe(
      'The lease was force-released meanwhile: there is no holder to ask.',
    );
    expect(requestReleaseConflict('token', '12', ended('released', '20'))).toBe(
      'The lease was released meanwhile: there is no holder to ask.',
    );
  });
});
