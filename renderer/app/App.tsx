import { type ReactNode, useEffect, useRef, useState, useSyncExternalStore } from 'react';
import { visible } from '../../src/console/common/index.ts';
import { ActivityView } from '../features/activity/ActivityView.tsx';
import { AuditView } from '../features/audit/AuditView.tsx';
import { ConnectionsView } from '../features/connections/ConnectionsView.tsx';
import { FleetView } from '../features/fleet/FleetView.tsx';
import { GroupsView } from '../features/groups/GroupsView.tsx';
import { NotificationToggle, useStuckNotifications } from '../features/notifications/StuckNotifications.tsx';
import { SettingsView } from '../features/settings/SettingsView.tsx';
import { isTypingTarget } from '../lib/keys.ts';
import { useServices } from './context.tsx';
import { useTransportState } from './freshness.ts';
import { useInfo } from './hooks.ts';
import { navigate, useRoute } from './router.ts';
import { HOME, type Route } from './routes.ts';
import { ShortcutsDialog } from './Shortcuts.tsx';
import { SignIn, SwitchSession } from './SignIn.tsx';
import { TimeModeToggle } from './Time.tsx';
import { Toasts } from './toast.tsx';
import { ErrorNotice } from './ui.tsx';

/** What a view is given to render: the current route (its connection and query) and the link state. */
export interface ViewContext {
  route: Route;
  linkUp: boolean;
}

export interface ViewDef {
  /** The path segment: `/<id>` and `/c/<connectionId>/<id>` (see app/routes.ts). */
  id: string;
  label: string;
  /** Absent for the fleet, which stays mounted (its table keeps its place) and is rendered below. */
  render?: (ctx: ViewContext) => ReactNode;
}

/**
 * Every view of the console, in the order of the top bar. A view is one line here: its id is its
 * route (`/audit`, `/c/<connectionId>/audit`), its label names it in the bar and in the page title.
 */
const VIEWS: readonly ViewDef[] = [
  { id: 'fleet', label: 'Fleet' },
  { id: 'audit', label: 'Audit log', render: ({ route }) => <AuditView route={route} /> },
  { id: 'activity', label: 'Activity', render: () => <ActivityView /> },
  { id: 'groups', label: 'Groups', render: () => <GroupsView /> },
  { id: 'connections', label: 'Connections', render: () => <ConnectionsView /> },
  { id: 'settings', label: 'Settings', render: () => <SettingsView /> },
];

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
  return (
    <>
      <Console />
      <SwitchSession />
    </>
  );
}

/** "lease job-17 · fleet · worklease": the view and the lease, for tabs, history and bookmarks. */
export function pageTitle(view: ViewDef, route: Route): string {
  const lease = view.id === 'fleet' && route.workId !== null ? `lease ${visible(route.workId)} · ` : '';
  return `${lease}${view.label.toLowerCase()} · worklease`;
}

function Console() {
  const route = useRoute();
  const view = VIEWS.find((v) => v.id === route.view) ?? (VIEWS[0] as ViewDef);
  // The fleet keeps its own route while another view shows, so coming back restores it.
  const fleetRoute = useRef<Route>(HOME);
  if (view.id === 'fleet') fleetRoute.current = route;
  const searchRef = useRef<HTMLInputElement>(null);
  const [help, setHelp] = useState(false);
  const info = useInfo();
  const transport = useTransportState();
  const notifications = useStuckNotifications();
  const linkUp = transport === 'open';
  const title = pageTitle(view, route);

  useEffect(() => {
    document.title = title;
  }, [title]);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (document.querySelector('dialog[open]') !== null) return;
      const typing = isTypingTarget(e.target);
      if (e.key === '/' && !typing) {
        e.preventDefault();
        if (view.id === 'fleet') {
          // At once: the next keys typed are the search text.
          searchRef.current?.focus();
        } else {
          navigate(fleetRoute.current);
          // After a view switch the input is shown on the next frame.
          requestAnimationFrame(() => searchRef.current?.focus());
        }
      } else if (e.key === '?' && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) {
        e.preventDefault();
        setHelp(true);
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [view.id]);

  const goTo = (v: ViewDef): Route =>
    v.id === 'fleet' ? fleetRoute.current : { view: v.id, connectionId: null, workId: null, query: {} };

  return (
    <div className="app">
      <header className="topbar">
        <h1 className="brand">worklease</h1>
        <nav aria-label="Views" className="views">
          {VIEWS.map((v) => (
            <button
              key={v.id}
              type="button"
              aria-current={view.id === v.id ? 'page' : undefined}
              onClick={() => navigate(goTo(v))}
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
          <TimeModeToggle />
          <NotificationToggle state={notifications} />
          <button type="button" aria-keyshortcuts="?" onClick={() => setHelp(true)}>
            Shortcuts <kbd>?</kbd>
          </button>
        </div>
      </header>
      {transport === 'closed' && (
        <div className="banner" role="status">
          Lost the link to the console server. Reconnecting… (data shown is as of the last update)
        </div>
      )}
      {info.error !== null && <ErrorNotice error={info.error} title="The console server refused this page" />}
      <main className="main">
        <div className="view" hidden={view.id !== 'fleet'}>
          <FleetView
            visible={view.id === 'fleet'}
            route={view.id === 'fleet' ? route : fleetRoute.current}
            searchRef={searchRef}
          />
        </div>
        {view.render?.({ route, linkUp })}
      </main>
      <Toasts />
      {help && <ShortcutsDialog onClose={() => setHelp(false)} />}
    </div>
  );
}
