// Owns the project routes: the caller's projects (the admin: every one), creating, reading,
// setting the GPU quota of and deleting a project (the admin), a project's usage summed per
// project and per deployment, and its members — people by e-mail address and identity
// provider groups — with their roles (owners manage them). The project is the one in the path;
// a project the caller is not in is a 404 (the rule check in app.ts), never a 403.

import { Type } from '../../core/typebox.js';
import { PlatformError } from '../../core/errors.js';
import { DEFAULT_PROJECT, PROJECT_NAME_PATTERN, PROJECT_ROLES, projectOf } from '../../domain/access.js';
import type { ProjectRecord, UsageRecord } from '../../domain/records.js';
import type { ControlApp, ControlContext } from '../context.js';
import { callerName } from '../caller.js';
import { callerPrincipal, roleIn, type Principal } from '../principal.js';
import { normaliseSubject, ProjectDirectory } from '../project-directory.js';
import { ErrorResponse, ProjectMemberResponse, ProjectResponse, ProjectUsageResponse } from '../schemas.js';
import { figures, parseTime, sumUsage, UsageQuery } from './usage.js';

const ProjectName = Type.String({ pattern: PROJECT_NAME_PATTERN.source, maxLength: 40, description: 'lowercase letters, digits and "-", starting with a letter, at most 40 characters' });
const GpuQuota = Type.Union([Type.Integer({ minimum: 0, maximum: 1_000_000 }), Type.Null()], { description: "GPUs the project's deployments may reserve; null: no project quota (only the cluster's)" });
const ProjectParams = Type.Object({ project: Type.String({ maxLength: 40 }) });
const MemberParams = Type.Object({ project: Type.String({ maxLength: 40 }), subject: Type.String({ minLength: 1, maxLength: 300 }) });
const ProjectCreateRequest = Type.Object({ name: ProjectName, gpu_quota: Type.Optional(GpuQuota) }, { additionalProperties: false });
const ProjectUpdateRequest = Type.Object({ gpu_quota: GpuQuota }, { additionalProperties: false });
const MemberRequest = Type.Object({ role: Type.Enum([...PROJECT_ROLES]) }, { additionalProperties: false });

export function registerProjectRoutes(app: ControlApp, ctx: ControlContext): void {
  const tags = ['projects'];
  const directory = new ProjectDirectory(ctx.deps.store, ctx.deps.clock);
  const view = async (p: ProjectRecord, principal: Principal) => ({
    name: p.name,
    gpu_quota: p.gpu_quota,
    gpus_reserved: (await ctx.index.current()).holdings(undefined, p.name).gpus,
    role: roleIn(principal, p.name),
    created_at: p.created_at,
  });

  app.get('/projects', { schema: { tags, response: { 200: Type.Object({ items: Type.Array(ProjectResponse) }) } } }, async (request) => {
    const principal = callerPrincipal(request);
    const all = await directory.list();
    const mine = principal.admin ? all : all.filter((p) => principal.roles.has(p.name));
    return { items: await Promise.all(mine.map((p) => view(p, principal))) };
  });

  app.post(
    '/projects',
    { schema: { tags, body: ProjectCreateRequest, response: { 201: ProjectResponse, 400: ErrorResponse, 403: ErrorResponse, 409: ErrorResponse } } },
    async (request, reply) => {
      const created = await directory.create(request.body.name, request.body.gpu_quota ?? null);
      request.log.info({ project: created.name, gpu_quota: created.gpu_quota, by: callerName(request) }, 'project created');
      return reply.status(201).send(await view(created, callerPrincipal(request)));
    },
  );

  app.get('/projects/:project', { schema: { tags, params: ProjectParams, response: { 200: ProjectResponse, 404: ErrorResponse } } }, async (request) =>
    view(await directory.get(request.params.project), callerPrincipal(request)),
  );

  app.patch(
    '/projects/:project',
    { schema: { tags, params: ProjectParams, body: ProjectUpdateRequest, response: { 200: ProjectResponse, 400: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse } } },
    async (request) => {
      const updated = await directory.setQuota(request.params.project, request.body.gpu_quota);
      request.log.info({ project: updated.name, gpu_quota: updated.gpu_quota, by: callerName(request) }, 'project GPU quota set');
      return view(updated, callerPrincipal(request));
    },
  );

  app.delete(
    '/projects/:project',
    { schema: { tags, params: ProjectParams, response: { 204: Type.Null(), 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse } } },
    async (request, reply) => {
      const { project } = request.params;
      await directory.get(project);
      if (project === DEFAULT_PROJECT) throw new PlatformError('conflict', 'the default project cannot be deleted: records from before projects belong to it');
      const index = await ctx.index.current();
      const owned = [
        ['deployments', index.deployments(project).length],
        ['vault tokens', index.ids('token', { project }).length],
        ['certificates', index.ids('certificate', { project }).length],
        ['registry credentials', index.ids('registry_credential', { project }).length],
        ['service accounts', index.ids('service_account', { project }).length],
      ] as const;
      const left = owned.filter(([, n]) => n > 0).map(([what, n]) => `${n} ${what}`);
      if (left.length > 0) throw new PlatformError('conflict', `project ${project} still owns ${left.join(', ')}: delete them first`);
      await directory.delete(project);
      request.log.info({ project, by: callerName(request) }, 'project deleted');
      return reply.status(204).send(null);
    },
  );

  // Usage records name their project; older ones (before projects) take their deployment's,
  // else `default`.
  app.get(
    '/projects/:project/usage',
    { schema: { tags, params: ProjectParams, querystring: UsageQuery, response: { 200: ProjectUsageResponse, 400: ErrorResponse, 404: ErrorResponse } } },
    async (request) => {
      const { project } = request.params;
      await directory.get(project);
      const from = parseTime('from', request.query.from);
      const to = parseTime('to', request.query.to);
      const index = await ctx.index.current();
      const projectOfUsage = (u: UsageRecord) => u.project ?? index.deployment(u.deployment_id)?.project ?? projectOf(u);
      const hours = (await ctx.deps.store.list('usage'))
        .map((u) => u.value)
        .filter((u) => projectOfUsage(u) === project && (from === null || u.hour >= from) && (to === null || u.hour <= to));
      const byDeployment = new Map<number, UsageRecord[]>();
      for (const u of hours) {
        const list = byDeployment.get(u.deployment_id);
        if (list) list.push(u);
        else byDeployment.set(u.deployment_id, [u]);
      }
      const deployments = [...byDeployment]
        .sort(([a], [b]) => a - b)
        .map(([id, list]) => {
          const d = index.deployment(id);
          return { deployment_id: id, name: d?.name ?? null, family: d?.family ?? null, totals: figures(sumUsage(list)) };
        });
      return { project, totals: figures(sumUsage(hours)), deployments };
    },
  );

  app.get(
    '/projects/:project/members',
    { schema: { tags, params: ProjectParams, response: { 200: Type.Object({ items: Type.Array(ProjectMemberResponse) }), 404: ErrorResponse } } },
    async (request) => ({ items: (await directory.get(request.params.project)).members.map((m) => ({ subject: m.subject, role: m.role })) }),
  );

  app.put(
    '/projects/:project/members/:subject',
    { schema: { tags, params: MemberParams, body: MemberRequest, response: { 200: ProjectMemberResponse, 400: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse } } },
    async (request) => {
      const subject = normaliseSubject(request.params.subject);
      const member = await directory.setMember(request.params.project, subject, request.body.role, callerPrincipal(request).admin);
      request.log.info({ project: request.params.project, subject, role: member.role, by: callerName(request) }, 'project member set');
      return member;
    },
  );

  app.delete(
    '/projects/:project/members/:subject',
    { schema: { tags, params: MemberParams, response: { 204: Type.Null(), 400: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse } } },
    async (request, reply) => {
      const subject = normaliseSubject(request.params.subject);
      await directory.removeMember(request.params.project, subject, callerPrincipal(request).admin);
      request.log.info({ project: request.params.project, subject, by: callerName(request) }, 'project member removed');
      return reply.status(204).send(null);
    },
  );
}
