// Owns form parts: a labelled field whose label is the spec's setting name, its hint, and the
// error the browser or the API gives for it, placed right below the control and tied to it
// with aria-describedby; a key/value editor (annotations; environment variables have their own,
// env-editor.tsx, for secret ones); the error summary for problems that name no field on the page.

import { useId, type ReactNode } from 'react';
import type { FieldProblem } from '../api/client';

export type Problems = Record<string, string>;

/** The problems of a field and of its children (`env` gets `env.FOO`). */
export function problemFor(problems: Problems, field: string): string | undefined {
  if (problems[field]) return problems[field];
  const child = Object.keys(problems).find((k) => k.startsWith(`${field}.`) || k.startsWith(`${field}[`));
  return child ? problems[child] : undefined;
}

export function toProblems(list: FieldProblem[]): Problems {
  const out: Problems = {};
  for (const p of list) if (!out[p.field]) out[p.field] = p.message;
  return out;
}

export interface FieldProps {
  label: string;
  field: string;
  problems: Problems;
  hint?: ReactNode;
  children: (props: { id: string; 'aria-describedby'?: string; 'aria-invalid'?: boolean; name: string }) => ReactNode;
}

export function Field({ label, field, problems, hint, children }: FieldProps) {
  const id = useId();
  const problem = problemFor(problems, field);
  const described = [hint ? `${id}-hint` : '', problem ? `${id}-error` : ''].filter(Boolean).join(' ');
  return (
    <div className={`field${problem ? ' invalid' : ''}`} data-field={field}>
      <label htmlFor={id}>{label}</label>
      {children({ id, name: field, ...(described ? { 'aria-describedby': described } : {}), ...(problem ? { 'aria-invalid': true } : {}) })}
      <HintAndProblem id={id} hint={hint} problem={problem} />
    </div>
  );
}

export function CheckField({ label, field, checked, onChange, problems, hint }: { label: string; field: string; checked: boolean; onChange: (v: boolean) => void; problems: Problems; hint?: ReactNode }) {
  const id = useId();
  const problem = problemFor(problems, field);
  return (
    <div className={`field check${problem ? ' invalid' : ''}`} data-field={field}>
      <input id={id} type="checkbox" name={field} checked={checked} onChange={(e) => onChange(e.target.checked)} aria-describedby={problem ? `${id}-error` : hint ? `${id}-hint` : undefined} />
      <label htmlFor={id}>{label}</label>
      <HintAndProblem id={id} hint={hint} problem={problem} />
    </div>
  );
}

/** What a control's aria-describedby names: its hint (`${id}-hint`) and its problem. */
function HintAndProblem({ id, hint, problem }: { id: string; hint: ReactNode; problem: string | undefined }) {
  return (
    <>
      {hint && (
        <div className="hint" id={`${id}-hint`}>
          {hint}
        </div>
      )}
      <FieldProblem id={id} problem={problem} />
    </>
  );
}

/** A field's refusal, in the API's words, announced to screen readers; `${id}-error` is what the input's aria-describedby names. */
export function FieldProblem({ id, problem }: { id: string; problem: string | undefined }) {
  if (!problem) return null;
  return (
    <div className="field-error" id={`${id}-error`} role="alert">
      {problem}
    </div>
  );
}

/** "Add <setting, singular>" under a list of rows. */
export function AddRowButton({ label, onAdd }: { label: string; onAdd: () => void }) {
  return (
    <button type="button" className="button small" onClick={onAdd}>
      Add {label.toLowerCase().replace(/s$/, '')}
    </button>
  );
}

export interface Pair {
  key: string;
  value: string;
}

export function pairsToRecord(pairs: Pair[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of pairs) if (p.key.trim() !== '') out[p.key.trim()] = p.value;
  return out;
}

export function recordToPairs(record: Record<string, string> | undefined | null): Pair[] {
  return Object.entries(record ?? {}).map(([key, value]) => ({ key, value }));
}

/** Key/value rows with add and remove; the group is labelled by the setting's name. */
export function KeyValueEditor({ label, field, pairs, onChange, problems, keyLabel = 'Name', hint }: { label: string; field: string; pairs: Pair[]; onChange: (p: Pair[]) => void; problems: Problems; keyLabel?: string; hint?: ReactNode }) {
  const id = useId();
  const problem = problemFor(problems, field);
  const set = (i: number, part: Partial<Pair>) => onChange(pairs.map((p, j) => (j === i ? { ...p, ...part } : p)));
  return (
    <fieldset className={`field kv${problem ? ' invalid' : ''}`} data-field={field} aria-describedby={problem ? `${id}-error` : undefined}>
      <legend>{label}</legend>
      {hint && <div className="hint">{hint}</div>}
      {pairs.map((p, i) => (
        <div className="kv-row" key={i}>
          <input aria-label={`${label} ${keyLabel.toLowerCase()} ${i + 1}`} placeholder={keyLabel} value={p.key} onChange={(e) => set(i, { key: e.target.value })} spellCheck={false} />
          <input aria-label={`${label} value ${i + 1}`} placeholder="Value" value={p.value} onChange={(e) => set(i, { value: e.target.value })} spellCheck={false} />
          <button type="button" className="button small ghost" aria-label={`Remove ${label} row ${i + 1}`} onClick={() => onChange(pairs.filter((_, j) => j !== i))}>
            Remove
          </button>
        </div>
      ))}
      <AddRowButton label={label} onAdd={() => onChange([...pairs, { key: '', value: '' }])} />
      <FieldProblem id={id} problem={problem} />
    </fieldset>
  );
}

/** Problems the page cannot place next to a field (or a refusal with no field at all). */
export function FormError({ message }: { message: string | null }) {
  if (!message) return null;
  return (
    <div className="form-error" role="alert">
      {message}
    </div>
  );
}
