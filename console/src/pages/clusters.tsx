// Owns the Clusters page: the account's GPU quota and what each deployment reserves of it,
// the clusters, whether the orchestration operator runs there, and each hardware type with
// its free instances.

import type { Cluster, Items, Quota } from '../api/types';
import { usePoll } from '../hooks';
import { FormError } from '../components/form';

export function ClustersPage() {
  const clusters = usePoll<Items<Cluster>>('/clusters', 10_000);
  const quota = usePoll<Quota>('/quota', 10_000);
  const list = clusters.data?.items ?? [];
  const q = quota.data;
  return (
    <section>
      <h1>Clusters</h1>
      {q && (
        <div className="panel">
          <h2>GPU quota</h2>
          <p data-testid="gpu-quota">
            <strong>{q.gpus_reserved}</strong> of <strong>{q.gpu_quota}</strong> GPUs in use, {q.gpus_free} free. A deployment reserves max replicas × GPUs per instance (both pools when disaggregated), paused or not.
          </p>
          {q.deployments.length > 0 && (
            <table aria-label="GPU quota by deployment">
              <thead>
                <tr>
                  <th scope="col">Deployment</th>
                  <th scope="col" className="num">GPUs reserved</th>
                </tr>
              </thead>
              <tbody>
                {q.deployments.map((d) => (
                  <tr key={d.id}>
                    <td>
                      <a href={`#/deployments/${d.family}/${d.id}`}>{d.name}</a>
                    </td>
                    <td className="num">{d.gpus}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </div>
      )}
      <FormError message={clusters.error?.message ?? null} />
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
