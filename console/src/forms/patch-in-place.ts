// Owns the one way a list row changes a field in place (a credential's cap, the registry a
// credential is bound to): PATCH the row's route, then `onSaved` (the list reloads); a refusal
// goes to `onError` in the API's own words; `busy` while the request is out.

import { useState } from 'react';
import { api, ApiError } from '../api/client';

export function usePatchInPlace(route: string, onSaved: () => void, onError: (message: string) => void): { busy: boolean; patch: (body: Record<string, unknown>) => Promise<void> } {
  const [busy, setBusy] = useState(false);
  const patch = async (body: Record<string, unknown>) => {
    setBusy(true);
    try {
      await api.patch(route, body);
      onSaved();
    } catch (err) {
      onError(err instanceof ApiError ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  return { busy, patch };
}
