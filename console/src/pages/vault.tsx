// Owns the Vault tokens page: endpoint bearer tokens. Create (with an optional cap on the
// X-Priority class of its requests) shows the value once with a copy button; each row's cap can
// be changed in place; delete warns with the endpoints still bound to the token (they stop
// accepting it).

import { api } from '../api/client';
import type { Priority, VaultToken } from '../api/types';
import { CredentialList, NameField, NAME_HINT } from '../components/credential-list';
import { DeploymentLinks, useDeploymentNames } from '../components/deployment-links';
import { focusForm } from '../components/empty-state';
import { Field } from '../components/form';
import { PriorityCapCell, PriorityCapField } from '../forms/priority-cap';

const ROUTE = '/vault/tokens';
const EMPTY: { name: string; max_priority: Priority | null } = { name: '', max_priority: null };

export function VaultPage() {
  const { byId, reload: reloadNames } = useDeploymentNames();
  return (
    <CredentialList<VaultToken, typeof EMPTY>
      manage="token.manage"
      title="Vault tokens"
      intro="Bearer tokens that protect deployed endpoints. They never sign in to this console or the API."
      route={ROUTE}
      create={{
        label: 'Create token',
        empty: EMPTY,
        body: (d) => ({ name: d.name.trim(), ...(d.max_priority ? { max_priority: d.max_priority } : {}) }),
        labels: { name: 'Token name', max_priority: 'Max priority' },
        fields: (d, set, problems) => (
          <>
            <NameField label="Token name" value={d.name} onChange={(name) => set({ name })} problems={problems} hint={NAME_HINT} />
            <PriorityCapField value={d.max_priority} onChange={(max_priority) => set({ max_priority })} problems={problems} />
          </>
        ),
        secret: (t) => (t.token ? { title: `Token ${t.name}`, value: t.token } : null),
      }}
      table={{
        label: 'Vault tokens',
        rowKey: 'token',
        empty: {
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
        },
        columns: ({ reload, setError }) => [
          { header: 'Name', cell: (t) => t.name },
          {
            header: 'Max priority',
            cell: (t) => (
              <PriorityCapCell route={`${ROUTE}/${t.id}`} name={`token ${t.name}`} value={t.max_priority} onSaved={() => { setError(null); reload(); }} onError={setError} />
            ),
          },
          { header: 'Protects', cell: (t) => <DeploymentLinks ids={t.deployments} byId={byId} /> },
          { header: 'Created', cell: (t) => new Date(t.created_at).toLocaleString() },
        ],
        actions: (t, { confirm }) => (
          <button type="button" className="button small" onClick={() => confirm(t)} aria-label={`Delete token ${t.name}`}>
            Delete
          </button>
        ),
      }}
      confirm={{
        verb: 'Delete',
        title: (t) => `Delete token ${t.name}?`,
        body: (t) =>
          t.deployments.length > 0 ? (
            <p>
              It still protects <DeploymentLinks ids={t.deployments} byId={byId} />. Clients using it get 401 at once; endpoints with no other credential accept no one until you bind a new one.
            </p>
          ) : (
            <p>No endpoint uses it. It cannot be recovered.</p>
          ),
        fresh: reloadNames,
        run: (t) => api.del(`${ROUTE}/${t.id}`),
      }}
    />
  );
}
