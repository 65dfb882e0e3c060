// Owns the deployments list, both families: status first (word and colour, and under it why it
// is not ready when the controller says), endpoint URL with copy, components ready/desired,
// current and serving revision. It reads every page of both lists (a hundred deployments a
// request, api/pages.ts) and shows them all, sorted by name, so a thousand deployments are one
// table the browser's find searches; while the first walk runs it says how far it has come.
// It refreshes by itself every two seconds — longer when a walk takes long (walkPause) —
// keeping rows in place; an empty list teaches how to start.

import { useEffect, useState } from 'react';
import { ApiError } from '../api/client';
import { allPages, type Progress } from '../api/pages';
import type { Deployment } from '../api/types';
import { walkPause } from '../hooks';
import { StatusBadge, StatusReason } from '../components/status';
import { Components, Endpoint, Revisions } from '../components/deployment-bits';
import { EmptyState } from '../components/empty-state';
import { FormError } from '../components/form';
import { useAccess } from '../access';

const REFRESH_MS = 2000;

export function DeploymentListPage() {
  const access = useAccess();
  const create = access.may('deployment.manage');
  const [items, setItems] = useState<Deployment[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [progress, setProgress] = useState<Progress | null>(null);

  useEffect(() => {
    const aborter = new AbortController();
    let timer: number | undefined;
    let first = true;
    const load = async () => {
      const started = performance.now();
      try {
        // Progress of the first walk only: a refresh keeps the table as it is until it is done.
        const seen = { general: { loaded: 0, total: null }, orchestrated: { loaded: 0, total: null } } as Record<'general' | 'orchestrated', Progress>;
        const heard = (family: 'general' | 'orchestrated') => (p: Progress) => {
          seen[family] = p;
          if (!first) return;
          const { general: g, orchestrated: o } = seen;
          setProgress({ loaded: g.loaded + o.loaded, total: g.total === null || o.total === null ? null : g.total + o.total });
        };
        const [g, o] = await Promise.all([
          allPages<Deployment>('/deployments/general', aborter.signal, heard('general')),
          allPages<Deployment>('/deployments/orchestrated', aborter.signal, heard('orchestrated')),
        ]);
        setItems([...g, ...o].sort((a, b) => a.name.localeCompare(b.name)));
        setError(null);
      } catch (err) {
        if ((err as Error).name === 'AbortError') return;
        setError(err instanceof ApiError ? err.message : String(err));
      }
      first = false;
      setProgress(null);
      if (!aborter.signal.aborted) timer = window.setTimeout(() => void loadWhenVisible(), walkPause(REFRESH_MS)(performance.now() - started));
    };
    const loadWhenVisible = async () => {
      if (document.visibilityState === 'hidden') {
        timer = window.setTimeout(() => void loadWhenVisible(), REFRESH_MS);
        return;
      }
      await load();
    };
    void load();
    return () => {
      aborter.abort();
      if (timer !== undefined) window.clearTimeout(timer);
    };
  }, []);

  return (
    <section>
      <div className="page-head">
        <h1>Deployments</h1>
        <div className="actions">
          {create ? (
            <a className="button primary" href="#/deployments/new">
              Create deployment
            </a>
          ) : (
            // A link cannot be disabled: the button stands in for it, with the reason.
            <button type="button" className="button primary" disabled title={access.reason('deployment.manage')} data-refused="deployment.manage">
              Create deployment
            </button>
          )}
        </div>
      </div>
      <FormError message={error} />
      {items === null && !error && (
        <p className="subtle" role="status" data-testid="list-progress">
          {progress?.total ? `Loading deployments… ${progress.loaded.toLocaleString()} of ${progress.total.toLocaleString()}` : 'Loading…'}
        </p>
      )}
      {items !== null && items.length === 0 && (
        <EmptyState
          title="No deployments yet"
          action={
            !create ? (
              <span className="subtle">{access.reason('deployment.manage')}.</span>
            ) : (
              <>
                <a className="button primary" href="#/deployments/new/general">
                  Create your first deployment
                </a>
                <a className="button" href="#/deployments/new/orchestrated">
                  Or serve a model (orchestrated)
                </a>
              </>
            )
          }
        >
          Create one to get an HTTPS endpoint: start from a preset (vLLM, SGLang, TGI, Triton, Ollama…) with your command, or name a model and let the platform run it.
        </EmptyState>
      )}
      {items !== null && items.length > 0 && (
        <p className="subtle" data-testid="list-count">
          {items.length === 1 ? '1 deployment' : `${items.length.toLocaleString()} deployments`}
        </p>
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
