import { useEffect, useRef, useState, useSyncExternalStore } from 'react';
import { visible } from '../../src/console/text.ts';
import { ActivityView } from '../features/activity/ActivityView.tsx';
import { AuditView } from '../features/audit/AuditView.tsx';
import { ConnectionsView } from '../features/connections/ConnectionsView.tsx';
import { FleetView, type Selection } from '../features/fleet/FleetView.tsx';
import { GroupsView } from '../features/groups/GroupsView.tsx';
import { NotificationToggle, useStuckNotifications } from '../features/notifications/StuckNotifications.tsx';
import { useServices } from './context.tsx';
import { useTransportState } from './freshness.ts';
import { useFleets, useInfo } from './hooks.ts';
import { SignIn } from './SignIn.tsx';
import { ErrorNotice } from './ui.tsx';

const VIEWS = [
  { id: 'fleet', label: 'Fleet' },
  { id: 'audit', label: 'Audit log' },
  { id: 'activity', label: 'Activity' },
  { id: 'groups', label: 'Groups' },
  { id: 'connections', label: 'Connections' },
] as const;
type ViewId = (typeof VIEWS)[number]['id'];

function useSignInRequired(): boolean {
  const { client } = useServices();
  return useSyncExternalStore(
    (cb) => client.onSignInRequired(cb),
    () => client.signInRequired,
  );
}

export function App() {
  const signInRequired = useSignInRequired();
  const { client } = useServices();
  if (signInRequired) return <SignIn refused={client.tokenGiven} />;
  return <Console />;
}

function Console() {
  const [view, setView] = useState<ViewId>('fleet');
  const [scope, setScope] = useState('all');
  const [selection, setSelection] = useState<Selection | null>(null);
  const searchRef = useRef<HTMLInputElement>(null);
  const info = useInfo();
  const fleets = useFleets();
  const transport = useTransportState();
  const notifications = useStuckNotifications(fleets);
  const linkUp = transport === 'open';

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (document.querySelector('dialog[open]') !== null) return;
      const t = e.target as HTMLElement | null;
      const typing =
        t !== null && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT');
      if (e.key === '/' && !typing) {
        e.preventDefault();
        setView('fleet');
        // After a view switch the input mounts on the next frame.
        requestAnimationFrame(() => searchRef.current?.focus());
      } else if (e.key === 'Escape' && view === 'fleet') {
        if (typing && t === searchRef.current && searchRef.current.value !== '') return;
        setSelection(null);
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [view]);

  return (
    <div className="app">
      <header className="topbar">
        <h1 className="brand">worklease</h1>
        <nav aria-label="Views" className="views">
          {VIEWS.map((v) => (
            <button
              key={v.id}
              type="button"
              aria-current={view === v.id ? 'page' : undefined}
              onClick={() => setView(v.id)}
            >
              {v.label}
            </button>
          ))}
        </nav>
        <div className="topbar-right">
          {info.data?.readOnly === true && <span className="ro-tag">console read-only</span>}
          {info.data !== undefined && (
            <span className="muted" title="Recorded in the audit log for your actions">
              operator <span className="mono">{visible(info.data.operator)}</span>
            </span>
          )}
          <NotificationToggle state={notifications} />
        </div>
      </header>
      {transport === 'closed' && (
        <div className="banner" role="status">
          Lost the link to the console server. Reconnecting… (data shown is as of the last update)
        </div>
      )}
      {info.error !== null && <ErrorNotice error={info.error} title="The console server refused this page" />}
      <main className="main">
        <div className="view" hidden={view !== 'fleet'}>
          <FleetView
            fleets={fleets}
            visible={view === 'fleet'}
            scope={scope}
            onScope={setScope}
            selection={selection}
            onSelect={setSelection}
            searchRef={searchRef}
          />
        </div>
        {view === 'audit' && <AuditView />}
        {view === 'activity' && <ActivityView />}
        {view === 'groups' && <GroupsView />}
        {view === 'connections' && <ConnectionsView linkUp={linkUp} />}
      </main>
    </div>
  );
}
