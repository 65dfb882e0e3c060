// Owns the Service accounts page (admins only; hidden from members, and the API refuses them
// anyway): platform credentials with a role. The key is shown once at creation.

import { api } from '../api/client';
import type { ServiceAccount } from '../api/types';
import { CredentialList, NameField } from '../components/credential-list';
import { focusForm } from '../components/empty-state';
import { Field } from '../components/form';

type Role = 'member' | 'admin';
const EMPTY: { name: string; role: Role } = { name: '', role: 'member' };

export function ServiceAccountsPage() {
  return (
    <CredentialList<ServiceAccount, typeof EMPTY>
      manage="service_account.manage"
      title="Service accounts"
      intro="Platform credentials for people and automation. Admins manage accounts; members do everything else."
      route="/service-accounts"
      pollMs={10_000}
      create={{
        label: 'Create account',
        empty: EMPTY,
        // Accounts are often made in a row with the same role.
        keep: (d) => ({ role: d.role }),
        body: (d) => ({ name: d.name.trim(), role: d.role }),
        labels: { name: 'Account name', role: 'Role' },
        fields: (d, set, problems) => (
          <>
            <NameField label="Account name" value={d.name} onChange={(name) => set({ name })} problems={problems} />
            <Field label="Role" field="role" problems={problems}>
              {(p) => (
                <select {...p} value={d.role} onChange={(e) => set({ role: e.target.value === 'admin' ? 'admin' : 'member' })}>
                  <option value="member">member</option>
                  <option value="admin">admin</option>
                </select>
              )}
            </Field>
          </>
        ),
        secret: (a) => (a.key ? { title: `Key of ${a.name}`, value: a.key } : null),
      }}
      table={{
        label: 'Service accounts',
        rowKey: 'account',
        empty: {
          title: 'No service accounts',
          children: 'A service account signs in to this console and the API with its key. Create one per person or script, with the role it needs.',
          action: (
            <button type="button" className="button primary" onClick={() => focusForm('new-account')}>
              Create an account
            </button>
          ),
        },
        columns: () => [
          { header: 'Name', cell: (a) => a.name },
          { header: 'Role', cell: (a) => a.role },
          { header: 'Created', cell: (a) => new Date(a.created_at).toLocaleString() },
        ],
        actions: (a, { confirm }) => (
          <button type="button" className="button small" aria-label={`Delete account ${a.name}`} onClick={() => confirm(a)}>
            Delete
          </button>
        ),
      }}
      confirm={{
        verb: 'Delete',
        title: (a) => `Delete ${a.name}?`,
        body: () => <p>Its key stops working at once, in this console and for every script that uses it.</p>,
        run: (a) => api.del(`/service-accounts/${a.id}`),
      }}
    />
  );
}
