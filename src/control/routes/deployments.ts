// Owns the deployment routes (docs/control-api.md), mounted once per family under
// /deployments/general and /deployments/orchestrated: create, list, detail, edit, delete,
// pause, resume, rollback, clone and the revision history; the per-deployment routes beside
// them (logs, usage, activity, revision metrics, events, terminal) are registered here too.
// Every route acts within the request's project: another project's deployment is answered as
// one that does not exist, and lists, pages and `?name=` see only the project's.

import { Type } from '../../core/typebox.js';
import type { DeploymentRecord, Family, ReplicaRecord } from '../../domain/records.js';
import { resolveTraffic } from '../../domain/traffic.js';
import type { ControlApp, ControlContext } from '../context.js';
import { callerName, callerRole } from '../caller.js';
import type { DeploymentView } from '../../domain/api-views.js';
import { renderDeployment, renderReplica, revisionDetail } from '../render.js';
import {
  DeploymentResponse,
  ErrorResponse,
  GeneralRequest,
  IdParams,
  OrchestratedRequest,
  ReplicaResponse,
  RevisionParams,
  RevisionResponse,
  RollbackRequest,
} from '../schemas.js';
import { PlatformError } from '../../core/errors.js';
import { projectOf } from '../../domain/access.js';
import { decodeContinue, listCollection, PAGE_QUERY_FIELDS, pageOf, PageResponse, pages, readPage, type Page } from '../paging.js';
import { registerActivityRoutes } from './activity.js';
import { registerEventRoutes } from './events.js';
import { registerLogRoutes } from './logs.js';
import { registerRevisionMetricsRoutes } from './revision-metrics.js';
import { registerTerminalRoutes } from './terminal.js';
import { registerUsageRoutes } from './usage.js';

const FAMILIES: Family[] = ['general', 'orchestrated'];

const DeploymentListQuery = Type.Object({
  ...PAGE_QUERY_FIELDS,
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 253, description: 'only the deployment of this name (none or one item)' })),
});
const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 422: ErrorResponse };

export function registerDeploymentRoutes(app: ControlApp, ctx: ControlContext): void {
  for (const family of FAMILIES) registerFamily(app, ctx, family);
}

function registerFamily(app: ControlApp, ctx: ControlContext, family: Family): void {
  const base = `/deployments/${family}`;
  const body = family === 'general' ? GeneralRequest : OrchestratedRequest;
  const tags = [`${family} deployments`];
  const service = ctx.deployments;
  const render = async (id: number, project: string, status?: DeploymentView['status']) => {
    const d = await service.get(family, id, project);
    return renderDeployment(d, await replicasOf(ctx, id), ctx.deps.endpoint, status);
  };

  app.post(base, { schema: { tags, body, response: { 201: DeploymentResponse, ...errors } } }, async (request, reply) => {
    const created = await service.create(family, request.body, { project: request.project, role: callerRole(request) });
    request.log.info({ deployment: created.name, family, project: request.project, by: callerName(request) }, 'deployment created');
    return reply.status(201).send(await render(created.id, request.project));
  });

  // Paged as docs/control-api.md says (paging.ts); `name` finds one deployment by its name.
  app.get(
    base,
    { schema: { tags, querystring: DeploymentListQuery, response: { 200: PageResponse(DeploymentResponse), 400: ErrorResponse } } },
    async (request) => {
      const query = request.query;
      const collection = listCollection(`deployments/${family}`, request.project);
      let records: DeploymentRecord[];
      let page: Page | null = null;
      if (query.name !== undefined) {
        const after = query.continue === undefined ? 0 : decodeContinue(collection, query.continue);
        const named = await service.findByName(family, query.name, request.project);
        records = named !== undefined && named.id > after ? [named] : [];
      } else if (!pages(query)) {
        records = await service.list(family, request.project);
      } else {
        const index = await ctx.index.current();
        page = pageOf(index.ids('deployment', { family, project: request.project }), query, collection);
        const read = await readPage(page, (id) => ctx.deps.store.get('deployment', id));
        records = read.map((d) => d.value).filter((d) => d.family === family && projectOf(d) === request.project);
      }
      const replicas = records.length === 0 ? new Map<number, ReplicaRecord[]>() : replicasByDeployment(await ctx.deps.store.list('replica'));
      const items = records.map((d) => renderDeployment(d, replicas.get(d.id) ?? [], ctx.deps.endpoint));
      return page?.continue === undefined ? { items } : { items, continue: page.continue, remaining_item_count: page.remaining_item_count };
    },
  );

  app.get(`${base}/:id`, { schema: { tags, params: IdParams, response: { 200: DeploymentResponse, ...errors } } }, async (request) =>
    render(request.params.id, request.project),
  );

  app.patch(`${base}/:id`, { schema: { tags, params: IdParams, body, response: { 200: DeploymentResponse, ...errors } } }, async (request) => {
    await service.patch(family, request.params.id, request.body, { project: request.project, role: callerRole(request) });
    return render(request.params.id, request.project);
  });

  app.delete(`${base}/:id`, { schema: { tags, params: IdParams, response: { 202: DeploymentResponse, ...errors } } }, async (request, reply) => {
    const removed = await service.delete(family, request.params.id, request.project);
    request.log.info({ deployment: removed.name, family, project: request.project, by: callerName(request) }, 'deployment deleted');
    return reply.status(202).send(renderDeployment(removed, [], ctx.deps.endpoint, 'deleting'));
  });

  for (const action of ['pause', 'resume'] as const) {
    app.post(`${base}/:id/${action}`, { schema: { tags, params: IdParams, response: { 202: DeploymentResponse, ...errors } } }, async (request, reply) => {
      await service[action](family, request.params.id, request.project);
      return reply.status(202).send(await render(request.params.id, request.project));
    });
  }

  app.post(
    `${base}/:id/rollback`,
    { schema: { tags, params: IdParams, body: RollbackRequest, response: { 202: DeploymentResponse, ...errors } } },
    async (request, reply) => {
      await service.rollback(family, request.params.id, request.body.revision, request.project);
      return reply.status(202).send(await render(request.params.id, request.project));
    },
  );

  app.post(`${base}/:id/clone`, { schema: { tags, params: IdParams, body, response: { 201: DeploymentResponse, ...errors } } }, async (request, reply) => {
    const created = await service.clone(family, request.params.id, request.body, { project: request.project, role: callerRole(request) });
    return reply.status(201).send(await render(created.id, request.project));
  });

  app.get(
    `${base}/:id/revisions`,
    { schema: { tags, params: IdParams, response: { 200: Type.Object({ current: Type.Integer(), items: Type.Array(RevisionResponse) }) } } },
    async (request) => {
      const d = await service.get(family, request.params.id, request.project);
      const shares = resolveTraffic(d);
      return { current: d.revision, items: d.revisions.map((r) => revisionDetail(r, shares)) };
    },
  );

  app.get(`${base}/:id/revisions/:n`, { schema: { tags, params: RevisionParams, response: { 200: RevisionResponse, ...errors } } }, async (request) => {
    const d = await service.get(family, request.params.id, request.project);
    const r = d.revisions.find((x) => x.revision === request.params.n);
    if (!r) throw new PlatformError('not_found', `deployment ${d.name} has no revision ${request.params.n}`);
    return revisionDetail(r, resolveTraffic(d));
  });

  app.get(`${base}/:id/replicas`, { schema: { tags, params: IdParams, response: { 200: Type.Object({ items: Type.Array(ReplicaResponse) }), ...errors } } }, async (request) => {
    await service.get(family, request.params.id, request.project);
    const items = (await replicasOf(ctx, request.params.id)).sort((a, b) => a.id - b.id).map(renderReplica);
    return { items };
  });

  registerLogRoutes(app, ctx, family);
  registerUsageRoutes(app, ctx, family);
  registerActivityRoutes(app, ctx, family);
  registerRevisionMetricsRoutes(app, ctx, family);
  registerEventRoutes(app, ctx, family);
  registerTerminalRoutes(app, ctx, family);
}

/** Replicas by deployment id, so rendering a page costs the page, not the page times every replica. */
function replicasByDeployment(all: readonly { value: ReplicaRecord }[]): Map<number, ReplicaRecord[]> {
  const out = new Map<number, ReplicaRecord[]>();
  for (const { value: r } of all) {
    const list = out.get(r.deployment_id);
    if (list) list.push(r);
    else out.set(r.deployment_id, [r]);
  }
  return out;
}

async function replicasOf(ctx: ControlContext, deploymentId: number) {
  return (await ctx.deps.store.list('replica')).map((r) => r.value).filter((r) => r.deployment_id === deploymentId);
}
