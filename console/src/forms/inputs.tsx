// Owns the small input controls the deployment forms repeat: a labelled text, number or
// password input, a textarea and a select, each inside components/form's Field so the label is
// the setting's name (forms/labels' one word for the field, unless a control needs its own) and
// a problem shows right under it. Number inputs keep what was typed as
// text: the forms parse it when building the request, so a refusal never rewrites a value.

import type { ReactNode } from 'react';
import { Field, type FieldProps, type Problems } from '../components/form';
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

/** The Field around a control: the setting's label unless the control names its own. */
function FieldOf({ c, children }: { c: Common; children: FieldProps['children'] }) {
  return (
    <Field label={c.label ?? labelFor(c.field)} field={c.field} problems={c.problems} hint={c.hint}>
      {children}
    </Field>
  );
}

export function TextInput(props: Common & { value: string; onChange?: (v: string) => void; kind?: 'text' | 'number' | 'password'; placeholder?: string; readOnly?: boolean }) {
  const { value, onChange, kind = 'text', placeholder, readOnly, disabled } = props;
  return (
    <FieldOf c={props}>
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
    </FieldOf>
  );
}

export function TextArea(props: Common & { value: string; onChange: (v: string) => void; rows?: number }) {
  const { value, onChange, rows = 4 } = props;
  return <FieldOf c={props}>{(a) => <textarea {...a} value={value} rows={rows} onChange={(e) => onChange(e.target.value)} spellCheck={false} autoCapitalize="off" />}</FieldOf>;
}

export interface Option {
  value: string;
  label: string;
  disabled?: boolean;
}

export function Select(props: Common & { value: string; onChange: (v: string) => void; options: Option[]; groups?: Array<{ label: string; options: Option[] }> }) {
  const { disabled, value, onChange, options, groups } = props;
  const render = (o: Option) => (
    <option key={o.value} value={o.value} disabled={o.disabled}>
      {o.label}
    </option>
  );
  return (
    <FieldOf c={props}>
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
    </FieldOf>
  );
}
