/**
 * Settings and about: the console's version, each connection's backend kind
 * and the version its server reports (asked of the backend, `console.about`),
 * the theme (light, dark or the system's; remembered in this browser), and the
 * stuck/expiring thresholds of each connection, editable where the caller may
 * edit the connection (`connections.update`), and when a release request may be escalated to a
 * force-release (remembered in this browser).
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import type { ConnectionInfo } from '../../../src/console/common/index.ts';
import { keys } from '../../api/queries.ts';
import { useServices } from '../../app/context.tsx';
import { useConnections, useInfo, usePermissions } from '../../app/hooks.ts';
import { SessionSection } from '../../app/SignIn.tsx';
import { EnvBadge, ErrorNotice } from '../../app/ui.tsx';
import {
  DEFAULT_ESCALATE_AFTER_MS,
  MAX_ESCALATE_AFTER_MS,
  MIN_ESCALATE_AFTER_MS,
  setEscalateAfterMs,
  useEscalateAfterMs,
} from '../request-release/deadline.ts';

export type Theme = 'system' | 'light' | 'dark';
const THEME_KEY = 'worklease.theme';

export function storedTheme(): Theme {
  try {
    const t = localStorage.getItem(THEME_KEY);
    return t === 'light' || t === 'dark' ? t : 'system';
  } catch {
    return 'system';
  }
}

/** Sets `<html data-theme>` (absent: follow the system), and remembers the choice. */
export function applyTheme(theme: Theme, remember = true): void {
  if (theme === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
  if (!remember) return;
  try {
    if (theme === 'system') localStorage.removeItem(THEME_KEY);
    else localStorage.setItem(THEME_KEY, theme);
  } catch {
    // Storage refused (private mode): the choice holds for this page only.
  }
}

// The remembered theme applies from the first paint of the console, not only once this view opens.
if (typeof document !== 'undefined') applyTheme(storedTheme(), false);

export function SettingsView() {
  const info = useInfo().data;
  const connections = useConnections().data ?? [];
  const [theme, setTheme] = useState<Theme>(storedTheme);
  const themeName = useId();

  return (
    <div className="page">
      <div className="page-head">
        <h2>Settings</h2>
      </div>
      <div className="settings-grid">
        <section aria-labelledby={`${themeName}-about`}>
          <h3 id={`${themeName}-about`}>About</h3>
          <dl className="fields compact">
            <dt>Console version</dt>
            <dd className="mono">{info?.version ?? '…'}</dd>
            <dt>Console mode</dt>
            <dd>{info === undefined ? '…' : info.readOnly ? 'read-only' : 'read-write'}</dd>
          </dl>
        </section>
        <SessionSection />
        <section aria-labelledby={`${themeName}-theme`}>
          <h3 id={`${themeName}-theme`}>Theme</h3>
          <fieldset className="theme-choice">
            <legend className="sr-only">Theme</legend>
            {(['system', 'light', 'dark'] as const).map((t) => (
              <label key={t}>
                <input
                  type="radio"
                  name={themeName}
                  value={t}
                  checked={theme === t}
                  onChange={() => {
                    setTheme(t);
                    applyTheme(t);
                  }}
                />{' '}
                {t === 'system' ? 'System' : t === 'light' ? 'Light' : 'Dark'}
              </label>
            ))}
          </fieldset>
          <p className="muted">Remembered in this browser.</p>
        </section>
        <EscalationSettings />
        {connections.map((c) => (
          <ConnectionSettings key={c.id} conn={c} />
        ))}
      </div>
    </div>
  );
}

function ConnectionSettings({ conn }: { conn: ConnectionInfo }) {
  const { client } = useServices();
  const headId = useId();
  const about = useQuery({
    queryKey: [...keys.connection(conn.id), 'about', conn.state === 'live'] as const,
    queryFn: () => client.call('console.about', { connectionId: conn.id }),
    staleTime: 60_000,
  });
  const perm = usePermissions(conn.id);
  return (
    <section aria-labelledby={headId}>
      <h3 id={headId}>
        {conn.name} <EnvBadge env={conn.environment} />
      </h3>
      <dl className="fields compact">
        <dt>Backend</dt>
        <dd>{conn.kind}</dd>
        <dt>Server version</dt>
        <dd className="mono">
          {about.data?.serverVersion ?? (about.isLoading ? '…' : about.error !== null ? 'unavailable' : '')}
        </dd>
        <dt>Expiring when less than</dt>
        <dd>{formatFraction(conn.thresholds.expiringFraction)} of the ttl is left</dd>
        <dt>Stuck after</dt>
        <dd>{formatSeconds(conn.thresholds.stuckAfterMs)} without a checkpoint while renewed</dd>
      </dl>
      {about.error !== null && (
        <ErrorNotice error={about.error} title={`${conn.name}: the server version cannot be read`} />
      )}
      {perm?.edit.allowed === true ? (
        <ThresholdsForm conn={conn} />
      ) : (
        perm !== undefined &&
        !perm.edit.allowed && <p className="muted">Thresholds cannot be changed here: {perm.edit.reason}</p>
      )}
    </section>
  );
}

function ThresholdsForm({ conn }: { conn: ConnectionInfo }) {
  const { client } = useServices();
  const queryClient = useQueryClient();
  const id = useId();
  const [percent, setPercent] = useState(String(Math.round(conn.thresholds.expiringFraction * 1000) / 10));
  const [seconds, setSeconds] = useState(String(conn.thresholds.stuckAfterMs / 1000));
  const fraction = Number(percent) / 100;
  const stuckAfterMs = Math.round(Number(seconds) * 1000);
  const valid =
    percent.trim() !== '' &&
    seconds.trim() !== '' &&
    fraction > 0 &&
    fraction < 1 &&
    Number.isInteger(stuckAfterMs) &&
    stuckAfterMs > 0;
  const save = useMutation({
    mutationFn: () =>
      client.call('connections.update', {
        id: conn.id,
        changes: { thresholds: { expiringFraction: fraction, stuckAfterMs } },
      }),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: keys.connections() }),
  });
  return (
    <form
      className="thresholds-form"
      onSubmit={(e) => {
        e.preventDefault();
        if (valid) save.mutate();
      }}
    >
      <div className="field">
        <label htmlFor={`${id}-pct`}>Expiring below (% of ttl)</label>
        <input
          id={`${id}-pct`}
          type="number"
          min="0.1"
          max="99.9"
          step="0.1"
          value={percent}
          onChange={(e) => setPercent(e.target.value)}
        />
      </div>
      <div className="field">
        <label htmlFor={`${id}-stuck`}>Stuck after (s)</label>
        <input
          id={`${id}-stuck`}
          type="number"
          min="0.001"
          step="any"
          value={seconds}
          onChange={(e) => setSeconds(e.target.value)}
        />
      </div>
      <button type="submit" disabled={!valid || save.isPending}>
        Save thresholds
      </button>
      {save.isSuccess && (
        <span role="status" className="muted">
          Saved.
        </span>
      )}
      {save.error !== null && <ErrorNotice error={save.error} title="The thresholds were not saved" />}
    </form>
  );
}

function formatFraction(f: number): string {
  return `${Math.round(f * 1000) / 10} %`;
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${(ms / 1000).toLocaleString()} s` : `${(ms / 1000).toFixed(3)} s`;
}

/** The escalation deadline of release requests: one number for the console, remembered in this browser. */
function EscalationSettings() {
  const id = useId();
  const current = useEscalateAfterMs();
  const [seconds, setSeconds] = useState(String(current / 1000));
  const [saved, setSaved] = useState(false);
  const ms = Math.round(Number(seconds) * 1000);
  const valid =
    seconds.trim() !== '' &&
    Number.isInteger(ms) &&
    ms >= MIN_ESCALATE_AFTER_MS &&
    ms <= MAX_ESCALATE_AFTER_MS;
  return (
    <section aria-labelledby={`${id}-head`}>
      <h3 id={`${id}-head`}>Request release</h3>
      <p className="muted">
        After a release request has waited this long without a handoff, the lease offers to escalate to a
        force-release. Default {formatSeconds(DEFAULT_ESCALATE_AFTER_MS)}; remembered in this browser.
      </p>
      <form
        className="thresholds-form"
        onSubmit={(e) => {
          e.preventDefault();
          if (!valid) return;
          setEscalateAfterMs(ms);
          setSaved(true);
        }}
      >
        <div className="field">
          <label htmlFor={`${id}-s`}>Offer escalation after (s)</label>
          <input
            id={`${id}-s`}
            type="number"
            min={MIN_ESCALATE_AFTER_MS / 1000}
            max={MAX_ESCALATE_AFTER_MS / 1000}
            step="1"
            value={seconds}
            aria-invalid={!valid}
            onChange={(e) => {
              setSeconds(e.target.value);
              setSaved(false);
            }}
          />
        </div>
        <button type="submit" disabled={!valid}>
          Save deadline
        </button>
        {saved && (
          <span role="status" className="muted">
            Saved: {formatSeconds(current)}.
          </span>
        )}
      </form>
    </section>
  );
}
