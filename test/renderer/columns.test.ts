import { describe, expect, it } from 'vitest';
import { MAX_WIDTH, MIN_WIDTH, parsePrefs } from '../../renderer/features/fleet/columns.ts';

describe('fleet column preferences read back from localStorage', () => {
  it('keeps known columns and clamps widths', () => {
    expect(
      parsePrefs(
        JSON.stringify({
          hidden: ['fencingToken', 'holderId'],
          widths: { workId: 300, expiresAt: 5, holderId: 1e9 },
        }),
      ),
    ).toEqual({
      hidden: ['fencingToken', 'holderId'],
      widths: { workId: 300, expiresAt: MIN_WIDTH, holderId: MAX_WIDTH },
    });
  });

  it('never hides Work ID or Status, and ignores what it does not know', () => {
    const p = parsePrefs(
      JSON.stringify({
        hidden: ['workId', 'status', 'bogus', 7],
        widths: { bogus: 100, status: 'wide', renewedAt: Number.NaN },
      }),
    );
    expect(p).toEqual({ hidden: [], widths: {} });
    for (const raw of [null, '', 'not json', '[]', '42', '{"hidden":"workId"}']) {
      expect(parsePrefs(raw), String(raw)).toEqual({ hidden: [], widths: {} });
    }
  });
});
