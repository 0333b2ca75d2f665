/**
 * Consumer groups (`joinGroup`): each group's members, what each holds, and whether the
 * group is balanced, derived from the fleet rows the page already has (src/console/groups.ts).
 * Statuses use the backend's clock; a stale connection's groups are shown as of its last
 * confirmed time and say so.
 */
import { useMemo } from 'react';
import { type GroupView, summarizeGroups, visible } from '../../../src/console/common/index.ts';
import { useFreshness } from '../../app/freshness.ts';
import { toSources, useFleets } from '../../app/hooks.ts';
import { EnvBadge } from '../../app/ui.tsx';
import { useNow } from '../../lib/clock.ts';
import { formatClockSeconds, formatDuration } from '../../lib/format.ts';
import { sourceClock, sourceNow } from '../fleet/model.ts';

/** Work ids listed per member before "+N more". */
const SHOWN_ITEMS = 6;

function balanceText(g: GroupView): string {
  if (g.share === null) return 'no live member';
  const share = g.share.min === g.share.max ? `${g.share.min} each` : `${g.share.min}–${g.share.max} each`;
  return g.balanced ? `balanced: ${share}` : `rebalancing: the fair share is ${share}`;
}

export function GroupsView() {
  const fleets = useFleets();
  const localNow = useNow();
  const connections = useMemo(() => fleets.map((f) => f.connection), [fleets]);
  const freshness = useFreshness(connections);
  const sources = toSources(fleets, freshness);
  const byConnection = sources.map((s) => {
    // Members are live or gone as of the last heartbeat check (a renew since may not be in the rows).
    const judged = sourceNow(s, localNow);
    const now = sourceClock(s, localNow);
    return { source: s, now, groups: summarizeGroups(s.data.rows.values(), judged) };
  });
  const total = byConnection.reduce((n, c) => n + c.groups.length, 0);

  return (
    <div className="page">
      <div className="page-head">
        <h2>Groups</h2>
        <span className="muted">
          {total} {total === 1 ? 'group' : 'groups'}
        </span>
      </div>
      {total === 0 && (
        <p className="empty">
          No consumer group in these fleets. Members of a group started with <code>joinGroup</code> hold a
          membership lease on <code>group:&lt;group&gt;:member:&lt;holder&gt;</code>; they appear here.
        </p>
      )}
      {byConnection.map(({ source, now, groups }) => {
        const conn = fleets.find((f) => f.connection.id === source.connectionId)?.connection;
        const f = freshness.get(source.connectionId);
        return groups.map((g) => (
          <section
            key={`${source.connectionId}:${g.group}`}
            className="card group-card"
            aria-label={`Group ${visible(g.group)} on ${conn?.name ?? source.connectionId}`}
          >
            <h3>
              {visible(g.group)}{' '}
              <span className="muted">
                · {conn?.name} <EnvBadge env={conn?.environment ?? ''} />
              </span>
            </h3>
            {f?.stale === true && (
              <p className="stale-note" role="status">
                As of {f.asOf === null ? 'never' : formatClockSeconds(f.asOf)} — {f.reason}
              </p>
            )}
            <p className={g.balanced ? 'group-balance ok' : 'group-balance'}>
              {g.liveMembers} live {g.liveMembers === 1 ? 'member' : 'members'} hold {g.held} work{' '}
              {g.held === 1 ? 'item' : 'items'} · {balanceText(g)}
            </p>
            <table className="plain">
              <caption className="sr-only">
                Members of group {visible(g.group)} and the work items each holds
              </caption>
              <thead>
                <tr>
                  <th scope="col">Member (holder)</th>
                  <th scope="col">Membership</th>
                  <th scope="col">Holds</th>
                  <th scope="col">Work items</th>
                </tr>
              </thead>
              <tbody>
                {g.members.map((m) => {
                  const off =
                    g.share !== null &&
                    m.live &&
                    (m.held.length < g.share.min || m.held.length > g.share.max);
                  return (
                    <tr key={m.holderId} className={m.live ? undefined : 'muted'}>
                      <td className="mono">{visible(m.holderId)}</td>
                      <td className="nowrap">
                        {m.live
                          ? m.expiresAt > now
                            ? `live · runs out in ${formatDuration(m.expiresAt - now)}`
                            : 'live · due, awaiting heartbeat check'
                          : `gone · ${formatDuration(now - m.expiresAt)} ago`}
                      </td>
                      <td className={off ? 'nowrap group-off' : 'nowrap'}>
                        {m.held.length}
                        {off && g.share !== null ? ` (share ${g.share.min}–${g.share.max})` : ''}
                      </td>
                      <td className="mono group-items">
                        {m.held
                          .slice(0, SHOWN_ITEMS)
                          .map((id) => visible(id))
                          .join(', ')}
                        {m.held.length > SHOWN_ITEMS ? ` +${m.held.length - SHOWN_ITEMS} more` : ''}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </section>
        ));
      })}
    </div>
  );
}
