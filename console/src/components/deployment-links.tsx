// Owns naming the deployments a credential is bound to: the deployments of both families by id
// (every page of each list, polled, and reloadable before a warning names them) and the list of
// links to them.

import type { Deployment } from '../api/types';
import { usePollAll } from '../hooks';

/** Deployments by id, to name the ones a credential protects; `reload` before a warning names them. */
export function useDeploymentNames(): { byId: Map<number, Deployment>; reload: () => void } {
  const g = usePollAll<Deployment>('/deployments/general', 10_000);
  const o = usePollAll<Deployment>('/deployments/orchestrated', 10_000);
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
