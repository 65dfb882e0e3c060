// Owns the endpoint tokens on screen right now, by deployment: while the one-time banner shows a
// token made for a new deployment, that deployment's "Call it" snippets carry the value instead
// of reading ENDPOINT_TOKEN. In memory only (never sessionStorage): dismissing the banner, or
// signing out, takes it back and the snippets return to the variable.

import { useEffect, useState } from 'react';

type Listener = () => void;
const tokens = new Map<string, string>();
const listeners = new Set<Listener>();

const keyOf = (family: string, id: number): string => `${family}/${id}`;

function notify(): void {
  for (const l of listeners) l();
}

export const shownTokens = {
  show(family: string, id: number, value: string): void {
    tokens.set(keyOf(family, id), value);
    notify();
  },
  forget(family: string, id: number): void {
    if (tokens.delete(keyOf(family, id))) notify();
  },
  get(family: string, id: number): string | null {
    return tokens.get(keyOf(family, id)) ?? null;
  },
};

/** The token of this deployment while it is being shown, else null; re-renders when that changes. */
export function useShownToken(family: string, id: number): string | null {
  const [value, setValue] = useState(() => shownTokens.get(family, id));
  useEffect(() => {
    const update = () => setValue(shownTokens.get(family, id));
    listeners.add(update);
    update();
    return () => {
      listeners.delete(update);
    };
  }, [family, id]);
  return value;
}
