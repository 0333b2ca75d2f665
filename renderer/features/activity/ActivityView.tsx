/**
 * Fleet activity (acquires, takeovers, releases, force-releases) from
 * `fleet.counts` rates, as a small hand-made SVG bar chart over a chosen
 * window, plus the busiest holders. A data table under the chart carries the
 * same numbers for screen readers. Every time on the chart is a backend
 * minute the console reported, never this machine's clock.
 */
import { keepPreviousData, useQueries } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { countsQuery } from '../../api/queries.ts';
import { useServices } from '../../app/context.tsx';
import { useConnections } from '../../app/hooks.ts';
import { ErrorNotice } from '../../app/ui.tsx';
import { formatClock } from '../../lib/format.ts';
import {
  type Bin,
  binMinutes,
  binPoints,
  countTicks,
  fitWindow,
  isWindow,
  perBinLabel,
  timeTicks,
  WINDOWS,
  type WindowMinutes,
} from './axis.ts';

const SERIES = [
  { key: 'acquires', label: 'Acquires', className: 's-acquires' },
  { key: 'takeovers', label: 'Takeovers', className: 's-takeovers' },
  { key: 'releases', label: 'Releases', className: 's-releases' },
  { key: 'forceReleases', label: 'Force releases', className: 's-force' },
] as const;

const MINUTE = 60_000;
const PREF = 'worklease.activityWindow';
const TOP = 10;

function readWindowPref(): WindowMinutes | null {
  try {
    const n = Number(localStorage.getItem(PREF));
    return isWindow(n) ? n : null;
  } catch {
    return null;
  }
}

export function ActivityView() {
  const { client } = useServices();
  const connections = useConnections().data ?? [];
  const [scope, setScope] = useState('all');
  const [pref, setPref] = useState<WindowMinutes | null>(readWindowPref);
  const [fitted, setFitted] = useState<WindowMinutes | null>(null);
  const selectId = useId();
  const windowName = useId();
  const chosen = scope === 'all' ? connections : connections.filter((c) => c.id === scope);
  const minutes: WindowMinutes = pref ?? fitted ?? WINDOWS[0].minutes;
  const results = useQueries({
    queries: chosen.map((c) => ({
      ...countsQuery(client, c.id, minutes),
      placeholderData: keepPreviousData,
    })),
  });

  // The axis ends with the newest backend minute any connection reported.
  let end: number | null = null;
  let since: number | null = null;
  for (const r of results) {
    const last = r.data?.rates.at(-1)?.minute;
    if (last !== undefined) end = Math.max(end ?? 0, last + MINUTE);
    const s = r.data?.since ?? null;
    if (s !== null) since = Math.min(since ?? s, s);
  }
  const settled = results.length > 0 && results.every((r) => r.data !== undefined && !r.isPlaceholderData);
  if (pref === null && settled && end !== null) {
    const fit = fitWindow(since, end);
    if (fit !== fitted) setFitted(fit);
  }
  const choose = (w: WindowMinutes) => {
    setPref(w);
    try {
      localStorage.setItem(PREF, String(w));
    } catch {
      // Storage refused (private mode): the choice lasts for this page.
    }
  };

  const bins =
    end === null
      ? []
      : binPoints(
          results.flatMap((r) => (r.isPlaceholderData ? [] : (r.data?.rates ?? []))),
          end,
          minutes,
        );
  const holders = new Map<string, number>();
  for (const r of results)
    for (const h of r.data?.counts.byHolder ?? [])
      holders.set(h.holderId, (holders.get(h.holderId) ?? 0) + h.count);
  const topHolders = [...holders.entries()]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, TOP);
  const scopeName = scope === 'all' ? 'all connections' : (chosen[0]?.name ?? scope);
  const windowLabel = WINDOWS.find((w) => w.minutes === minutes)?.label ?? `${minutes} min`;
  const busy = bins.filter((b) => total(b) > 0);

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
        <fieldset className="segmented">
          <legend className="sr-only">Window</legend>
          {WINDOWS.map((w) => (
            <label key={w.minutes} className={minutes === w.minutes ? 'on' : ''}>
              <input
                type="radio"
                name={windowName}
                value={w.minutes}
                checked={minutes === w.minutes}
                onChange={() => choose(w.minutes)}
              />
              {w.label}
            </label>
          ))}
        </fieldset>
      </div>
      {results.map((r, i) =>
        r.error !== null ? <ErrorNotice key={chosen[i]?.id} error={r.error} title={chosen[i]?.name} /> : null,
      )}
      <section className="card" aria-labelledby={`${windowName}-events`}>
        <h3 id={`${windowName}-events`}>Lease events, last {windowLabel}</h3>
        {end === null || !settled ? (
          <p className="empty">
            {results.some((r) => r.isPending) ? 'Loading activity…' : 'No activity recorded yet.'}
          </p>
        ) : (
          <>
            <RateChart bins={bins} end={end} window={minutes} />
            <details>
              <summary>Show the numbers</summary>
              {busy.length === 0 ? (
                <p className="empty">No events in the last {windowLabel}.</p>
              ) : (
                <table className="plain">
                  <caption className="sr-only">
                    Lease events per {binMinutes(minutes) === 1 ? 'minute' : `${binMinutes(minutes)} minutes`}
                    , backend time; periods without events are left out
                  </caption>
                  <thead>
                    <tr>
                      <th scope="col">From</th>
                      {SERIES.map((s) => (
                        <th scope="col" key={s.key}>
                          {s.label}
                        </th>
                      ))}
                    </tr>
                  </thead>
                  <tbody>
                    {busy.map((b) => (
                      <tr key={b.start}>
                        <td>{formatClock(b.start)}</td>
                        {SERIES.map((s) => (
                          <td key={s.key}>{b[s.key]}</td>
                        ))}
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </details>
          </>
        )}
      </section>
      <section className="card" aria-labelledby={`${windowName}-holders`}>
        <h3 id={`${windowName}-holders`}>Busiest holders</h3>
        <p className="muted">
          Leases per holder now: each lease counts for its current holder, or its last one once released (
          {scopeName}, top {TOP}).
        </p>
        {topHolders.length === 0 ? (
          <p className="empty">No holder yet.</p>
        ) : (
          <table className="holders">
            <thead>
              <tr>
                <th scope="col">Holder</th>
                <th scope="col">
                  <span className="sr-only">Share</span>
                </th>
                <th scope="col" className="num">
                  Leases
                </th>
              </tr>
            </thead>
            <tbody>
              {topHolders.map(([h, n]) => (
                <tr key={h}>
                  <td className="mono">{h}</td>
                  <td aria-hidden="true">
                    <span className="bar" style={{ width: `${(100 * n) / (topHolders[0]?.[1] ?? 1)}%` }} />
                  </td>
                  <td className="num">{n.toLocaleString()}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </div>
  );
}

function total(b: Bin): number {
  return SERIES.reduce((n, s) => n + b[s.key], 0);
}

const W = 760;
const H = 240;
const PAD = { l: 58, r: 16, t: 12, b: 30 };

/** Stacked bars, one per bin over the whole window: the height is all activity, the colours what it was. */
function RateChart({ bins, end, window }: { bins: Bin[]; end: number; window: WindowMinutes }) {
  const start = end - window * MINUTE;
  const plotW = W - PAD.l - PAD.r;
  const plotH = H - PAD.t - PAD.b;
  const { top, ticks } = countTicks(Math.max(0, ...bins.map(total)));
  const slotW = plotW / Math.max(1, bins.length);
  const barW = Math.max(1, slotW * (bins.length > 60 ? 0.85 : 0.75));
  const x = (t: number) => PAD.l + ((t - start) / (end - start)) * plotW;
  const h = (v: number) => (v / top) * plotH;
  const base = H - PAD.b;
  const zone = -new Date(end).getTimezoneOffset() * MINUTE;
  const xTicks = timeTicks(start, end, zone).ticks;
  const unit = perBinLabel(window);
  const summary = SERIES.map((s) => `${s.label} ${bins.reduce((n, b) => n + b[s.key], 0)}`).join(', ');

  return (
    <figure className="chart">
      <svg
        viewBox={`0 0 ${W} ${H}`}
        role="img"
        aria-label={`Lease events, ${unit}, ${formatClock(start)} to ${formatClock(end)}: ${summary}`}
      >
        {ticks.map((t) => (
          <g key={t}>
            <line className="grid" x1={PAD.l} x2={W - PAD.r} y1={base - h(t)} y2={base - h(t)} />
            <text className="axis" x={PAD.l - 6} y={base - h(t) + 4} textAnchor="end">
              {t}
            </text>
          </g>
        ))}
        <text
          className="axis unit"
          transform={`translate(14 ${PAD.t + plotH / 2}) rotate(-90)`}
          textAnchor="middle"
        >
          {unit}
        </text>
        {xTicks.map((t) => {
          const tx = x(t);
          const anchor = tx < PAD.l + 16 ? 'start' : tx > W - PAD.r - 16 ? 'end' : 'middle';
          return (
            <g key={t}>
              <line className="tick" x1={tx} x2={tx} y1={base} y2={base + 4} />
              <text className="axis" x={tx} y={H - 10} textAnchor={anchor}>
                {formatClock(t)}
              </text>
            </g>
          );
        })}
        {bins.map((b) => {
          let y = base;
          const bx = x(b.start) + (slotW - barW) / 2;
          return (
            <g key={b.start}>
              {SERIES.map((s) => {
                const hh = h(b[s.key]);
                if (hh <= 0) return null;
                y -= hh;
                return <rect key={s.key} className={s.className} x={bx} y={y} width={barW} height={hh} />;
              })}
            </g>
          );
        })}
        <line className="baseline" x1={PAD.l} x2={W - PAD.r} y1={base} y2={base} />
      </svg>
      <figcaption className="legend">
        {SERIES.map((s) => (
          <span key={s.key} className={`legend-item ${s.className}`}>
            <span className="swatch" aria-hidden="true" />
            {s.label}
          </span>
        ))}
        <span className="muted">Backend time, {unit}</span>
      </figcaption>
    </figure>
  );
}
