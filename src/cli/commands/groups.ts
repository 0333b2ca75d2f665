/**
 * `worklease groups`: the consumer groups of `joinGroup` on a backend — each member, whether
 * its membership lease is live, what it holds, and whether the group is balanced. The same
 * derivation as the console's Groups view (src/console/groups.ts), by the backend's clock.
 * Read-only: membership leases are read by their `group:` prefix, then each member's
 * leases by its holder id.
 */
import type { LeaseRow } from '../../console/api.ts';
import { type GroupView, summarizeGroups } from '../../console/groups.ts';
import type { LeaseInfo } from '../../lease/types.ts';
import { type GlobalOptions, out, resolveUrl, withBackend } from '../context.ts';
import { relative, table, terminalText } from '../format.ts';
import { listAll } from './ls.ts';

export interface GroupsCommandOptions {
  group?: string;
  json?: boolean;
}

type Row = Pick<LeaseRow, 'workId' | 'holderId' | 'expiresAt' | 'ended'>;

const toRow = (i: LeaseInfo): Row => ({
  workId: i.workId,
  holderId: i.holderId,
  expiresAt: i.expiresAt.getTime(),
  ended: i.ended,
});

function groupJson(g: GroupView) {
  return {
    group: g.group,
    liveMembers: g.liveMembers,
    held: g.held,
    share: g.share,
    balanced: g.balanced,
    members: g.members.map((m) => ({
      holderId: m.holderId,
      live: m.live,
      expiresAt: new Date(m.expiresAt).toISOString(),
      held: m.held,
    })),
  };
}

function summary(g: GroupView): string {
  if (g.share === null) return `${g.group}: no live member`;
  const share = g.share.min === g.share.max ? `${g.share.min} each` : `${g.share.min}-${g.share.max} each`;
  return `${g.group}: ${g.liveMembers} live member${g.liveMembers === 1 ? '' : 's'} hold ${g.held} work item${g.held === 1 ? '' : 's'}, ${g.balanced ? `balanced (${share})` : `rebalancing (fair share ${share})`}`;
}

export async function groupsCommand(
  urlArg: string | undefined,
  options: GroupsCommandOptions,
  globals: GlobalOptions,
): Promise<void> {
  const url = resolveUrl(urlArg);
  const prefix = options.group === undefined ? 'group:' : `group:${options.group}:member:`;
  await withBackend(url, globals, async (backend) => {
    // The time first: every row listed after it is at least as new, so a member whose lease ran out
    // before it really is gone (read after the list, a renew in between would look like a departure).
    const serverNow = (await backend.admin.serverTime()).getTime();
    const members = await listAll(backend, { workIdPrefix: prefix });
    const holders = new Set(
      members.filter((m) => m.ended === null && m.expiresAt.getTime() > serverNow).map((m) => m.holderId),
    );
    const held: LeaseInfo[] = [];
    for (const holderId of holders) held.push(...(await listAll(backend, { holderId })));
    const groups = summarizeGroups([...members, ...held].map(toRow), serverNow).filter(
      (g) => options.group === undefined || g.group === options.group,
    );
    if (options.json) {
      await out(JSON.stringify(groups.map(groupJson), null, 2));
      return;
    }
    if (groups.length === 0) {
      await out(
        `no ${options.group === undefined ? 'consumer group' : `group ${terminalText(options.group)}`} on ${backend.url} (members of a joinGroup group hold leases on group:<group>:member:<holder>)`,
      );
      return;
    }
    const body = groups.flatMap((g) =>
      g.members.map((m) => [
        terminalText(g.group),
        terminalText(m.holderId),
        m.live
          ? `live, runs out ${relative(new Date(m.expiresAt), serverNow)}`
          : `gone ${relative(new Date(m.expiresAt), serverNow)}`,
        String(m.held.length),
        m.held.map((id) => terminalText(id)).join(', '),
      ]),
    );
    await out(
      `${table(['GROUP', 'MEMBER', 'MEMBERSHIP', 'HOLDS', 'WORK ITEMS'], body)}\n${groups.map((g) => terminalText(summary(g))).join('\n')}\nserver time ${new Date(serverNow).toISOString()}`,
    );
  });
}
