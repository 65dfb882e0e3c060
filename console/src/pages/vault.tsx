// Owns the Vault tokens page: endpoint bearer tokens. Create shows the value once with a copy
// button; delete warns with the endpoints still bound to the token (they stop accepting it).

import { useState, type FormEvent } from 'react';
import { api, ApiError } from '../api/client';
import type { Deployment, Items, VaultToken } from '../api/types';
import { usePoll } from '../hooks';
import { SecretOnce } from '../components/copy';
import { ConfirmDialog } from '../components/confirm';
import { Field, type Problems } from '../components/form';

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

export function VaultPage() {
  const tokens = usePoll<Items<VaultToken>>('/vault/tokens', 5000);
  const { byId, reload: reloadNames } = useDeploymentNames();
  const [name, setName] = useState('');
  const [problems, setProblems] = useState<Problems>({});
  const [created, setCreated] = useState<VaultToken | null>(null);
  const [toDelete, setToDelete] = useState<VaultToken | null>(null);
  const [error, setError] = useState<string | null>(null);

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setProblems({});
    try {
      const t = await api.post<VaultToken>('/vault/tokens', { name: name.trim() });
      setCreated(t);
      setName('');
      tokens.reload();
    } catch (err) {
      if (err instanceof ApiError) setProblems({ name: err.message });
    }
  };

  // The warning names the endpoints bound right now, not as of the last refresh.
  const askDelete = async (t: VaultToken) => {
    try {
      reloadNames();
      setToDelete(await api.get<VaultToken>(`/vault/tokens/${t.id}`));
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
      tokens.reload();
    }
  };

  const remove = async () => {
    if (!toDelete) return;
    try {
      await api.del(`/vault/tokens/${toDelete.id}`);
      setToDelete(null);
      tokens.reload();
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
      setToDelete(null);
    }
  };

  return (
    <section>
      <h1>Vault tokens</h1>
      <p className="subtle">Bearer tokens that protect deployed endpoints. They never sign in to this console or the API.</p>
      {created?.token && <SecretOnce title={`Token ${created.name}`} value={created.token} onDismiss={() => setCreated(null)} />}
      <form className="panel" onSubmit={(e) => void create(e)}>
        <Field label="Token name" field="name" problems={problems} hint="Letters, digits, dot, underscore, hyphen; at most 64 characters.">
          {(p) => <input {...p} type="text" value={name} onChange={(e) => setName(e.target.value)} required maxLength={64} />}
        </Field>
        <button className="button primary" type="submit">
          Create token
        </button>
      </form>
      {error && (
        <div className="form-error" role="alert">
          {error}
        </div>
      )}
      <table aria-label="Vault tokens">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Ends with</th>
            <th scope="col">Protects</th>
            <th scope="col">Created</th>
            <th scope="col">
              <span className="subtle">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {(tokens.data?.items ?? []).map((t) => (
            <tr key={t.id} data-token={t.name}>
              <td>{t.name}</td>
              <td>
                <code>{t.hint}</code>
              </td>
              <td>
                <DeploymentLinks ids={t.deployments} byId={byId} />
              </td>
              <td>{new Date(t.created_at).toLocaleString()}</td>
              <td>
                <button type="button" className="button small" onClick={() => void askDelete(t)} aria-label={`Delete token ${t.name}`}>
                  Delete
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <ConfirmDialog open={toDelete !== null} title={`Delete token ${toDelete?.name ?? ''}?`} confirmLabel="Delete" danger onConfirm={() => void remove()} onCancel={() => setToDelete(null)}>
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
