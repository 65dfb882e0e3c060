// Owns the sign-in routes of people (OpenID Connect, src/identity/): GET /auth/config (public:
// whether the console shows "Sign in with …"), the console's GET /auth/login and
// /auth/callback, the CLI's device grant (POST /auth/device, POST /auth/device/token), refresh
// (POST /auth/token) and sign-out (POST /auth/logout). Without an identity provider
// configured, /auth/config says so and the others answer 404 naming the flag.

import { PlatformError } from '../../core/errors.js';
import { Type } from '../../core/typebox.js';
import { DevicePending, type IdentityService } from '../../identity/identity.js';
import type { ControlApp, ControlContext } from '../context.js';
import { DeviceResponse } from '../../domain/api-views.js';
import { ErrorResponse } from '../schemas.js';

const AuthConfigResponse = Type.Object(
  {
    enabled: Type.Boolean(),
    provider_name: Type.Union([Type.String(), Type.Null()]),
    login_url: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
);

const CliSessionResponse = Type.Object(
  {
    session_token: Type.String({ description: 'igs_…: the Bearer credential until expires_at' }),
    refresh_token: Type.String({ description: 'igr_…: for POST /auth/token; replaced at every refresh' }),
    expires_at: Type.String(),
    user: Type.Object({ id: Type.Integer(), email: Type.Union([Type.String(), Type.Null()]), name: Type.Union([Type.String(), Type.Null()]), groups: Type.Array(Type.String()) }),
  },
  { additionalProperties: false },
);

const Redirect = Type.Null({ description: 'a redirect (Location)' });

export function registerAuthRoutes(app: ControlApp, ctx: ControlContext): void {
  const tags = ['sign-in'];
  const identity = (): IdentityService => {
    const found = ctx.deps.identity;
    if (!found) throw new PlatformError('not_found', 'sign-in through an identity provider is not configured on this service (infergate serve --oidc-issuer …)');
    return found;
  };

  app.get('/auth/config', { schema: { tags, security: [], response: { 200: AuthConfigResponse } } }, async () => {
    const found = ctx.deps.identity;
    return found ? { enabled: true, provider_name: found.settings.providerName, login_url: '/auth/login' } : { enabled: false, provider_name: null, login_url: null };
  });

  app.get('/auth/login', { schema: { tags, security: [], response: { 302: Redirect, 404: ErrorResponse, 503: ErrorResponse } } }, async (_request, reply) => {
    const { location, cookie } = await identity().beginLogin();
    return reply.header('set-cookie', cookie).header('cache-control', 'no-store').redirect(location, 302);
  });

  app.get('/auth/callback', { schema: { tags, security: [], response: { 302: Redirect, 404: ErrorResponse, 503: ErrorResponse } } }, async (request, reply) => {
    const { location, cookies } = await identity().finishLogin(request);
    return reply.header('set-cookie', cookies).header('cache-control', 'no-store').redirect(location, 302);
  });

  app.post('/auth/device', { schema: { tags, security: [], response: { 200: DeviceResponse, 404: ErrorResponse, 503: ErrorResponse } } }, async () => identity().startDevice());

  app.post(
    '/auth/device/token',
    {
      schema: {
        tags,
        security: [],
        body: Type.Object({ device_code: Type.String({ minLength: 1, maxLength: 4096 }) }, { additionalProperties: false }),
        response: { 200: CliSessionResponse, 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse, 503: ErrorResponse },
      },
    },
    async (request, reply) => {
      try {
        return await identity().pollDevice(request, request.body.device_code);
      } catch (err) {
        // RFC 8628's answers while the person has not confirmed: 400 with the error code.
        if (err instanceof DevicePending) return reply.status(400).send({ error: { code: err.code, message: err.message } });
        throw err;
      }
    },
  );

  app.post(
    '/auth/token',
    {
      schema: {
        tags,
        security: [],
        body: Type.Object({ refresh_token: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false }),
        response: { 200: CliSessionResponse, 401: ErrorResponse, 404: ErrorResponse, 503: ErrorResponse },
      },
    },
    async (request) => identity().refresh(request, request.body.refresh_token),
  );

  app.post('/auth/logout', { schema: { tags, response: { 204: Type.Null(), 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse } } }, async (request, reply) => {
    const cookie = await identity().signOut(request);
    return reply.status(204).header('set-cookie', cookie).header('cache-control', 'no-store').send(null);
  });
}
