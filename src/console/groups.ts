/**
 * Groups as the console shows them (issue: fleet balancing), derived from the fleet alone:
 * `joinGroup` keeps one membership lease per member on the work item
 * `group:<group>:member:<holderId>` (src/lease/group.ts), and the member takes the group's
 * items under its own holder id. So a group's members are its membership leases, and what a
 * member holds is the live leases of that holder id (other than membership leases).
 *
 * Pure, and computed against the backend's clock like every status (see status.ts), so the
 * renderer and the CLI give the same answer for the same rows.
 */
import type { LeaseRow } from './api.ts';

type Row = Pick<LeaseRow, 'workId' | 'holderId' | 'expiresAt' | 'ended'>;

export interface GroupMemberView {
  holderId: string;
  /**
   * The membership lease is live (not ended, not run out at `now`). Callers pass the time statuses
   * are judged at (status.ts `judgedAt`): a member is gone only once a heartbeat check confirmed
   * that its membership ran out, never because a renew since the last check is not in the rows.
   */
  live: boolean;
  /** When the membership lease runs out (or ran out), backend time in ms. */
  expiresAt: number;
  /** Work ids of the live leases this member holds, ascending. */
  held: string[];
}

export interface GroupView {
  group: string;
  /** Live members first, then the ones whose membership ended or ran out; each by holder id. */
  members: GroupMemberView[];
  liveMembers: number;
  /** Items the live members hold in all. */
  held: number;
  /** Each live member's fair share of `held`: ⌊held / liveMembers⌋ … ⌈held / liveMembers⌉. */
  share: { min: number; max: number } | null;
  /** Every live member holds its share (the group has settled). */
  balanced: boolean;
}

/** `group:<group>:member:<holderId>` → its parts; the first `:member:` separates them. */
export function parseMemberWorkId(workId: string): { group: string; holderId: string } | null {
  const m = /^group:(.+?):member:(.+)$/s.exec(workId);
  return m === null ? null : { group: m[1]!, holderId: m[2]! };
}

const live = (r: Row, now: number): boolean => r.ended === null && r.expiresAt > now;
const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The groups present in `rows`, by name. `now`: the backend time to judge at (ms; see status.ts `judgedAt`). */
export function summarizeGroups(rows: Iterable<Row>, now: number): GroupView[] {
  const groups = new Map<string, Map<string, GroupMemberView>>();
  const heldBy = new Map<string, string[]>();
  for (const r of rows) {
    const member = parseMemberWorkId(r.workId);
    if (member !== null) {
      let members = groups.get(member.group);
      if (members === undefined) {
        members = new Map();
        groups.set(member.group, members);
      }
      members.set(member.holderId, {
        holderId: member.holderId,
        live: live(r, now),
        expiresAt: r.expiresAt,
        held: [],
      });
    } else if (live(r, now)) {
      const list = heldBy.get(r.holderId);
      if (list === undefined) heldBy.set(r.holderId, [r.workId]);
      else list.push(r.workId);
    }
  }
  const out: GroupView[] = [];
  for (const [group, members] of groups) {
    const list = [...members.values()];
    for (const m of list) m.held = m.live ? (heldBy.get(m.holderId) ?? []).sort(byString) : [];
    list.sort((a, b) => (a.live === b.live ? byString(a.holderId, b.holderId) : a.live ? -1 : 1));
    const liveMembers = list.filter((m) => m.live);
    const held = liveMembers.reduce((n, m) => n + m.held.length, 0);
    const share =
      liveMembers.length === 0
        ? null
        : { min: Math.floor(held / liveMembers.length), max: Math.ceil(held / liveMembers.length) };
    const balanced =
      share !== null && liveMembers.every((m) => m.held.length >= share.min && m.held.length <= share.max);
    out.push({ group, members: list, liveMembers: liveMembers.length, held, share, balanced });
  }
  return out.sort((a, b) => byString(a.group, b.group));
}
