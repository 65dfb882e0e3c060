// Owns sign-in: a service-account key (the platform credential, never an endpoint token),
// checked against GET /whoami and kept for this browser tab only.

import { useState, type FormEvent } from 'react';
import { ApiError } from '../api/client';
import { session, type Account } from '../session';
import { FormError } from '../components/form';

export function SignInPage() {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(session.signOutReason());
  const [busy, setBusy] = useState(false);

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
      <p className="subtle">Use a service-account key. Endpoint tokens protect deployed endpoints and cannot sign in here.</p>
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

