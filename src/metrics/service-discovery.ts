// Owns Prometheus HTTP service discovery for replica metrics: the standard http_sd JSON
// target-group document listing every ready replica's scrape target (its metrics port and
// path, by default the container port and /metrics, as the spec says), labelled with deployment,
// revision and component, so an operator's Prometheus finds replicas without configuration.
// https://prometheus.io/docs/prometheus/latest/http_sd/

import type { Store } from '../store/store.js';

export const SERVICE_DISCOVERY_PATH = '/sd/replicas';

export interface TargetGroup {
  targets: string[];
  labels: Record<string, string>;
}

export async function replicaTargetGroups(store: Store): Promise<TargetGroup[]> {
  const [deployments, replicas] = await Promise.all([store.list('deployment'), store.list('replica')]);
  const byId = new Map(deployments.map((d) => [d.value.id, d.value]));
  const groups: TargetGroup[] = [];
  for (const { value: r } of replicas) {
    const d = byId.get(r.deployment_id);
    if (!d || r.state !== 'ready' || r.metrics_target === null) continue;
    groups.push({
      targets: [r.metrics_target.address],
      labels: {
        __metrics_path__: r.metrics_target.path,
        deployment: d.name,
        deployment_id: String(d.id),
        family: d.family,
        revision: String(r.revision),
        component: r.component,
        replica: r.name,
      },
    });
  }
  return groups.sort((a, b) => (a.labels.replica ?? '').localeCompare(b.labels.replica ?? ''));
}
