/**
 * Fleet activity per minute (acquires, takeovers, releases, force-releases)
 * from `fleet.counts` rates, as a small hand-made SVG line chart, plus the
 * busiest holders. A data table under the chart carries the same numbers for
 * screen readers.
 */
import { useQueries } from '@tanstack/react-query';
import { useId, useState } from 'react';
import type { RatePoint } from '../../../src/console/api.ts';
import { countsQuery } from '../../api/queries.ts';
import { useServices } from '../../app/context.tsx';
import { useConnections } from '../../app/hooks.ts';
import { ErrorNotice } from '../../app/ui.tsx';
import { formatClock } from '../../lib/format.ts';

const SERIES = [
  { key: 'acquires', label: 'Acquires', className: 's-acquires' },
  { key: 'takeovers', label: 'Takeovers', className: 's-takeovers' },
  { key: 'releases', label: 'Releases', className: 's-releases' },
  { key: 'forceReleases', label: 'Force releases', className: 's-force' },
] as const;

export function ActivityView() {
  const { client } = useServices();
  const connections = useConnections().data ?? [];
  const [scope, setScope] = useState('all');
  const selectId = useId();
  const chosen = scope === 'all' ? connections : connections.filter((c) => c.id === scope);
  const results = useQueries({ queries: chosen.map((c) => countsQuery(client, c.id)) });

  const byMinute = new Map<number, RatePoint>();
  const holders = new Map<string, number>();
  for (const r of results) {
    for (const p of r.data?.rates ?? []) {
      const acc = byMinute.get(p.minute) ?? {
        minute: p.minute,
        acquires: 0,
        takeovers: 0,
        releases: 0,
        forceReleases: 0,
      };
      acc.acquires += p.acquires;
      acc.takeovers += p.takeovers;
      acc.releases += p.releases;
      acc.forceReleases += p.forceReleases;
      byMinute.set(p.minute, acc);
    }
    for (const h of r.data?.counts.byHolder ?? [])
      holders.set(h.holderId, (holders.get(h.holderId) ?? 0) + h.count);
  }
  const points = [...byMinute.values()].sort((a, b) => a.minute - b.minute);
  const topHolders = [...holders.entries()].sort((a, b) => b[1] - a[1]).slice(0, 10);

  return (
    <div className="page">
      <div className="page-head">
        <h2>Activity</h2>
        <label htmlFor={selectId}>Connection</label>
        <select id={selectId} value={scope} onChange={(e) => setScope(e.target.value)}>
          <option value="all">All connections</option>
          {connections.map((c) => (
            <option key={c.id} value={c.id}>
              {c.name}
              {c.environment !== '' ? ` (${c.environment})` : ''}
            </option>
          ))}
        </select>
      </div>
      {results.map((r, i) =>
        r.error !== null ? <ErrorNotice key={chosen[i]?.id} error={r.error} title={chosen[i]?.name} /> : null,
      )}
      <section className="card" aria-label="Events per minute">
        <h3>Events per minute</h3>
        {points.length === 0 ? (
          <p className="empty">No activity recorded yet.</p>
        ) : (
          <>
            <RateChart points={points} />
            <details>
              <summary>Show the numbers</summary>
              <table className="plain">
                <thead>
                  <tr>
                    <th scope="col">Minute</th>
                    {SERIES.map((s) => (
                      <th scope="col" key={s.key}>
                        {s.label}
                      </th>
                    ))}
                  </tr>
                </thead>
                <tbody>
                  {points.map((p) => (
                    <tr key={p.minute}>
                      <td>{formatClock(p.minute)}</td>
                      {SERIES.map((s) => (
                        <td key={s.key}>{p[s.key]}</td>
                      ))}
                    </tr>
                  ))}
                </tbody>
              </table>
            </details>
          </>
        )}
      </section>
      <section className="card" aria-label="Busiest holders">
        <h3>Busiest holders</h3>
        {topHolders.length === 0 ? (
          <p className="empty">No holder yet.</p>
        ) : (
          <ol className="holders">
            {topHolders.map(([h, n]) => (
              <li key={h}>
                <span className="mono">{h}</span>
                <span className="bar" style={{ width: `${(100 * n) / (topHolders[0]?.[1] ?? 1)}%` }} />
                <span className="num">{n.toLocaleString()}</span>
              </li>
            ))}
          </ol>
        )}
      </section>
    </div>
  );
}

const W = 760;
const H = 220;
const PAD = { l: 44, r: 12, t: 12, b: 28 };

/** Stacked bars, one per minute: the height is all activity, the colours what it was. */
function RateChart({ points }: { points: RatePoint[] }) {
  const totals = points.map((p) => SERIES.reduce((n, s) => n + p[s.key], 0));
  const max = Math.max(1, ...totals);
  const first = points[0]?.minute ?? 0;
  const last = points[points.length - 1]?.minute ?? first;
  const slots = Math.max(1, Math.round((last - first) / 60_000) + 1);
  const slotW = (W - PAD.l - PAD.r) / slots;
  const barW = Math.max(1, slotW * 0.75);
  const x = (m: number) => PAD.l + ((m - first) / 60_000) * slotW + (slotW - barW) / 2;
  const h = (v: number) => (v / max) * (H - PAD.t - PAD.b);
  const base = H - PAD.b;
  const ticks = [0, Math.round(max / 2), max].filter((t, i, a) => a.indexOf(t) === i);
  const every = Math.max(1, Math.ceil(points.length / 6));
  const xTicks = points.filter((_, i) => i % every === 0);
  const summary = SERIES.map((s) => `${s.label} ${points.reduce((n, p) => n + p[s.key], 0)}`).join(', ');

  return (
    <figure className="chart">
      <svg
        viewBox={`0 0 ${W} ${H}`}
        role="img"
        aria-label={`Events per minute over ${points.length} minutes: ${summary}`}
      >
        {ticks.map((t) => (
          <g key={t}>
            <line className="grid" x1={PAD.l} x2={W - PAD.r} y1={base - h(t)} y2={base - h(t)} />
            <text className="axis" x={PAD.l - 6} y={base - h(t) + 4} textAnchor="end">
              {t}
            </text>
          </g>
        ))}
        {xTicks.map((p) => (
          <text key={p.minute} className="axis" x={x(p.minute) + barW / 2} y={H - 8} textAnchor="middle">
            {formatClock(p.minute)}
          </text>
        ))}
        {points.map((p) => {
          let y = base;
          return (
            <g key={p.minute}>
              {SERIES.map((s) => {
                const hh = h(p[s.key]);
                if (hh <= 0) return null;
                y -= hh;
                return (
                  <rect key={s.key} className={s.className} x={x(p.minute)} y={y} width={barW} height={hh} />
                );
              })}
            </g>
          );
        })}
      </svg>
      <figcaption className="legend">
        {SERIES.map((s) => (
          <span key={s.key} className={`legend-item ${s.className}`}>
            <span className="swatch" aria-hidden="true" />
            {s.label}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}
