// Owns the service-account routes: platform credentials for automation. Admin only; the
// key is shown once at creation.

import { Type } from '../../core/typebox.js';
import type { ControlApp, ControlContext } from '../context.js';
import { requireAdmin } from '../caller.js';
import { listRecords, pageAnswer, PageQuery, PageResponse } from '../paging.js';
import { renderServiceAccount } from '../render.js';
import { ErrorResponse, IdParams, ServiceAccountCreateRequest, ServiceAccountResponse } from '../schemas.js';

export function registerServiceAccountRoutes(app: ControlApp, ctx: ControlContext): void {
  const tags = ['service accounts'];
  const adminOnly = { preHandler: async (request: { account: Parameters<typeof requireAdmin>[0] }) => requireAdmin(request.account) };

  app.post(
    '/service-accounts',
    { ...adminOnly, schema: { tags, body: ServiceAccountCreateRequest, response: { 201: ServiceAccountResponse, 403: ErrorResponse, 409: ErrorResponse } } },
    async (request, reply) => {
      const { account, key } = await ctx.credentials.createServiceAccount(request.body.name, request.body.role === 'admin' ? 'admin' : 'member');
      request.log.info({ account: account.name, role: account.role, by: request.account?.name }, 'service account created');
      return reply.status(201).send({ ...renderServiceAccount(account), key });
    },
  );

  app.get(
    '/service-accounts',
    { ...adminOnly, schema: { tags, querystring: PageQuery, response: { 200: PageResponse(ServiceAccountResponse), 400: ErrorResponse, 403: ErrorResponse } } },
    async (request) => {
      const { records, page } = await listRecords(ctx.deps.store, ctx.index, 'service_account', request.query, 'service-accounts');
      return pageAnswer(records.map(renderServiceAccount), page);
    },
  );

  app.get('/service-accounts/:id', { ...adminOnly, schema: { tags, params: IdParams, response: { 200: ServiceAccountResponse, 404: ErrorResponse } } }, async (request) =>
    renderServiceAccount(await ctx.credentials.getServiceAccount(request.params.id)),
  );

  app.delete('/service-accounts/:id', { ...adminOnly, schema: { tags, params: IdParams, response: { 204: Type.Null(), 404: ErrorResponse, 409: ErrorResponse } } }, async (request, reply) => {
    await ctx.credentials.deleteServiceAccount(request.params.id);
    request.log.info({ account: request.params.id, by: request.account?.name }, 'service account deleted');
    return reply.status(204).send(null);
  });
}
