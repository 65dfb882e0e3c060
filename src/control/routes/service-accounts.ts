// Owns the service-account routes: platform credentials for automation, each inside one
// project with a role there (owner, developer, viewer), or the platform admin (no project).
// A project's owner creates and deletes its accounts; only the admin makes an admin account or
// one in another project, and the last admin cannot be deleted. The key is shown once, at
// creation. Lists and reads show the request's project's accounts (and, to the admin, the
// admin accounts); any other is answered as one that does not exist.

import { Type } from '../../core/typebox.js';
import { PlatformError } from '../../core/errors.js';
import type { ControlApp, ControlContext } from '../context.js';
import { callerName } from '../caller.js';
import { callerPrincipal } from '../principal.js';
import { listRecords, pageAnswer, PageQuery, PageResponse } from '../paging.js';
import { renderServiceAccount } from '../render.js';
import { ErrorResponse, IdParams, ServiceAccountCreateRequest, ServiceAccountResponse } from '../schemas.js';
import type { ServiceAccountRole } from '../../domain/records.js';

export function registerServiceAccountRoutes(app: ControlApp, ctx: ControlContext): void {
  const tags = ['service accounts'];

  app.post(
    '/service-accounts',
    { schema: { tags, body: ServiceAccountCreateRequest, response: { 201: ServiceAccountResponse, 400: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse } } },
    async (request, reply) => {
      const principal = callerPrincipal(request);
      const asked = request.body.role ?? 'developer';
      const role: ServiceAccountRole = asked === 'member' ? 'developer' : asked;
      const project = role === 'admin' ? null : (request.body.project ?? request.project);
      if (!principal.admin) {
        if (role === 'admin') throw new PlatformError('forbidden', 'only the platform admin may create an admin service account', { field: 'role' });
        if (project !== request.project) throw new PlatformError('forbidden', "only the platform admin may create a service account in another project than the request's", { field: 'project' });
      }
      if (project !== null && project !== request.project && !(await ctx.deployments.projectRecord(project))) {
        throw new PlatformError('invalid_field', `no project named ${project}; GET /projects lists them`, { field: 'project' });
      }
      const { account, key } = await ctx.credentials.createServiceAccount(request.body.name, role, undefined, project);
      request.log.info({ account: account.name, role: account.role, project, by: callerName(request) }, 'service account created');
      return reply.status(201).send({ ...renderServiceAccount(account), key });
    },
  );

  app.get(
    '/service-accounts',
    { schema: { tags, querystring: PageQuery, response: { 200: PageResponse(ServiceAccountResponse), 400: ErrorResponse, 403: ErrorResponse } } },
    async (request) => {
      const admins = callerPrincipal(request).admin;
      const { records, page } = await listRecords(ctx.deps.store, ctx.index, 'service_account', request.query, 'service-accounts', { project: request.project, admins });
      return pageAnswer(records.map(renderServiceAccount), page);
    },
  );

  app.get('/service-accounts/:id', { schema: { tags, params: IdParams, response: { 200: ServiceAccountResponse, 404: ErrorResponse } } }, async (request) =>
    renderServiceAccount(await ctx.credentials.getServiceAccount(request.params.id, request.project, callerPrincipal(request).admin)),
  );

  app.delete('/service-accounts/:id', { schema: { tags, params: IdParams, response: { 204: Type.Null(), 404: ErrorResponse, 409: ErrorResponse } } }, async (request, reply) => {
    await ctx.credentials.deleteServiceAccount(request.params.id, request.project, callerPrincipal(request).admin);
    request.log.info({ account: request.params.id, by: callerName(request) }, 'service account deleted');
    return reply.status(204).send(null);
  });
}
