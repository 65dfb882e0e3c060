// Owns the Service accounts page (admins only; hidden from members, and the API refuses them
// anyway): platform credentials with a role. The key is shown once at creation.

import { useState, type FormEvent } from 'react';
import { api, ApiError } from '../api/client';
import type { Items, ServiceAccount } from '../api/types';
import { usePoll } from '../hooks';
import { SecretOnce } from '../components/copy';
import { ConfirmDialog } from '../components/confirm';
import { Field, type Problems } from '../components/form';
import { focusForm } from '../components/empty-state';
import { ResourceTable } from '../components/resource-table';
import { inLabels } from '../forms/labels';

export function ServiceAccountsPage() {
  const accounts = usePoll<Items<ServiceAccount>>('/service-accounts', 10_000);
  const [name, setName] = useState('');
  const [role, setRole] = useState<'member' | 'admin'>('member');
  const [problems, setProblems] = useState<Problems>({});
  const [created, setCreated] = useState<ServiceAccount | null>(null);
  const [toDelete, setToDelete] = useState<ServiceAccount | null>(null);
  const [error, setError] = useState<string | null>(null);

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setProblems({});
    try {
      setCreated(await api.post<ServiceAccount>('/service-accounts', { name: name.trim(), role }));
      setName('');
      accounts.reload();
    } catch (err) {
      if (err instanceof ApiError) setProblems({ [err.field ?? 'name']: inLabels(err.message, { name: 'Account name', role: 'Role' }) });
    }
  };

  const remove = async () => {
    if (!toDelete) return;
    try {
      await api.del(`/service-accounts/${toDelete.id}`);
      accounts.reload();
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    }
    setToDelete(null);
  };

  return (
    <section>
      <h1>Service accounts</h1>
      <p className="subtle">Platform credentials for people and automation. Admins manage accounts; members do everything else.</p>
      {accounts.error && (
        <div className="form-error" role="alert">
          {accounts.error.message}
        </div>
      )}
      {created?.key && <SecretOnce title={`Key of ${created.name}`} value={created.key} onDismiss={() => setCreated(null)} />}
      <form className="panel" id="new-account" onSubmit={(e) => void create(e)}>
        <div className="grid2">
          <Field label="Account name" field="name" problems={problems}>
            {(p) => <input {...p} type="text" value={name} onChange={(e) => setName(e.target.value)} required maxLength={64} />}
          </Field>
          <Field label="Role" field="role" problems={problems}>
            {(p) => (
              <select {...p} value={role} onChange={(e) => setRole(e.target.value as 'member' | 'admin')}>
                <option value="member">member</option>
                <option value="admin">admin</option>
              </select>
            )}
          </Field>
        </div>
        <button className="button primary" type="submit">
          Create account
        </button>
      </form>
      {error && (
        <div className="form-error" role="alert">
          {error}
        </div>
      )}
      <ResourceTable
        label="Service accounts"
        rowKey="account"
        items={accounts.data?.items ?? null}
        empty={{
          title: 'No service accounts',
          children: 'A service account signs in to this console and the API with its key. Create one per person or script, with the role it needs.',
          action: (
            <button type="button" className="button primary" onClick={() => focusForm('new-account')}>
              Create an account
            </button>
          ),
        }}
        columns={[
          { header: 'Name', cell: (a) => a.name },
          { header: 'Role', cell: (a) => a.role },
          { header: 'Key ends with', cell: (a) => <code>{a.hint}</code> },
          { header: 'Created', cell: (a) => new Date(a.created_at).toLocaleString() },
        ]}
        actions={(a) => (
          <button type="button" className="button small" aria-label={`Delete account ${a.name}`} onClick={() => setToDelete(a)}>
            Delete
          </button>
        )}
      />
      <ConfirmDialog open={toDelete !== null} title={`Delete ${toDelete?.name ?? ''}?`} confirmLabel="Delete" danger onConfirm={() => void remove()} onCancel={() => setToDelete(null)}>
        <p>Its key stops working at once, in this console and for every script that uses it.</p>
      </ConfirmDialog>
    </section>
  );
}
