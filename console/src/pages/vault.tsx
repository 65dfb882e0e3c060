// Owns the Vault tokens page: endpoint bearer tokens. Create (with an optional cap on the
// X-Priority class of its requests) shows the value once with a copy button; each row's cap can
// be changed in place; delete warns with the endpoints still bound to the token (they stop
// accepting it).

import { useState, type FormEvent } from 'react';
import { api, ApiError } from '../api/client';
import type { Deployment, Items, Priority, VaultToken } from '../api/types';
import { usePoll } from '../hooks';
import { SecretOnce } from '../components/copy';
import { ConfirmDialog } from '../components/confirm';
import { Field, FormError, type Problems } from '../components/form';
import { focusForm } from '../components/empty-state';
import { ResourceTable } from '../components/resource-table';
import { inLabels } from '../forms/labels';
import { PriorityCapCell, PriorityCapField } from '../forms/priority-cap';

/** Deployments by id, to name the ones a credential protects; `reload` before a warning names them. */
export function useDeploymentNames(): { byId: Map<number, Deployment>; reload: () => void } {
  const g = usePoll<Items<Deployment>>('/deployments/general', 10_000);
  const o = usePoll<Items<Deployment>>('/deployments/orchestrated', 10_000);
  const byId = new Map([...(g.data?.items ?? []), ...(o.data?.items ?? [])].map((d) => [d.id, d]));
  return { byId, reload: () => { g.reload(); o.reload(); } };
}

export function DeploymentLinks({ ids, byId }: { ids: number[]; byId: Map<number, Deployment> }) {
  if (ids.length === 0) return <span className="subtle">none</span>;
  return (
    <>
      {ids.map((id, i) => {
        const d = byId.get(id);
        return (
          <span key={id}>
            {i > 0 ? ', ' : ''}
            {d ? <a href={`#/deployments/${d.family}/${d.id}`}>{d.name}</a> : `deployment ${id}`}
          </span>
        );
      })}
    </>
  );
}

const messageOf = (err: unknown): string => (err instanceof ApiError ? err.message : String(err));

/**
 * Deleting an item of the vault (`route`/<id>) after a confirmation. `ask` reads the item afresh,
 * so the dialog names the deployments using it right now, not as of the last refresh; the
 * API's refusal (a 409 while deployments depend on it) lands in `error`, in its own words.
 */
export function useVaultDelete<T extends { id: number }>(route: string, reloadList: () => void, reloadNames: () => void) {
  const [toDelete, setToDelete] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const ask = async (item: T) => {
    setError(null);
    try {
      reloadNames();
      setToDelete(await api.get<T>(`${route}/${item.id}`));
    } catch (err) {
      setError(messageOf(err));
      reloadList();
    }
  };
  const remove = async () => {
    if (!toDelete) return;
    try {
      await api.del(`${route}/${toDelete.id}`);
      reloadList();
    } catch (err) {
      setError(messageOf(err));
    }
    setToDelete(null);
  };
  return { toDelete, error, ask, remove, cancel: () => setToDelete(null) };
}

export function VaultPage() {
  const tokens = usePoll<Items<VaultToken>>('/vault/tokens', 5000);
  const { byId, reload: reloadNames } = useDeploymentNames();
  const [name, setName] = useState('');
  const [cap, setCap] = useState<Priority | null>(null);
  const [problems, setProblems] = useState<Problems>({});
  const [created, setCreated] = useState<VaultToken | null>(null);
  const [capError, setCapError] = useState<string | null>(null);
  const deletion = useVaultDelete<VaultToken>('/vault/tokens', tokens.reload, reloadNames);
  const toDelete = deletion.toDelete;

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setProblems({});
    try {
      const t = await api.post<VaultToken>('/vault/tokens', { name: name.trim(), ...(cap ? { max_priority: cap } : {}) });
      setCreated(t);
      setName('');
      setCap(null);
      tokens.reload();
    } catch (err) {
      if (err instanceof ApiError) setProblems({ [err.field ?? 'name']: inLabels(err.message, { name: 'Token name', max_priority: 'Max priority' }) });
    }
  };

  return (
    <section>
      <h1>Vault tokens</h1>
      <p className="subtle">Bearer tokens that protect deployed endpoints. They never sign in to this console or the API.</p>
      {created?.token && <SecretOnce title={`Token ${created.name}`} value={created.token} onDismiss={() => setCreated(null)} />}
      <form className="panel" id="new-token" onSubmit={(e) => void create(e)}>
        <div className="grid2">
          <Field label="Token name" field="name" problems={problems} hint="Letters, digits, dot, underscore, hyphen; at most 64 characters.">
            {(p) => <input {...p} type="text" value={name} onChange={(e) => setName(e.target.value)} required maxLength={64} />}
          </Field>
          <PriorityCapField value={cap} onChange={setCap} problems={problems} />
        </div>
        <button className="button primary" type="submit">
          Create token
        </button>
      </form>
      <FormError message={capError ?? deletion.error ?? tokens.error?.message ?? null} />
      <ResourceTable
        label="Vault tokens"
        rowKey="token"
        items={tokens.data?.items ?? null}
        empty={{
          title: 'No vault tokens yet',
          children: 'A vault token protects an endpoint: its clients send it as a bearer token. Create one here, or let a create form make one for a new deployment.',
          action: (
            <>
              <button type="button" className="button primary" onClick={() => focusForm('new-token')}>
                Create a token
              </button>
              <a className="button" href="#/deployments/new">
                Create a deployment
              </a>
            </>
          ),
        }}
        columns={[
          { header: 'Name', cell: (t) => t.name },
          { header: 'Ends with', cell: (t) => <code>{t.hint}</code> },
          {
            header: 'Max priority',
            cell: (t) => (
              <PriorityCapCell route={`/vault/tokens/${t.id}`} name={`token ${t.name}`} value={t.max_priority} onSaved={() => { setCapError(null); tokens.reload(); }} onError={setCapError} />
            ),
          },
          { header: 'Protects', cell: (t) => <DeploymentLinks ids={t.deployments} byId={byId} /> },
          { header: 'Created', cell: (t) => new Date(t.created_at).toLocaleString() },
        ]}
        actions={(t) => (
          <button type="button" className="button small" onClick={() => void deletion.ask(t)} aria-label={`Delete token ${t.name}`}>
            Delete
          </button>
        )}
      />
      <ConfirmDialog open={toDelete !== null} title={`Delete token ${toDelete?.name ?? ''}?`} confirmLabel="Delete" danger onConfirm={() => void deletion.remove()} onCancel={deletion.cancel}>
        {toDelete && toDelete.deployments.length > 0 ? (
          <p>
            It still protects <DeploymentLinks ids={toDelete.deployments} byId={byId} />. Clients using it get 401 at once; endpoints with no other credential accept no one until you bind a new one.
          </p>
        ) : (
          <p>No endpoint uses it. It cannot be recovered.</p>
        )}
      </ConfirmDialog>
    </section>
  );
}
