// Owns how the Registry credentials page shows and changes the registry host a credential is
// bound to (the one host its password is sent to). Everyone sees it; an older credential bound
// to none says it is not used until an admin binds it. An admin binds or rebinds it in place
// (PATCH, admins only on the server too); a refusal goes above the list in the API's words.

import { useState, type FormEvent } from 'react';
import { usePatchInPlace } from './patch-in-place';

export const REGISTRY_HINT = 'The registry host its password is sent to, and the only one: host[:port], e.g. nvcr.io or registry.example.com:5000 (docker.io for Docker Hub). Deployments use it only for images pulled from there.';

export const UNBOUND = 'None: not used until an admin binds it';

export function RegistryHostCell({ route, name, value, admin, onSaved, onError }: {
  route: string;
  name: string;
  value: string | null;
  admin: boolean;
  onSaved: () => void;
  onError: (message: string) => void;
}) {
  const [draft, setDraft] = useState(value ?? '');
  const { busy, patch } = usePatchInPlace(route, onSaved, onError);
  if (!admin) return value === null ? <span className="subtle">{UNBOUND}</span> : <code>{value}</code>;
  const bind = (e: FormEvent) => {
    e.preventDefault();
    return patch({ registry: draft.trim() });
  };
  return (
    <form className="inline" onSubmit={(e) => void bind(e)}>
      <input
        type="text"
        aria-label={`Registry of ${name}`}
        value={draft}
        placeholder={value === null ? UNBOUND : undefined}
        onChange={(e) => setDraft(e.target.value)}
        spellCheck={false}
        autoComplete="off"
        size={24}
      />{' '}
      <button type="submit" className="button small" disabled={busy || draft.trim() === '' || draft.trim() === value} aria-label={`Bind ${name} to this registry`}>
        Bind
      </button>
    </form>
  );
}
