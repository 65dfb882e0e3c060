// Owns sign-in: a service-account key (the platform credential, never an endpoint token),
// checked against GET /whoami and kept for this browser tab only; and, where the service
// signs people in through an identity provider (GET /auth/config), "Sign in with …", after
// which the session cookie the server set is found here through GET /whoami.

import { useEffect, useState, type FormEvent } from 'react';
import { ApiError } from '../api/client';
import { session, type Account } from '../session';
import { FormError } from '../components/form';

interface AuthConfig {
  enabled: boolean;
  provider_name: string | null;
  login_url: string | null;
}

/** Why the identity provider's sign-in failed, as the callback put it in the address (then removed from it). */
function callbackError(): string | null {
  const reason = new URLSearchParams(location.search).get('sign_in_error');
  if (reason !== null) history.replaceState(null, '', location.pathname + location.hash);
  return reason;
}

export function SignInPage() {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(() => callbackError() ?? session.signOutReason());
  const [busy, setBusy] = useState(false);
  const [sso, setSso] = useState<AuthConfig | null>(null);

  useEffect(() => {
    let live = true;
    void (async () => {
      const config = (await fetch('/auth/config').then((r) => (r.ok ? r.json() : null)).catch(() => null)) as AuthConfig | null;
      if (!live || !config?.enabled) return;
      setSso(config);
      // Back from the identity provider (or a reload): the session cookie, if any, signs this tab in.
      const res = await fetch('/whoami', { credentials: 'same-origin' }).catch(() => null);
      if (!live || !res?.ok) return;
      const me = (await res.json()) as Account & { csrf_token?: string };
      if (me.csrf_token) session.signInWithCookie({ id: me.id, name: me.name, role: me.role }, me.csrf_token);
    })();
    return () => {
      live = false;
    };
  }, []);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const typed = key.trim();
    try {
      // The key is checked before it is kept: whoami is called with it as the credential.
      const res = await fetch('/whoami', { headers: { authorization: `Bearer ${typed}` } });
      if (!res.ok) {
        const body = (await res.json().catch(() => ({}))) as { error?: { message?: string } };
        throw new ApiError(res.status, 'unauthenticated', body.error?.message ?? `${res.status} ${res.statusText}`, undefined, []);
      }
      const account = (await res.json()) as Account;
      session.signIn(typed, account);
      setKey('');
    } catch (err) {
      setError(err instanceof ApiError ? err.message : 'the control API does not answer; is infergate serve running?');
    } finally {
      setBusy(false);
    }
  };

  return (
    <main id="main" className="signin">
      <h1>Sign in to infergate</h1>
      {sso?.login_url ? (
        <div className="panel">
          <a className="button primary" href={sso.login_url}>
            Sign in with {sso.provider_name}
          </a>
        </div>
      ) : null}
      <p className="subtle">{sso ? 'Or use' : 'Use'} a service-account key. Endpoint tokens protect deployed endpoints and cannot sign in here.</p>
      <form className="panel" onSubmit={(e) => void submit(e)}>
        <div className="field">
          <label htmlFor="key">Service-account key</label>
          <input id="key" type="password" autoComplete="off" value={key} onChange={(e) => setKey(e.target.value)} required aria-describedby="key-hint" />
          <div className="hint" id="key-hint">
            The admin key is in <code>&lt;data-dir&gt;/admin.key</code> (by default <code>./data/admin.key</code>). It is kept for this tab only.
          </div>
        </div>
        <FormError message={error} />
        <div className="form-actions">
          <button className="button primary" type="submit" disabled={busy || key.trim() === ''}>
            Sign in
          </button>
        </div>
      </form>
    </main>
  );
}

