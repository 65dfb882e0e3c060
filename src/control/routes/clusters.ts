// Owns the catalog routes: clusters, their hardware profiles and how many instances of
// each are still free for new deployments, and the GPU quotas with what is reserved of them —
// the cluster's (every project's deployments, summed) and the request's project's, with what
// each of its deployments reserves (the figures the quota checks at create, update and clone
// use). Another project's deployments are never named.

import { Type } from '../../core/typebox.js';
import { notFound } from '../../core/errors.js';
import { usageOf } from '../../domain/quota.js';
import { findCluster, type Cluster } from '../../domain/catalog.js';
import type { ControlApp, ControlContext } from '../context.js';
import { ClusterResponse, ErrorResponse, HardwareResponse, IdParams, QuotaResponse } from '../schemas.js';

export function registerClusterRoutes(app: ControlApp, ctx: ControlContext): void {
  const tags = ['catalog'];
  const { catalog } = ctx.deps;

  // What deployments hold, summed from the record index's footprints (no deployment is read).
  const usage = async () => usageOf(catalog, (await ctx.index.current()).holdings());
  const describe = (cluster: Cluster, usage: Map<number, Map<number, number>>) => {
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
        ...(h.cpus !== undefined && { cpus: h.cpus }),
        ...(h.memory_gib !== undefined && { memory_gib: h.memory_gib }),
      })),
    };
  };
  const clusterOr404 = (id: number): Cluster => {
    const cluster = findCluster(catalog, id);
    if (!cluster) throw notFound('cluster', id);
    return cluster;
  };

  app.get('/clusters', { schema: { tags, response: { 200: Type.Object({ items: Type.Array(ClusterResponse) }) } } }, async () => {
    const used = await usage();
    return { items: catalog.clusters.map((c) => describe(c, used)) };
  });
  app.get('/clusters/:id', { schema: { tags, params: IdParams, response: { 200: ClusterResponse, 404: ErrorResponse } } }, async (request) =>
    describe(clusterOr404(request.params.id), await usage()),
  );
  app.get(
    '/clusters/:id/hardware',
    { schema: { tags, params: IdParams, response: { 200: Type.Object({ items: Type.Array(HardwareResponse) }), 404: ErrorResponse } } },
    async (request) => ({ items: describe(clusterOr404(request.params.id), await usage()).hardware }),
  );

  app.get('/quota', { schema: { tags, response: { 200: QuotaResponse } } }, async (request) => {
    const index = await ctx.index.current();
    const reserved = index.holdings().gpus;
    const held = index.deployments(request.project).map((d) => ({ id: d.id, name: d.name, family: d.family, gpus: d.footprint.gpus }));
    const projectReserved = held.reduce((n, d) => n + d.gpus, 0);
    const quota = (await ctx.deployments.projectRecord(request.project))?.gpu_quota ?? null;
    return {
      gpu_quota: ctx.deps.gpuQuota,
      gpus_reserved: reserved,
      gpus_free: Math.max(0, ctx.deps.gpuQuota - reserved),
      project: {
        name: request.project,
        gpu_quota: quota,
        gpus_reserved: projectReserved,
        gpus_free: quota === null ? null : Math.max(0, quota - projectReserved),
      },
      deployments: held,
    };
  });
}
