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
  const scraped = (await store.list('replica')).map((r) => r.value).filter((r) => r.state === 'ready' && r.metrics_target !== null);
  // Only the deployments of those replicas are read: deployments at zero cost nothing here.
  const ids = [...new Set(scraped.map((r) => r.deployment_id))];
  const deployments = await Promise.all(ids.map((id) => store.get('deployment', id)));
  const byId = new Map(deployments.flatMap((d) => (d ? [[d.value.id, d.value] as const] : [])));
  const groups: TargetGroup[] = [];
  for (const r of scraped) {
    const d = byId.get(r.deployment_id);
    if (!d || r.metrics_target === null) continue;
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
