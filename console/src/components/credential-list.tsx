// Owns the list-and-create page of a credential (vault tokens, registry credentials,
// certificates, service accounts): the heading and what the credential is for, the create form
// (its fields from the page; a refusal placed next to the field it names, in the page's labels,
// or above the list when it names none), what creating shows (a secret once, or a notice), the
// list's errors, the table with its empty state, and the confirmation before a delete or revoke
// (the item read afresh first where the dialog names what uses it, the API's refusal shown in
// its own words).

import { useState, type FormEvent, type ReactNode } from 'react';
import { api, ApiError } from '../api/client';
import { usePollAll } from '../hooks';
import { labelledProblems } from '../forms/labels';
import { ConfirmDialog } from './confirm';
import { SecretOnce } from './copy';
import type { EmptyProps } from './empty-state';
import { Field, FormError, toProblems, type Problems } from './form';
import { ResourceTable, type ResourceColumn } from './resource-table';
import { Allowed } from '../access';
import type { Action } from '../../../src/domain/access';

/** What columns and row actions may do on the page. */
export interface CredentialContext<T> {
  reload: () => void;
  /** Shows a message above the list (null clears it). */
  setError: (message: string | null) => void;
  /** Opens the confirmation for the item. */
  confirm: (item: T) => void;
}

export interface CredentialListProps<T extends { id: number; name: string }, D> {
  title: string;
  /** The action creating and deleting takes: a role without it sees the form and row actions disabled, with the reason. */
  manage: Action;
  intro: ReactNode;
  /** The list's route; POST creates, `<route>/<id>` reads one afresh. */
  route: string;
  /** How often the list refreshes; default 5 s. */
  pollMs?: number;
  create: {
    /** The submit button's words, e.g. "Create token". */
    label: string;
    empty: D;
    /** What stays in the form after a create (default: nothing). */
    keep?: (draft: D) => Partial<D>;
    body: (draft: D) => object;
    /** The page's label for each API field, for refusals in its words. */
    labels: Record<string, string>;
    fields: (draft: D, set: (patch: Partial<D>) => void, problems: Problems) => ReactNode;
    /** A value the API shows only in its create answer: shown once above the form. */
    secret?: (created: T) => { title: string; value: string } | null;
    /** Said under the form once created. */
    notice?: (created: T) => ReactNode;
  };
  table: {
    label: string;
    /** Names the rows' data attribute, and the create form's id: new-<rowKey>. */
    rowKey: string;
    empty: EmptyProps;
    columns: (ctx: CredentialContext<T>) => readonly ResourceColumn<T>[];
    actions: (item: T, ctx: CredentialContext<T>) => ReactNode;
  };
  confirm: {
    /** The confirm button's word: Delete, Revoke. */
    verb: string;
    title: (item: T) => string;
    body: (item: T) => ReactNode;
    /** Read the item afresh before asking (after this runs), so the dialog names what uses it now. */
    fresh?: () => void;
    run: (item: T) => Promise<unknown>;
  };
}

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export function CredentialList<T extends { id: number; name: string }, D>({ title, manage, intro, route, pollMs = 5000, create, table, confirm }: CredentialListProps<T, D>) {
  // Every page of the list (the console reads whole lists, a page at a time: api/pages.ts).
  const list = usePollAll<T>(route, pollMs);
  const [draft, setDraft] = useState<D>(create.empty);
  const [problems, setProblems] = useState<Problems>({});
  const [created, setCreated] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [pending, setPending] = useState<T | null>(null);
  const set = (patch: Partial<D>) => setDraft((d) => ({ ...d, ...patch }));

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setProblems({});
    setError(null);
    setCreated(null);
    try {
      const c = await api.post<T>(route, create.body(draft));
      setDraft((d) => ({ ...create.empty, ...create.keep?.(d) }));
      setCreated(c);
      list.reload();
    } catch (err) {
      // A duplicate name or a field out of bounds goes next to its field; a refusal naming none, above the list.
      const fields = err instanceof ApiError ? err.problems() : [];
      if (fields.length > 0) setProblems(labelledProblems(toProblems(fields), create.labels));
      else setError(messageOf(err));
    }
  };

  const ask = async (item: T) => {
    setError(null);
    if (!confirm.fresh) return setPending(item);
    try {
      confirm.fresh();
      setPending(await api.get<T>(`${route}/${item.id}`));
    } catch (err) {
      setError(messageOf(err));
      list.reload();
    }
  };

  const run = async () => {
    if (!pending) return;
    try {
      await confirm.run(pending);
      list.reload();
    } catch (err) {
      setError(messageOf(err));
    }
    setPending(null);
  };

  const ctx: CredentialContext<T> = { reload: list.reload, setError, confirm: (item) => void ask(item) };
  const secret = created && create.secret ? create.secret(created) : null;
  return (
    <section>
      <h1>{title}</h1>
      <p className="subtle">{intro}</p>
      {secret && <SecretOnce title={secret.title} value={secret.value} onDismiss={() => setCreated(null)} />}
      <form className="panel" id={`new-${table.rowKey}`} onSubmit={(e) => void submit(e)}>
        <Allowed action={manage}>
          <div className="grid2">{create.fields(draft, set, problems)}</div>
          <button className="button primary" type="submit">
            {create.label}
          </button>
        </Allowed>
      </form>
      {created && create.notice?.(created)}
      <FormError message={error ?? list.error?.message ?? null} />
      <ResourceTable label={table.label} rowKey={table.rowKey} items={list.data?.items ?? null} empty={table.empty} columns={table.columns(ctx)} actions={(item) => (
          <Allowed action={manage} inline>
            {table.actions(item, ctx)}
          </Allowed>
        )} />
      <ConfirmDialog open={pending !== null} title={pending ? confirm.title(pending) : ''} confirmLabel={confirm.verb} danger onConfirm={() => void run()} onCancel={() => setPending(null)}>
        {pending && confirm.body(pending)}
      </ConfirmDialog>
    </section>
  );
}

/** The credential's name: the field every create form starts with. */
export function NameField({ label, value, onChange, problems, hint }: { label: string; value: string; onChange: (name: string) => void; problems: Problems; hint?: string }) {
  return (
    <Field label={label} field="name" problems={problems} hint={hint}>
      {(p) => <input {...p} type="text" value={value} onChange={(e) => onChange(e.target.value)} required maxLength={64} />}
    </Field>
  );
}

/** The API's rule for the names of vault items. */
export const NAME_HINT = 'Letters, digits, dot, underscore, hyphen; at most 64 characters.';
