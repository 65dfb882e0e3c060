// Owns the signed-in state of one browser tab: a service-account key lives in sessionStorage
// (this tab only, gone when it closes; never localStorage, never a cookie), with the account
// it belongs to; a person signed in through the identity provider has the server's HttpOnly
// session cookie instead (no script reads it), and this keeps the CSRF token GET /whoami gave
// for the calls that change something. Components subscribe to changes (sign-in, sign-out, a 401).

export interface Account {
  id: number;
  name: string;
  role: 'admin' | 'member' | 'owner' | 'developer' | 'viewer' | null;
}

const KEY = 'infergate.key';
const ACCOUNT = 'infergate.account';
const CSRF = 'infergate.csrf';

type Listener = () => void;
const listeners = new Set<Listener>();
let lastSignOutReason: string | null = null;

function notify(): void {
  for (const l of listeners) l();
}

export const session = {
  key(): string | null {
    return sessionStorage.getItem(KEY);
  },
  /** The CSRF token of a person's cookie session; null when signed in by key (or not at all). */
  csrf(): string | null {
    return sessionStorage.getItem(CSRF);
  },
  /** Whether the tab is signed in: by a key, or by a person's session cookie. */
  signedIn(): boolean {
    return this.account() !== null && (this.key() !== null || this.csrf() !== null);
  },
  account(): Account | null {
    const raw = sessionStorage.getItem(ACCOUNT);
    if (!raw) return null;
    try {
      return JSON.parse(raw) as Account;
    } catch {
      return null;
    }
  },
  signIn(key: string, account: Account): void {
    sessionStorage.setItem(KEY, key);
    sessionStorage.setItem(ACCOUNT, JSON.stringify(account));
    lastSignOutReason = null;
    notify();
  },
  /** A person's sign-in: the cookie is the server's; the tab keeps who it is and the CSRF token. */
  signInWithCookie(account: Account, csrf: string): void {
    sessionStorage.removeItem(KEY);
    sessionStorage.setItem(CSRF, csrf);
    sessionStorage.setItem(ACCOUNT, JSON.stringify(account));
    lastSignOutReason = null;
    notify();
  },
  signOut(reason: string | null = null): void {
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(CSRF);
    sessionStorage.removeItem(ACCOUNT);
    lastSignOutReason = reason;
    notify();
  },
  signOutReason(): string | null {
    return lastSignOutReason;
  },
  subscribe(listener: Listener): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};
