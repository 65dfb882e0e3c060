// Owns the Registry credentials page: image registry usernames and passwords kept in the vault,
// each bound to the one registry host its password is sent to, which general deployments choose
// (registry_credential_id) for images pulled from that host instead of typing them. The
// password is typed once, in a password input, and never shown again, nor any part of it: a
// credential is told by its name, username, registry and creation time. An admin binds an
// older credential (or rebinds one) in its row. Delete names the deployments pulling with one;
// the API refuses while there are any, and its words are shown.

import { api } from '../api/client';
import type { RegistryCredential } from '../api/types';
import { CredentialList, NameField, NAME_HINT } from '../components/credential-list';
import { DeploymentLinks, useDeploymentNames } from '../components/deployment-links';
import { focusForm } from '../components/empty-state';
import { Field } from '../components/form';
import { REGISTRY_HINT, RegistryHostCell } from '../forms/registry-host';
import { session } from '../session';

const ROUTE = '/vault/registry-credentials';
const EMPTY = { name: '', username: '', password: '', registry: '' };

export function RegistryCredentialsPage() {
  const { byId, reload: reloadNames } = useDeploymentNames();
  const admin = session.account()?.role === 'admin';
  return (
    <CredentialList<RegistryCredential, typeof EMPTY>
      manage="registry_credential.manage"
      title="Registry credentials"
      intro={
        <>
          Usernames and passwords of private image registries, kept sealed in the vault. A general deployment chooses them under Container → Registry credentials instead of
          repeating them; the password is never shown again.
        </>
      }
      route={ROUTE}
      create={{
        label: 'Create registry credential',
        empty: EMPTY,
        // Names and usernames are trimmed; the password is taken as typed (spaces may be part of it).
        body: (d) => ({ name: d.name.trim(), username: d.username.trim(), password: d.password, registry: d.registry.trim() }),
        labels: { name: 'Credential name', username: 'Registry username', password: 'Registry password', registry: 'Registry' },
        fields: (d, set, problems) => (
          <>
            <NameField label="Credential name" value={d.name} onChange={(name) => set({ name })} problems={problems} hint={NAME_HINT} />
            <Field label="Registry username" field="username" problems={problems} hint="For example $oauthtoken for a vendor's registry.">
              {(p) => <input {...p} type="text" value={d.username} onChange={(e) => set({ username: e.target.value })} required maxLength={256} spellCheck={false} autoComplete="off" />}
            </Field>
            <Field label="Registry password" field="password" problems={problems} hint="Or API key. Stored sealed and never shown again, nor any part of it.">
              {(p) => <input {...p} type="password" value={d.password} onChange={(e) => set({ password: e.target.value })} required maxLength={8192} autoComplete="new-password" />}
            </Field>
            <Field label="Registry" field="registry" problems={problems} hint={REGISTRY_HINT}>
              {(p) => <input {...p} type="text" value={d.registry} onChange={(e) => set({ registry: e.target.value })} required maxLength={261} spellCheck={false} autoComplete="off" placeholder="registry.example.com:5000" />}
            </Field>
          </>
        ),
        notice: (c) => (
          <p className="notice" role="status">
            Registry credential {c.name} created for {c.registry}. Choose it in a general deployment's Container → Registry credentials, for an image pulled from there.
          </p>
        ),
      }}
      table={{
        label: 'Registry credentials',
        rowKey: 'registry-credential',
        empty: {
          title: 'No registry credentials yet',
          children: 'Keep a private registry’s username and password here once; general deployments then choose them under Container → Registry credentials instead of typing them.',
          action: (
            <button type="button" className="button primary" onClick={() => focusForm('new-registry-credential')}>
              Add registry credentials
            </button>
          ),
        },
        columns: ({ reload, setError }) => [
          { header: 'Name', cell: (c) => c.name },
          { header: 'Username', cell: (c) => <code>{c.username}</code> },
          {
            header: 'Registry',
            cell: (c) => (
              <RegistryHostCell key={`${c.id}:${c.registry ?? ''}`} route={`${ROUTE}/${c.id}`} name={c.name} value={c.registry} admin={admin} onSaved={() => { setError(null); reload(); }} onError={setError} />
            ),
          },
          { header: 'Used by', cell: (c) => <DeploymentLinks ids={c.deployments} byId={byId} /> },
          { header: 'Created', cell: (c) => new Date(c.created_at).toLocaleString() },
        ],
        actions: (c, { confirm }) => (
          <button type="button" className="button small" onClick={() => confirm(c)} aria-label={`Delete registry credential ${c.name}`}>
            Delete
          </button>
        ),
      }}
      confirm={{
        verb: 'Delete',
        title: (c) => `Delete registry credential ${c.name}?`,
        body: (c) =>
          c.deployments.length > 0 ? (
            <p>
              <DeploymentLinks ids={c.deployments} byId={byId} /> pull with it: the API refuses to delete it until they use other credentials (their Settings → Container → Registry credentials).
            </p>
          ) : (
            <p>No deployment pulls with it. Its password cannot be recovered.</p>
          ),
        fresh: reloadNames,
        run: (c) => api.del(`${ROUTE}/${c.id}`),
      }}
    />
  );
}
