import { useId, useState } from 'react';
import { signIn } from '../api/client.ts';

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
