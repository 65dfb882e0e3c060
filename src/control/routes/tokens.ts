// Owns the vault routes: endpoint bearer tokens, whose value is shown once at creation.

import { Type } from 'typebox';
import type { ControlApp, ControlContext } from '../context.js';
import { renderToken } from '../render.js';
import { ErrorResponse, IdParams, TokenCreateRequest, TokenResponse } from '../schemas.js';

export function registerTokenRoutes(app: ControlApp, ctx: ControlContext): void {
  const tags = ['vault'];
  const deployments = async () => (await ctx.deps.store.list('deployment')).map((d) => d.value);

  app.post('/vault/tokens', { schema: { tags, body: TokenCreateRequest, response: { 201: TokenResponse, 400: ErrorResponse } } }, async (request, reply) => {
    const { token, value } = await ctx.credentials.createToken(request.body.name);
    request.log.info({ token: token.id, by: request.account?.name }, 'endpoint token created');
    return reply.status(201).send({ ...renderToken(token, []), token: value });
  });

  app.get('/vault/tokens', { schema: { tags, response: { 200: Type.Object({ items: Type.Array(TokenResponse) }) } } }, async () => {
    const all = await deployments();
    return { items: (await ctx.credentials.listTokens()).map((t) => renderToken(t, all)) };
  });

  app.get('/vault/tokens/:id', { schema: { tags, params: IdParams, response: { 200: TokenResponse, 404: ErrorResponse } } }, async (request) =>
    renderToken(await ctx.credentials.getToken(request.params.id), await deployments()),
  );

  app.delete('/vault/tokens/:id', { schema: { tags, params: IdParams, response: { 204: Type.Null(), 404: ErrorResponse } } }, async (request, reply) => {
    await ctx.credentials.deleteToken(request.params.id);
    request.log.info({ token: request.params.id, by: request.account?.name }, 'endpoint token deleted');
    return reply.status(204).send(null);
  });
}
