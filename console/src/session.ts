// Owns the signed-in state of one browser tab: the service-account key lives in
// sessionStorage (this tab only, gone when it closes; never localStorage, never a cookie),
// with the account it belongs to. Components subscribe to changes (sign-in, sign-out, a 401).

export interface Account {
  id: number;
  name: string;
  role: 'admin' | 'member';
}

const KEY = 'infergate.key';
const ACCOUNT = 'infergate.account';

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
  signOut(reason: string | null = null): void {
    sessionStorage.removeItem(KEY);
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
