// Owns the catalog routes: clusters, their hardware profiles and how many instances of
// each are still free for new deployments.

import { Type } from 'typebox';
import { notFound } from '../../core/errors.js';
import { clusterUsage } from '../../domain/quota.js';
import { findCluster, type Cluster } from '../../domain/catalog.js';
import type { ControlApp, ControlContext } from '../app.js';
import { ClusterResponse, ErrorResponse, HardwareResponse, IdParams } from '../schemas.js';

export function registerClusterRoutes(app: ControlApp, ctx: ControlContext): void {
  const tags = ['catalog'];
  const { catalog } = ctx.deps;

  const describe = async (cluster: Cluster) => {
    const deployments = (await ctx.deps.store.list('deployment')).map((d) => d.value);
    const usage = clusterUsage(catalog, deployments);
    return {
      id: cluster.id,
      name: cluster.name,
      orchestration_enabled: cluster.orchestration_enabled,
      hardware: cluster.hardware.map((h) => ({
        id: h.id,
        name: h.name,
        gpus_per_instance: h.gpus_per_instance,
        instances: h.instances,
        instances_free: h.instances - (usage.get(cluster.id)?.get(h.id) ?? 0),
      })),
    };
  };
  const clusterOr404 = (id: number): Cluster => {
    const cluster = findCluster(catalog, id);
    if (!cluster) throw notFound('cluster', id);
    return cluster;
  };

  app.get('/clusters', { schema: { tags, response: { 200: Type.Object({ items: Type.Array(ClusterResponse) }) } } }, async () => ({
    items: await Promise.all(catalog.clusters.map(describe)),
  }));
  app.get('/clusters/:id', { schema: { tags, params: IdParams, response: { 200: ClusterResponse, 404: ErrorResponse } } }, async (request) =>
    describe(clusterOr404(request.params.id)),
  );
  app.get(
    '/clusters/:id/hardware',
    { schema: { tags, params: IdParams, response: { 200: Type.Object({ items: Type.Array(HardwareResponse) }), 404: ErrorResponse } } },
    async (request) => ({ items: (await describe(clusterOr404(request.params.id))).hardware }),
  );
}
