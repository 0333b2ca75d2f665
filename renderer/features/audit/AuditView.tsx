import { useQueries } from '@tanstack/react-query';
import { useMemo } from 'react';
import type { AuditEntryWire, ConnectionInfo } from '../../../src/console/common/index.ts';
import { visible } from '../../../src/console/common/index.ts';
import { auditQuery } from '../../api/queries.ts';
import { useServices } from '../../app/context.tsx';
import { useConnections } from '../../app/hooks.ts';
import { navigate } from '../../app/router.ts';
import { type Route, withQuery } from '../../app/routes.ts';
import { Time } from '../../app/Time.tsx';
import { EnvBadge, ErrorNotice } from '../../app/ui.tsx';
import { useNow } from '../../lib/clock.ts';
import { AuditExport } from '../bulk/AuditExport.tsx';

/**
 * Every connection's operator actions, newest first; `/c/<connectionId>/audit` shows one
 * connection's, and `?q=` is the filter (so the toast after a force release links its entry).
 */
export function AuditView({ route }: { route: Route }) {
  const { client } = useServices();
  const all = useConnections().data ?? [];
  const connections = route.connectionId === null ? all : all.filter((c) => c.id === route.connectionId);
  const results = useQueries({ queries: connections.map((c) => auditQuery(client, c.id, null)) });
  const text = route.query.q ?? '';
  const localNow = useNow();
  const setText = (q: string) => navigate(withQuery(route, { q }), 'replace');

  const dataKey = results.map((r) => r.dataUpdatedAt).join(',');
  // biome-ignore lint/correctness/useExhaustiveDependencies: dataKey tracks every result's data
  const entries = useMemo(() => {
    const all: { conn: ConnectionInfo; e: AuditEntryWire }[] = [];
    results.forEach((r, i) => {
      const conn = connections[i];
      if (conn !== undefined) for (const e of r.data ?? []) all.push({ conn, e });
    });
    return all.sort((a, b) => b.e.at - a.e.at);
  }, [dataKey, connections]);
  const q = text.trim().toLowerCase();
  const shown =
    q === ''
      ? entries
      : entries.filter(({ e }) =>
          [e.workId, e.operator, e.reason, e.oldHolderId, e.batchId ?? ''].some((s) =>
            s.toLowerCase().includes(q),
          ),
        );

  return (
    <div className="page">
      <div className="page-head">
        <h2>Audit log</h2>
        <input
          type="search"
          aria-label="Filter audit log"
          placeholder="Filter by work id, operator, reason, holder, batch"
          value={text}
          onChange={(e) => setText(e.target.value)}
        />
        <AuditExport connectionIds={connections.map((c) => c.id)} search={text} />
      </div>
      {results.map((r, i) =>
        r.error !== null ? (
          <ErrorNotice
            key={connections[i]?.id}
            error={r.error}
            title={`${connections[i]?.name}: audit log unavailable`}
          />
        ) : null,
      )}
      {shown.length === 0 ? (
        <p className="empty">
          {entries.length === 0 ? 'No operator action recorded yet.' : 'No audit entry matches this filter.'}
        </p>
      ) : (
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a region that scrolls takes focus, so the keyboard can scroll it
        <section className="scroll" aria-label="Audit entries" tabIndex={0}>
          <table className="plain">
            <caption className="sr-only">Operator actions, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Connection</th>
                <th scope="col">Action</th>
                <th scope="col">Work ID</th>
                <th scope="col">Operator</th>
                <th scope="col">Reason</th>
                <th scope="col">Old holder</th>
                <th scope="col">Token</th>
              </tr>
            </thead>
            <tbody>
              {shown.map(({ conn, e }) => (
                <tr key={`${conn.id}:${e.id}`}>
                  <td className="nowrap">
                    <Time at={e.at} serverNow={localNow + conn.clockOffsetMs} compact />
                  </td>
                  <td className="nowrap">
                    {conn.name} <EnvBadge env={conn.environment} />
                  </td>
                  <td>
                    {e.action}
                    {e.batchId !== null && (
                      <div
                        className="muted mono nowrap"
                        title="Shared by the entries of one bulk force release"
                      >
                        batch {e.batchId}
                      </div>
                    )}
                  </td>
                  <td className="mono">{visible(e.workId)}</td>
                  <td className="mono">{visible(e.operator)}</td>
                  <td className="reason">{visible(e.reason, '\n')}</td>
                  <td className="mono">{visible(e.oldHolderId)}</td>
                  <td className="mono nowrap">
                    {e.oldToken} → {e.newToken}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
    </div>
  );
}
