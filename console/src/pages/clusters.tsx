// Owns the Clusters page: the clusters, whether the orchestration operator runs there, and
// each hardware type with free instances; the account's GPU quota in use across deployments.

import type { Cluster, Deployment, Items } from '../api/types';
import { usePoll } from '../hooks';
import { useDeploymentNames } from './vault';

/** GPUs a deployment may hold at most, as the API counts quota (max replicas × GPUs per instance, or both pools). */
function gpuFootprint(d: Deployment, clusters: Cluster[]): number {
  const hw = (id: number | null | undefined) => clusters.find((c) => c.id === d.cluster_id)?.hardware.find((h) => h.id === id)?.gpus_per_instance ?? 0;
  if (d.family === 'orchestrated' && d.serving_mode === 'disaggregated' && d.worker_pools) {
    return d.worker_pools.prefill.replicas * hw(d.worker_pools.prefill.hardware_instance_id) + d.worker_pools.decode.replicas * hw(d.worker_pools.decode.hardware_instance_id);
  }
  return (d.max_replicas ?? 0) * hw(d.hardware_instance_id);
}

export function ClustersPage() {
  const clusters = usePoll<Items<Cluster>>('/clusters', 10_000);
  const byId = useDeploymentNames();
  const list = clusters.data?.items ?? [];
  const inUse = [...byId.values()].filter((d) => d.status !== 'deleting').reduce((n, d) => n + gpuFootprint(d, list), 0);
  return (
    <section>
      <h1>Clusters</h1>
      <p data-testid="gpu-quota">
        GPU quota in use: <strong>{inUse}</strong> GPUs reserved by deployments (max replicas × GPUs per instance; the server's limit is set with <code>--gpu-quota</code>).
      </p>
      {clusters.error && (
        <div className="form-error" role="alert">
          {clusters.error.message}
        </div>
      )}
      {list.map((c) => (
        <div key={c.id} className="panel">
          <h2>
            {c.name} <span className="subtle">(id {c.id})</span>
          </h2>
          <p>{c.orchestration_enabled ? 'Orchestration operator enabled: orchestrated deployments can run here.' : 'No orchestration operator: general inference only.'}</p>
          <table aria-label={`Hardware of ${c.name}`}>
            <thead>
              <tr>
                <th scope="col">Hardware type</th>
                <th scope="col" className="num">GPUs per instance</th>
                <th scope="col" className="num">Instances</th>
                <th scope="col" className="num">Free</th>
              </tr>
            </thead>
            <tbody>
              {c.hardware.map((h) => (
                <tr key={h.id}>
                  <td>{h.name}</td>
                  <td className="num">{h.gpus_per_instance}</td>
                  <td className="num">{h.instances}</td>
                  <td className="num">{h.instances_free}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
    </section>
  );
}
