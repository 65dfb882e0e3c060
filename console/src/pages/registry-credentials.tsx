// Owns the Registry credentials page: image registry usernames and passwords kept in the vault,
// which general deployments choose (registry_credential_id) instead of typing them. The password
// is typed once, in a password input, and never shown again: the list shows its last four
// characters. Delete names the deployments pulling with one; the API refuses while there are
// any, and its words are shown.

import { useState, type FormEvent } from 'react';
import { api, ApiError } from '../api/client';
import type { Items, RegistryCredential } from '../api/types';
import { usePoll } from '../hooks';
import { ConfirmDialog } from '../components/confirm';
import { Field, FormError, toProblems, type Problems } from '../components/form';
import { focusForm } from '../components/empty-state';
import { ResourceTable } from '../components/resource-table';
import { labelledProblems } from '../forms/labels';
import { DeploymentLinks, useDeploymentNames, useVaultDelete } from './vault';

const ROUTE = '/vault/registry-credentials';
const EMPTY = { name: '', username: '', password: '' };
const LABELS = { name: 'Credential name', username: 'Registry username', password: 'Registry password' };

export function RegistryCredentialsPage() {
  const credentials = usePoll<Items<RegistryCredential>>(ROUTE, 5000);
  const { byId, reload: reloadNames } = useDeploymentNames();
  const [draft, setDraft] = useState(EMPTY);
  const [problems, setProblems] = useState<Problems>({});
  const [created, setCreated] = useState<string | null>(null);
  const [refusal, setRefusal] = useState<string | null>(null);
  const deletion = useVaultDelete<RegistryCredential>(ROUTE, credentials.reload, reloadNames);
  const toDelete = deletion.toDelete;
  const set = (patch: Partial<typeof EMPTY>) => setDraft((d) => ({ ...d, ...patch }));

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setProblems({});
    setRefusal(null);
    setCreated(null);
    try {
      // Names and usernames are trimmed; the password is taken as typed (spaces may be part of it).
      const c = await api.post<RegistryCredential>(ROUTE, { name: draft.name.trim(), username: draft.username.trim(), password: draft.password });
      setDraft(EMPTY);
      setCreated(c.name);
      credentials.reload();
    } catch (err) {
      // A duplicate name or a field out of bounds goes next to its field; a refusal naming none, above the list.
      const list = err instanceof ApiError ? err.problems() : [];
      if (list.length > 0) setProblems(labelledProblems(toProblems(list), LABELS));
      else setRefusal(err instanceof Error ? err.message : String(err));
    }
  };

  return (
    <section>
      <h1>Registry credentials</h1>
      <p className="subtle">
        Usernames and passwords of private image registries, kept sealed in the vault. A general deployment chooses them under Container → Registry credentials instead of
        repeating them; the password is never shown again.
      </p>
      <form className="panel" id="new-registry-credential" onSubmit={(e) => void create(e)}>
        <div className="grid2">
          <Field label="Credential name" field="name" problems={problems} hint="Letters, digits, dot, underscore, hyphen; at most 64 characters.">
            {(p) => <input {...p} type="text" value={draft.name} onChange={(e) => set({ name: e.target.value })} required maxLength={64} />}
          </Field>
          <Field label="Registry username" field="username" problems={problems} hint="For example $oauthtoken for a vendor's registry.">
            {(p) => <input {...p} type="text" value={draft.username} onChange={(e) => set({ username: e.target.value })} required maxLength={256} spellCheck={false} autoComplete="off" />}
          </Field>
          <Field label="Registry password" field="password" problems={problems} hint="Or API key. Stored sealed; only its last four characters are shown.">
            {(p) => <input {...p} type="password" value={draft.password} onChange={(e) => set({ password: e.target.value })} required maxLength={8192} autoComplete="new-password" />}
          </Field>
        </div>
        <button className="button primary" type="submit">
          Create registry credential
        </button>
      </form>
      {created && (
        <p className="notice" role="status">
          Registry credential {created} created. Choose it in a general deployment's Container → Registry credentials.
        </p>
      )}
      <FormError message={refusal ?? deletion.error ?? credentials.error?.message ?? null} />
      <ResourceTable
        label="Registry credentials"
        rowKey="registry-credential"
        items={credentials.data?.items ?? null}
        empty={{
          title: 'No registry credentials yet',
          children: 'Keep a private registry’s username and password here once; general deployments then choose them under Container → Registry credentials instead of typing them.',
          action: (
            <button type="button" className="button primary" onClick={() => focusForm('new-registry-credential')}>
              Add registry credentials
            </button>
          ),
        }}
        columns={[
          { header: 'Name', cell: (c) => c.name },
          { header: 'Username', cell: (c) => <code>{c.username}</code> },
          { header: 'Password ends with', cell: (c) => <code>{c.hint}</code> },
          { header: 'Used by', cell: (c) => <DeploymentLinks ids={c.deployments} byId={byId} /> },
          { header: 'Created', cell: (c) => new Date(c.created_at).toLocaleString() },
        ]}
        actions={(c) => (
          <button type="button" className="button small" onClick={() => void deletion.ask(c)} aria-label={`Delete registry credential ${c.name}`}>
            Delete
          </button>
        )}
      />
      <ConfirmDialog open={toDelete !== null} title={`Delete registry credential ${toDelete?.name ?? ''}?`} confirmLabel="Delete" danger onConfirm={() => void deletion.remove()} onCancel={deletion.cancel}>
        {toDelete && toDelete.deployments.length > 0 ? (
          <p>
            <DeploymentLinks ids={toDelete.deployments} byId={byId} /> pull with it: the API refuses to delete it until they use other credentials (their Settings → Container → Registry credentials).
          </p>
        ) : (
          <p>No deployment pulls with it. Its password cannot be recovered.</p>
        )}
      </ConfirmDialog>
    </section>
  );
}
