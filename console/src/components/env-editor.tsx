// Owns editing and showing a deployment's environment variables. Editing: rows of name, value
// and a Secret checkbox (a secret row's value is a password input, sent in secret_env and never
// shown again), and the secret variables the deployment already holds, known by name only:
// "secret · set" with Replace and Remove, their values never in the page. Names the API always
// keeps secret (src/domain/secret-env.ts) are secret whatever the checkbox says. Showing: plain
// names, and secret ones as "secret · set".

import { useId, type ReactNode } from 'react';
import { isAlwaysSecret } from '../../../src/domain/secret-env';
import { AddRowButton, FieldProblem, problemFor, type Pair, type Problems } from './form';

/** A variable typed in the form; `secret`: sent in secret_env, its value write-only. */
export interface EnvRow extends Pair {
  secret: boolean;
}

/** A secret variable the deployment holds (Settings): kept as it is, replaced with `value`, or removed. */
export interface StoredSecret {
  name: string;
  action: 'keep' | 'replace' | 'remove';
  value: string;
}

/** A row is secret when marked so, or when its name is one the API always keeps secret. */
export const rowIsSecret = (row: EnvRow): boolean => row.secret || isAlwaysSecret(row.key.trim());

export interface EnvChange {
  env?: EnvRow[];
  storedSecrets?: StoredSecret[];
}

/** What both families' forms say under their environment variables. */
const ENV_HINT =
  'Names use letters, digits and underscores and begin with a letter or underscore. Mark keys and passwords Secret: stored sealed, passed to the replicas, never shown again. Never put endpoint credentials here.';

export function EnvEditor({
  label,
  rows,
  stored,
  onChange,
  problems,
  hint = ENV_HINT,
}: {
  label: string;
  rows: EnvRow[];
  stored: StoredSecret[];
  onChange: (change: EnvChange) => void;
  problems: Problems;
  hint?: ReactNode;
}) {
  const id = useId();
  const problem = problemFor(problems, 'env') ?? problemFor(problems, 'secret_env');
  const setRow = (i: number, part: Partial<EnvRow>) => onChange({ env: rows.map((r, j) => (j === i ? { ...r, ...part } : r)) });
  const setStored = (name: string, part: Partial<StoredSecret>) => onChange({ storedSecrets: stored.map((s) => (s.name === name ? { ...s, ...part } : s)) });
  return (
    <fieldset className={`field kv${problem ? ' invalid' : ''}`} data-field="env" aria-describedby={problem ? `${id}-error` : undefined}>
      <legend>{label}</legend>
      {hint && <div className="hint">{hint}</div>}
      {stored.map((s) => (
        // Only the name is known: the value never leaves the API.
        <div className="kv-row stored" key={`stored:${s.name}`} data-field="secret_env" data-env={s.name}>
          <span className="env-name mono">{s.name}</span>
          {s.action === 'keep' && (
            <>
              <span className="env-state">secret · set</span>
              <button type="button" className="button small" aria-label={`Replace secret ${s.name}`} onClick={() => setStored(s.name, { action: 'replace', value: '' })}>
                Replace
              </button>
              <button type="button" className="button small ghost" aria-label={`Remove secret ${s.name}`} onClick={() => setStored(s.name, { action: 'remove', value: '' })}>
                Remove
              </button>
            </>
          )}
          {s.action === 'replace' && (
            <>
              <input
                type="password"
                aria-label={`New value of secret ${s.name}`}
                placeholder="New value"
                value={s.value}
                onChange={(e) => setStored(s.name, { value: e.target.value })}
                autoComplete="new-password"
                spellCheck={false}
              />
              <button type="button" className="button small ghost" aria-label={`Keep secret ${s.name}`} onClick={() => setStored(s.name, { action: 'keep', value: '' })}>
                Keep current value
              </button>
            </>
          )}
          {s.action === 'remove' && (
            <>
              <span className="env-state">secret · removed on save</span>
              <button type="button" className="button small ghost" aria-label={`Keep secret ${s.name}`} onClick={() => setStored(s.name, { action: 'keep', value: '' })}>
                Undo
              </button>
            </>
          )}
        </div>
      ))}
      {rows.map((row, i) => {
        const always = isAlwaysSecret(row.key.trim());
        const secret = row.secret || always;
        return (
          <div className="kv-row" key={i} data-field={secret ? 'secret_env' : 'env'}>
            <input aria-label={`${label} name ${i + 1}`} placeholder="Name" value={row.key} onChange={(e) => setRow(i, { key: e.target.value })} spellCheck={false} />
            <input
              aria-label={`${label} value ${i + 1}`}
              placeholder={secret ? 'Value (write-only)' : 'Value'}
              type={secret ? 'password' : 'text'}
              value={row.value}
              onChange={(e) => setRow(i, { value: e.target.value })}
              autoComplete={secret ? 'new-password' : 'off'}
              spellCheck={false}
            />
            <label className="inline-check" title={always ? `${row.key.trim()} is always kept secret` : 'Stored sealed and never shown again'}>
              <input type="checkbox" aria-label={`${label} secret ${i + 1}`} checked={secret} disabled={always} onChange={(e) => setRow(i, { secret: e.target.checked })} />
              Secret
            </label>
            <button type="button" className="button small ghost" aria-label={`Remove ${label} row ${i + 1}`} onClick={() => onChange({ env: rows.filter((_, j) => j !== i) })}>
              Remove
            </button>
          </div>
        );
      })}
      <AddRowButton label={label} onAdd={() => onChange({ env: [...rows, { key: '', value: '', secret: false }] })} />
      <FieldProblem id={id} problem={problem} />
    </fieldset>
  );
}

/** A deployment's variables read only: plain names, then secret ones as set (no value either way). */
export function envSummary(env: Record<string, string> | undefined, secretEnv: readonly string[] | undefined): string {
  const names = [...Object.keys(env ?? {}), ...(secretEnv ?? []).map((name) => `${name} (secret · set)`)];
  return names.join(', ') || 'none';
}
