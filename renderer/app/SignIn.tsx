import { useId, useState, useSyncExternalStore } from 'react';
import { signIn } from '../api/client.ts';
import { useServices } from './context.tsx';
import { useSession } from './hooks.ts';
import { ModalForm } from './ModalForm.tsx';

/**
 * The whole page while the console server does not know who is asking (HTTP 401): one question,
 * the access token. Nothing else is shown, since nothing else can be loaded without it.
 */
export function SignIn({ refused }: { refused: boolean }) {
  const [token, setToken] = useState('');
  const id = useId();
  return (
    <main className="sign-in">
      <form
        aria-label="Sign in"
        onSubmit={(e) => {
          e.preventDefault();
          if (token.trim() !== '') signIn(token.trim());
        }}
      >
        <h1>Sign in to the worklease console</h1>
        <p>
          Paste the access token: the part after <code>?token=</code> in the URL that{' '}
          <code>worklease serve</code> printed.
        </p>
        {refused && (
          <p className="hint" role="alert">
            The token this page had was refused.
          </p>
        )}
        <label htmlFor={id}>Access token</label>
        <input
          id={id}
          type="password"
          autoComplete="off"
          spellCheck={false}
          value={token}
          onChange={(e) => setToken(e.target.value)}
        />
        <button type="submit" className="primary" disabled={token.trim() === ''}>
          Sign in
        </button>
      </form>
    </main>
  );
}

/**
 * A `/?token=` link opened in a browser that is signed in already: the link may carry someone
 * else's token, and acting as them unknowingly is what it must not lead to. Nothing changes
 * until the person chooses; Enter and Escape keep the current session.
 */
export function SwitchSession() {
  const { client } = useServices();
  const pending = useSyncExternalStore(
    (cb) => client.onPendingSwitch(cb),
    () => client.pendingSwitch,
  );
  const titleId = useId();
  const descId = useId();
  if (pending === null) return null;
  const keep = () => client.keepSession();
  return (
    <ModalForm titleId={titleId} descId={descId} onClose={keep} onSubmit={keep}>
      <h2 id={titleId}>Sign in with the link's token?</h2>
      <p id={descId}>
        This browser is signed in as <strong>{pending.currentUser}</strong>. The link you opened carries an
        access token, which may be someone else's: what you do then is recorded under that name.
      </p>
      <div className="dialog-actions">
        <button type="submit" className="primary">
          Stay signed in as {pending.currentUser}
        </button>
        <button type="button" onClick={() => void client.switchSession()}>
          Sign in with the link's token
        </button>
      </div>
    </ModalForm>
  );
}

/** Who this page is signed in as, and the way out: this browser, or every session of this person. */
export function SessionSection() {
  const { client } = useServices();
  const session = useSession().data;
  const headId = useId();
  if (client.transport !== 'web' || session === undefined) return null;
  const own = session.via === 'token' || session.via === 'shared-token';
  return (
    <section aria-labelledby={headId}>
      <h3 id={headId}>Session</h3>
      <dl className="fields compact">
        <dt>Signed in as</dt>
        <dd>{session.user}</dd>
      </dl>
      {own && (
        <div className="dialog-actions">
          <button type="button" onClick={() => void client.signOut(false)}>
            Sign out
          </button>
          <button type="button" onClick={() => void client.signOut(true)}>
            Sign out everywhere
          </button>
        </div>
      )}
    </section>
  );
}
