// Owns how the credential pages (vault tokens, certificates) show and change a credential's cap
// on X-Priority: a select of "Any class" and the three classes, in the create form and in each
// row of the list, where a change is PATCHed at once (gateways apply it within a second). Any
// signed-in account that may manage the credential may raise or lower it.

import type { Priority } from '../api/types';
import { Field, type Problems } from '../components/form';
import { PRIORITIES } from '../../../src/domain/priority';
import { usePatchInPlace } from './patch-in-place';

const NO_CAP = '';

const OPTIONS: Array<{ value: string; label: string }> = [
  { value: NO_CAP, label: 'Any class (no cap)' },
  ...PRIORITIES.map((p) => ({ value: p, label: p })),
];

/** The select's value as the API's max_priority. */
export const capFromSelect = (value: string): Priority | null => ((PRIORITIES as readonly string[]).includes(value) ? (value as Priority) : null);

export const CAP_HINT = 'The highest X-Priority class its requests get: a request asking for more is served as this class, never refused.';

/** The create form's control. */
export function PriorityCapField({ value, onChange, problems }: { value: Priority | null; onChange: (v: Priority | null) => void; problems: Problems }) {
  return (
    <Field label="Max priority" field="max_priority" problems={problems} hint={CAP_HINT}>
      {(p) => (
        <select {...p} value={value ?? NO_CAP} onChange={(e) => onChange(capFromSelect(e.target.value))}>
          {OPTIONS.map((o) => (
            <option key={o.value} value={o.value}>
              {o.label}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

/**
 * A row's cap, changed in place: PATCH `route` with the new max_priority, then `onSaved`; a
 * refusal goes to `onError` in the API's words. A revoked certificate's cap is only shown.
 */
export function PriorityCapCell({ route, name, value, readOnly, onSaved, onError }: {
  route: string;
  name: string;
  value: Priority | null | undefined;
  readOnly?: boolean;
  onSaved: () => void;
  onError: (message: string) => void;
}) {
  const { busy, patch } = usePatchInPlace(route, onSaved, onError);
  if (readOnly) return <span>{value ?? 'any'}</span>;
  const change = (next: Priority | null) => patch({ max_priority: next });
  return (
    <select aria-label={`Max priority of ${name}`} value={value ?? NO_CAP} disabled={busy} onChange={(e) => void change(capFromSelect(e.target.value))}>
      {OPTIONS.map((o) => (
        <option key={o.value} value={o.value}>
          {o.label}
        </option>
      ))}
    </select>
  );
}
