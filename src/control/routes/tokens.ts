// Owns the vault routes: endpoint bearer tokens, whose value is shown once at creation, and
// their cap on the X-Priority class (max_priority), set at creation or by PATCH. Whoever may
// manage the project's tokens may raise a cap: it is the project's policy. Another project's
// token is answered as one that does not exist.

import { Type } from '../../core/typebox.js';
import type { ControlApp, ControlContext } from '../context.js';
import { listRecords, pageAnswer, PageQuery, PageResponse } from '../paging.js';
import { renderToken, type DeploymentBinding } from '../render.js';
import { callerName } from '../caller.js';
import { CredentialUpdateRequest, ErrorResponse, IdParams, TokenCreateRequest, TokenResponse } from '../schemas.js';

export function registerTokenRoutes(app: ControlApp, ctx: ControlContext): void {
  const tags = ['vault'];
  // The deployments bound to each token, from the record index (no deployment is read).
  const boundTo = async (project: string): Promise<(tokenId: number) => DeploymentBinding[]> => {
    const byToken = new Map<number, DeploymentBinding[]>();
    for (const d of (await ctx.index.current()).deployments(project)) {
      if (d.auth.token_id === null) continue;
      const list = byToken.get(d.auth.token_id);
      if (list) list.push(d);
      else byToken.set(d.auth.token_id, [d]);
    }
    return (tokenId) => byToken.get(tokenId) ?? [];
  };

  app.post('/vault/tokens', { schema: { tags, body: TokenCreateRequest, response: { 201: TokenResponse, 400: ErrorResponse } } }, async (request, reply) => {
    const { token, value } = await ctx.credentials.createToken(request.body.name, request.body.max_priority ?? null, request.project);
    request.log.info({ token: token.id, project: request.project, max_priority: token.max_priority ?? null, by: callerName(request) }, 'endpoint token created');
    return reply.status(201).send({ ...renderToken(token, []), token: value });
  });

  app.get('/vault/tokens', { schema: { tags, querystring: PageQuery, response: { 200: PageResponse(TokenResponse), 400: ErrorResponse } } }, async (request) => {
    const { records, page } = await listRecords(ctx.deps.store, ctx.index, 'token', request.query, 'vault/tokens', { project: request.project });
    const bound = await boundTo(request.project);
    return pageAnswer(records.map((t) => renderToken(t, bound(t.id))), page);
  });

  app.get('/vault/tokens/:id', { schema: { tags, params: IdParams, response: { 200: TokenResponse, 404: ErrorResponse } } }, async (request) => {
    const token = await ctx.credentials.getToken(request.params.id, request.project);
    return renderToken(token, (await boundTo(request.project))(token.id));
  });

  app.patch(
    '/vault/tokens/:id',
    { schema: { tags, params: IdParams, body: CredentialUpdateRequest, response: { 200: TokenResponse, 400: ErrorResponse, 404: ErrorResponse } } },
    async (request) => {
      const token = await ctx.credentials.setTokenMaxPriority(request.params.id, request.body.max_priority, request.project);
      request.log.info({ token: token.id, max_priority: token.max_priority ?? null, by: callerName(request) }, 'endpoint token cap changed');
      return renderToken(token, (await boundTo(request.project))(token.id));
    },
  );

  app.delete('/vault/tokens/:id', { schema: { tags, params: IdParams, response: { 204: Type.Null(), 404: ErrorResponse } } }, async (request, reply) => {
    await ctx.credentials.deleteToken(request.params.id, request.project);
    request.log.info({ token: request.params.id, by: callerName(request) }, 'endpoint token deleted');
    return reply.status(204).send(null);
  });
}
