// Owns the deployments list, both families: status first (word and colour, and under it why it
// is not ready when the controller says), endpoint URL with copy, components ready/desired,
// current and serving revision. It refreshes by itself every two seconds, keeping rows in
// place; an empty list teaches how to start.

import { useEffect, useState } from 'react';
import { api, ApiError } from '../api/client';
import type { Deployment, Items } from '../api/types';
import { StatusBadge, StatusReason } from '../components/status';
import { Components, Endpoint, Revisions } from '../components/deployment-bits';
import { EmptyState } from '../components/empty-state';
import { FormError } from '../components/form';

const REFRESH_MS = 2000;

export function DeploymentListPage() {
  const [items, setItems] = useState<Deployment[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let stop = false;
    let timer: number | undefined;
    const load = async () => {
      try {
        const [g, o] = await Promise.all([api.get<Items<Deployment>>('/deployments/general'), api.get<Items<Deployment>>('/deployments/orchestrated')]);
        if (stop) return;
        setItems([...g.items, ...o.items].sort((a, b) => a.name.localeCompare(b.name)));
        setError(null);
      } catch (err) {
        if (!stop) setError(err instanceof ApiError ? err.message : String(err));
      }
      if (!stop) timer = window.setTimeout(() => void load(), REFRESH_MS);
    };
    void load();
    return () => {
      stop = true;
      if (timer !== undefined) window.clearTimeout(timer);
    };
  }, []);

  return (
    <section>
      <div className="page-head">
        <h1>Deployments</h1>
        <div className="actions">
          <a className="button primary" href="#/deployments/new">
            Create deployment
          </a>
        </div>
      </div>
      <FormError message={error} />
      {items === null && !error && <p className="subtle">Loading…</p>}
      {items !== null && items.length === 0 && (
        <EmptyState
          title="No deployments yet"
          action={
            <>
              <a className="button primary" href="#/deployments/new/general">
                Create your first deployment
              </a>
              <a className="button" href="#/deployments/new/orchestrated">
                Or serve a model (orchestrated)
              </a>
            </>
          }
        >
          Create one to get an HTTPS endpoint: start from a preset (vLLM, SGLang, TGI, Triton, Ollama…) with your command, or name a model and let the platform run it.
        </EmptyState>
      )}
      {items !== null && items.length > 0 && (
        <div className="table-wrap">
          <table aria-label="Deployments" aria-live="off">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Family</th>
                <th scope="col">Status</th>
                <th scope="col">Endpoint</th>
                <th scope="col">Components</th>
                <th scope="col">Revision</th>
              </tr>
            </thead>
            <tbody>
              {items.map((d) => (
                <tr key={`${d.family}-${d.id}`} data-deployment={d.name}>
                  <td>
                    <a href={`#/deployments/${d.family}/${d.id}`}>{d.name}</a>
                  </td>
                  <td>{d.family === 'general' ? 'General' : `Orchestrated${d.serving_mode === 'disaggregated' ? ' (disaggregated)' : ''}`}</td>
                  <td>
                    <StatusBadge status={d.status} />
                    <StatusReason reason={d.status_reason} className="in-cell" />
                  </td>
                  <td>
                    <Endpoint d={d} />
                  </td>
                  <td>
                    <Components d={d} />
                  </td>
                  <td>
                    <Revisions d={d} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
