// Owns the Certificates page: client certificates for mTLS. Create (for a deployment, which then
// accepts it besides its own; with an optional cap on the X-Priority class of its requests),
// list, change a cap in place, download the .pem (certificate and private key) and revoke, for
// good, after a confirmation.

import { useState, type FormEvent } from 'react';
import { api, ApiError, download } from '../api/client';
import type { Certificate, Items, Priority } from '../api/types';
import { usePoll } from '../hooks';
import { ConfirmDialog } from '../components/confirm';
import { Field, type Problems } from '../components/form';
import { focusForm } from '../components/empty-state';
import { ResourceTable } from '../components/resource-table';
import { inLabels } from '../forms/labels';
import { PriorityCapCell, PriorityCapField } from '../forms/priority-cap';
import { DeploymentLinks, useDeploymentNames } from './vault';

const LABELS = { name: 'Certificate name', deployment_id: 'For deployment', max_priority: 'Max priority' };

export function CertificatesPage() {
  const certs = usePoll<Items<Certificate>>('/certificates', 5000);
  const { byId, reload: reloadNames } = useDeploymentNames();
  const [name, setName] = useState('');
  const [deployment, setDeployment] = useState('');
  const [cap, setCap] = useState<Priority | null>(null);
  const [problems, setProblems] = useState<Problems>({});
  const [toRevoke, setToRevoke] = useState<Certificate | null>(null);
  const [error, setError] = useState<string | null>(null);

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setProblems({});
    try {
      await api.post<Certificate>('/certificates', { name: name.trim(), ...(deployment ? { deployment_id: Number(deployment) } : {}), ...(cap ? { max_priority: cap } : {}) });
      setName('');
      setCap(null);
      certs.reload();
    } catch (err) {
      if (err instanceof ApiError) setProblems({ [err.field ?? 'name']: inLabels(err.message, LABELS) });
    }
  };

  const revoke = async () => {
    if (!toRevoke) return;
    try {
      await api.post(`/certificates/${toRevoke.id}/revoke`);
      certs.reload();
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    }
    setToRevoke(null);
  };

  return (
    <section>
      <h1>Certificates</h1>
      <p className="subtle">
        Client certificates authenticate callers of an endpoint by mTLS. Bind one to a deployment with “Make it a private endpoint?” or in its settings; a private
        endpoint also accepts every certificate created here for it, so each client application can have its own (and its own cap).
      </p>
      <form className="panel" id="new-certificate" onSubmit={(e) => void create(e)}>
        <div className="grid2">
          <Field label="Certificate name" field="name" problems={problems}>
            {(p) => <input {...p} type="text" value={name} onChange={(e) => setName(e.target.value)} required maxLength={64} />}
          </Field>
          <Field
            label="For deployment (optional)"
            field="deployment_id"
            problems={problems}
            hint="A deployment that takes client certificates (a private endpoint) accepts this one besides its own."
          >
            {(p) => (
              <select {...p} value={deployment} onChange={(e) => setDeployment(e.target.value)}>
                <option value="">none</option>
                {[...byId.values()].map((d) => (
                  <option key={d.id} value={d.id}>
                    {d.name}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <PriorityCapField value={cap} onChange={setCap} problems={problems} />
        </div>
        <button className="button primary" type="submit">
          Create certificate
        </button>
      </form>
      {(error ?? certs.error) && (
        <div className="form-error" role="alert">
          {error ?? certs.error?.message}
        </div>
      )}
      <ResourceTable
        label="Certificates"
        rowKey="certificate"
        items={certs.data?.items ?? null}
        empty={{
          title: 'No client certificates yet',
          children: 'A client certificate lets callers reach an endpoint by mTLS instead of a bearer token. Create one here, or check “Make it a private endpoint?” when you create a deployment.',
          action: (
            <button type="button" className="button primary" onClick={() => focusForm('new-certificate')}>
              Create a certificate
            </button>
          ),
        }}
        columns={[
          { header: 'Name', cell: (c) => c.name },
          { header: 'Accepted by', cell: (c) => <DeploymentLinks ids={c.deployments} byId={byId} /> },
          {
            header: 'Max priority',
            cell: (c) => (
              <PriorityCapCell route={`/certificates/${c.id}`} name={`certificate ${c.name}`} value={c.max_priority} readOnly={c.revoked} onSaved={() => { setError(null); certs.reload(); }} onError={setError} />
            ),
          },
          { header: 'Fingerprint (SHA-256)', cell: (c) => <code title={c.fingerprint_sha256}>{c.fingerprint_sha256.slice(0, 16)}…</code> },
          { header: 'Expires', cell: (c) => new Date(c.not_after).toLocaleDateString() },
          { header: 'State', cell: (c) => (c.revoked ? <span className="status status-failed">Revoked</span> : <span className="status status-ready">Valid</span>) },
        ]}
        actions={(c) =>
          !c.revoked && (
            <>
              <button type="button" className="button small" aria-label={`Download ${c.name}.pem`} onClick={() => void download(c.pem_path, `${c.name}.pem`).catch((e: Error) => setError(e.message))}>
                Download .pem
              </button>{' '}
              <button type="button" className="button small" aria-label={`Revoke ${c.name}`} onClick={() => {
                  reloadNames();
                  void api.get<Certificate>(`/certificates/${c.id}`).then(setToRevoke, (e: Error) => setError(e.message));
                }}>
                Revoke
              </button>
            </>
          )
        }
      />
      <ConfirmDialog open={toRevoke !== null} title={`Revoke ${toRevoke?.name ?? ''}?`} confirmLabel="Revoke" danger onConfirm={() => void revoke()} onCancel={() => setToRevoke(null)}>
        <p>
          Revocation is final. {toRevoke && toRevoke.deployments.length > 0 ? <>Clients of <DeploymentLinks ids={toRevoke.deployments} byId={byId} /> using it get 401 within a second.</> : 'No deployment accepts it now.'}
        </p>
      </ConfirmDialog>
    </section>
  );
}
