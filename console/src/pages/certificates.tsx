// Owns the Certificates page: client certificates for mTLS. Create (for a deployment, which then
// accepts it besides its own; with an optional cap on the X-Priority class of its requests),
// list, change a cap in place, download the .pem (certificate and private key) and revoke, for
// good, after a confirmation.

import { api, download } from '../api/client';
import type { Certificate, Priority } from '../api/types';
import { CredentialList, NameField } from '../components/credential-list';
import { DeploymentLinks, useDeploymentNames } from '../components/deployment-links';
import { focusForm } from '../components/empty-state';
import { Field } from '../components/form';
import { PriorityCapCell, PriorityCapField } from '../forms/priority-cap';

const EMPTY: { name: string; deployment: string; max_priority: Priority | null } = { name: '', deployment: '', max_priority: null };

export function CertificatesPage() {
  const { byId, reload: reloadNames } = useDeploymentNames();
  return (
    <CredentialList<Certificate, typeof EMPTY>
      manage="certificate.manage"
      title="Certificates"
      intro={
        <>
          Client certificates authenticate callers of an endpoint by mTLS. Bind one to a deployment with “Make it a private endpoint?” or in its settings; a private
          endpoint also accepts every certificate created here for it, so each client application can have its own (and its own cap).
        </>
      }
      route="/certificates"
      create={{
        label: 'Create certificate',
        empty: EMPTY,
        // The next certificate is most often for the same deployment.
        keep: (d) => ({ deployment: d.deployment }),
        body: (d) => ({ name: d.name.trim(), ...(d.deployment ? { deployment_id: Number(d.deployment) } : {}), ...(d.max_priority ? { max_priority: d.max_priority } : {}) }),
        labels: { name: 'Certificate name', deployment_id: 'For deployment', max_priority: 'Max priority' },
        fields: (d, set, problems) => (
          <>
            <NameField label="Certificate name" value={d.name} onChange={(name) => set({ name })} problems={problems} />
            <Field label="For deployment (optional)" field="deployment_id" problems={problems} hint="A deployment that takes client certificates (a private endpoint) accepts this one besides its own.">
              {(p) => (
                <select {...p} value={d.deployment} onChange={(e) => set({ deployment: e.target.value })}>
                  <option value="">none</option>
                  {[...byId.values()].map((x) => (
                    <option key={x.id} value={x.id}>
                      {x.name}
                    </option>
                  ))}
                </select>
              )}
            </Field>
            <PriorityCapField value={d.max_priority} onChange={(max_priority) => set({ max_priority })} problems={problems} />
          </>
        ),
      }}
      table={{
        label: 'Certificates',
        rowKey: 'certificate',
        empty: {
          title: 'No client certificates yet',
          children: 'A client certificate lets callers reach an endpoint by mTLS instead of a bearer token. Create one here, or check “Make it a private endpoint?” when you create a deployment.',
          action: (
            <button type="button" className="button primary" onClick={() => focusForm('new-certificate')}>
              Create a certificate
            </button>
          ),
        },
        columns: ({ reload, setError }) => [
          { header: 'Name', cell: (c) => c.name },
          { header: 'Accepted by', cell: (c) => <DeploymentLinks ids={c.deployments} byId={byId} /> },
          {
            header: 'Max priority',
            cell: (c) => (
              <PriorityCapCell route={`/certificates/${c.id}`} name={`certificate ${c.name}`} value={c.max_priority} readOnly={c.revoked} onSaved={() => { setError(null); reload(); }} onError={setError} />
            ),
          },
          { header: 'Fingerprint (SHA-256)', cell: (c) => <code title={c.fingerprint_sha256}>{c.fingerprint_sha256.slice(0, 16)}…</code> },
          { header: 'Expires', cell: (c) => new Date(c.not_after).toLocaleDateString() },
          { header: 'State', cell: (c) => (c.revoked ? <span className="status status-failed">Revoked</span> : <span className="status status-ready">Valid</span>) },
        ],
        actions: (c, { confirm, setError }) =>
          !c.revoked && (
            <>
              <button type="button" className="button small" aria-label={`Download ${c.name}.pem`} onClick={() => void download(c.pem_path, `${c.name}.pem`).catch((e: Error) => setError(e.message))}>
                Download .pem
              </button>{' '}
              <button type="button" className="button small" aria-label={`Revoke ${c.name}`} onClick={() => confirm(c)}>
                Revoke
              </button>
            </>
          ),
      }}
      confirm={{
        verb: 'Revoke',
        title: (c) => `Revoke ${c.name}?`,
        body: (c) => (
          <p>
            Revocation is final. {c.deployments.length > 0 ? <>Clients of <DeploymentLinks ids={c.deployments} byId={byId} /> using it get 401 within a second.</> : 'No deployment accepts it now.'}
          </p>
        ),
        fresh: reloadNames,
        run: (c) => api.post(`/certificates/${c.id}/revoke`),
      }}
    />
  );
}
