// Owns the small input controls the deployment forms repeat: a labelled text, number or
// password input, a textarea and a select, each inside components/form's Field so the label is
// the setting's name (forms/labels' one word for the field, unless a control needs its own) and
// a problem shows right under it. Number inputs keep what was typed as
// text: the forms parse it when building the request, so a refusal never rewrites a value.

import type { ReactNode } from 'react';
import { Field, type Problems } from '../components/form';
import { labelFor } from './labels';

interface Common {
  /** Default: the field's label (forms/labels). */
  label?: string;
  /** The API field this control sets: problems keyed by it show here. */
  field: string;
  problems: Problems;
  hint?: ReactNode;
  disabled?: boolean;
}

export function TextInput({
  label,
  field,
  problems,
  hint,
  disabled,
  value,
  onChange,
  kind = 'text',
  placeholder,
  readOnly,
}: Common & { value: string; onChange?: (v: string) => void; kind?: 'text' | 'number' | 'password'; placeholder?: string; readOnly?: boolean }) {
  return (
    <Field label={label ?? labelFor(field)} field={field} problems={problems} hint={hint}>
      {(a) => (
        <input
          {...a}
          type={kind}
          value={value}
          onChange={(e) => onChange?.(e.target.value)}
          readOnly={readOnly || !onChange}
          disabled={disabled}
          placeholder={placeholder}
          spellCheck={false}
          autoCapitalize="off"
          // Secrets must not be offered for saving as a login; other fields get no suggestions.
          autoComplete={kind === 'password' ? 'new-password' : 'off'}
          {...(kind === 'number' ? { inputMode: 'numeric' as const, step: 1 } : {})}
        />
      )}
    </Field>
  );
}

export function TextArea({ label, field, problems, hint, value, onChange, rows = 4 }: Common & { value: string; onChange: (v: string) => void; rows?: number }) {
  return (
    <Field label={label ?? labelFor(field)} field={field} problems={problems} hint={hint}>
      {(a) => <textarea {...a} value={value} rows={rows} onChange={(e) => onChange(e.target.value)} spellCheck={false} autoCapitalize="off" />}
    </Field>
  );
}

export interface Option {
  value: string;
  label: string;
  disabled?: boolean;
}

export function Select({
  label,
  field,
  problems,
  hint,
  disabled,
  value,
  onChange,
  options,
  groups,
}: Common & { value: string; onChange: (v: string) => void; options: Option[]; groups?: Array<{ label: string; options: Option[] }> }) {
  const render = (o: Option) => (
    <option key={o.value} value={o.value} disabled={o.disabled}>
      {o.label}
    </option>
  );
  return (
    <Field label={label ?? labelFor(field)} field={field} problems={problems} hint={hint}>
      {(a) => (
        <select {...a} value={value} onChange={(e) => onChange(e.target.value)} disabled={disabled}>
          {options.map(render)}
          {groups
            ?.filter((g) => g.options.length > 0)
            .map((g) => (
              <optgroup key={g.label} label={g.label}>
                {g.options.map(render)}
              </optgroup>
            ))}
        </select>
      )}
    </Field>
  );
}
