// Owns the unauthenticated routes: liveness, readiness (the store answers) and the OpenAPI
// document.

import { Type } from '../../core/typebox.js';
import type { ControlApp, ControlContext } from '../context.js';
import { PlatformError } from '../../core/errors.js';
import { StoreUnavailableError } from '../../store/store.js';
import { STORE_UNAVAILABLE } from '../errors.js';
import { ErrorResponse } from '../schemas.js';

const Health = (status: string) => Type.Object({ status: Type.Literal(status) }, { additionalProperties: false });

export function registerHealthRoutes(app: ControlApp, ctx: ControlContext): void {
  const config = { public: true };
  app.get('/healthz', { config, schema: { hide: true, response: { 200: Health('ok') } } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { config, schema: { hide: true, response: { 200: Health('ready'), 503: ErrorResponse } } }, async () => {
    try {
      await ctx.deps.store.ping();
    } catch (err) {
      throw new PlatformError('unavailable', err instanceof StoreUnavailableError ? STORE_UNAVAILABLE : `the store does not answer: ${(err as Error).message}`);
    }
    return { status: 'ready' };
  });
  app.get('/openapi.json', { config, schema: { hide: true } }, async () => app.swagger());
}
