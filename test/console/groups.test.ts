/** Groups as the console derives them from membership leases and what each member's holder id holds. */
import { describe, expect, it } from 'vitest';
import { parseMemberWorkId, summarizeGroups } from '../../src/console/groups.ts';
import { memberWorkId } from '../../src/lease/group.ts';

const NOW = 1_000_000;
const row = (
  workId: string,
  holderId: string,
  expiresAt = NOW + 10_000,
  ended: 'released' | null = null,
) => ({
  workId,
  holderId,
  expiresAt,
  ended,
});

describe('summarizeGroups', () => {
  it('parses the membership work ids that joinGroup writes, group names with colons included', () => {
    expect(parseMemberWorkId(memberWorkId('etl', 'w-1'))).toEqual({ group: 'etl', holderId: 'w-1' });
    expect(parseMemberWorkId(memberWorkId('a:b', 'h:1'))).toEqual({ group: 'a:b', holderId: 'h:1' });
    expect(parseMemberWorkId('job-1')).toBeNull();
    expect(parseMemberWorkId('group:x:member:')).toBeNull();
  });

  it('counts what each live member holds and says whether the group is balanced', () => {
    const rows = [
      row(memberWorkId('etl', 'a'), 'a'),
      row(memberWorkId('etl', 'b'), 'b'),
      row('p1', 'a'),
      row('p2', 'a'),
      row('p3', 'b'),
      row('p4', 'b', NOW - 1), // ran out: held by nobody
      row('p5', 'c'), // not a member of etl
    ];
    const [etl] = summarizeGroups(rows, NOW);
    expect(etl).toMatchObject({
      group: 'etl',
      liveMembers: 2,
      held: 3,
      share: { min: 1, max: 2 },
      balanced: true,
    });
    expect(etl?.members.map((m) => [m.holderId, m.live, m.held])).toEqual([
      ['a', true, ['p1', 'p2']],
      ['b', true, ['p3']],
    ]);
  });

  it('is not balanced while one member holds more than its share, and a dead member holds nothing', () => {
    const rows = [
      row(memberWorkId('g', 'a'), 'a'),
      row(memberWorkId('g', 'b'), 'b'),
      row(memberWorkId('g', 'dead'), 'dead', NOW - 5),
      row(memberWorkId('g', 'gone'), 'gone', NOW + 5, 'released'),
      ...['1', '2', '3', '4'].map((i) => row(`item-${i}`, 'a')),
      row('item-5', 'dead'), // its lease still live, its membership ran out
    ];
    const [g] = summarizeGroups(rows, NOW);
    expect(g?.liveMembers).toBe(2);
    expect(g?.share).toEqual({ min: 2, max: 2 });
    expect(g?.balanced).toBe(false);
    expect(g?.members.map((m) => [m.holderId, m.live, m.held.length])).toEqual([
      ['a', true, 4],
      ['b', true, 0],
      ['dead', false, 0],
      ['gone', false, 0],
    ]);
  });

  it('judges liveness by the clock it is given, and lists groups by name', () => {
    const rows = [row(memberWorkId('z', 'a'), 'a', NOW + 100), row(memberWorkId('m', 'a'), 'a', NOW + 100)];
    expect(summarizeGroups(rows, NOW).map((g) => [g.group, g.liveMembers])).toEqual([
      ['m', 1],
      ['z', 1],
    ]);
    expect(summarizeGroups(rows, NOW + 100).map((g) => [g.liveMembers, g.share, g.balanced])).toEqual([
      [0, null, false],
      [0, null, false],
    ]);
  });
});
