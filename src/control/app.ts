// Owns the control API's HTTP application: fastify with TypeBox schemas, the platform
// credential check on every route but health, the OpenAPI document and the console's files
// (and only then `100 Continue`; a WebSocket may carry the key as a subprotocol entry), the
// 1 MiB body limit, strict integers in paths and queries, the error body
// `{"error": {"code", "message", "field"?}}` for every refusal (fastify's and Node's included),
// request logs without query values, and the OpenAPI document at /openapi.json.

import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import swagger from '@fastify/swagger';
import websocket from '@fastify/websocket';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Clock } from '../core/clock.js';
import { PlatformError } from '../core/errors.js';
import type { Sealer } from '../core/secrets.js';
import type { Catalog } from '../domain/catalog.js';
import type { HostCommandPolicy } from '../domain/host-commands.js';
import type { ImageMap } from '../domain/image-map.js';
import type { CertificateAuthority } from '../pki/ca.js';
import type { ServiceAccountRecord } from '../domain/records.js';
import type { Store } from '../store/store.js';
import type { LogSource } from '../domain/ports.js';
import { CertificateService } from './certificate-service.js';
import { defaultConsoleDir, registerConsoleAssets } from './console-assets.js';
import { Credentials } from './credentials.js';
import { DeploymentService, PROJECT_NAME_INDEX } from './deployment-service.js';
import { indexedStore, RecordIndex } from './record-index.js';
import { errorHandler } from './errors.js';
import { answerClientError, answerFrameworkError, closeIfBodyWithheld, continueAfterAuthentication, handleExpectations } from './http-edge.js';
import { requestLogView } from './request-log.js';
import { assertRecordInProject } from './record-scope.js';
import { serializerCompiler, validatorCompiler } from './schema-compilers.js';
import { BEARER_PROTOCOL_PREFIX, bearerFromProtocols, selectProtocol } from './websocket-auth.js';
import type { EndpointAddress } from './render.js';
import { registerCaRoutes } from './routes/ca.js';
import { registerCertificateRoutes } from './routes/certificates.js';
import { registerClusterRoutes } from './routes/clusters.js';
import { registerDeploymentRoutes } from './routes/deployments.js';
import { registerHealthRoutes } from './routes/health.js';
import { registerPresetRoutes } from './routes/presets.js';
import { registerServiceAccountRoutes } from './routes/service-accounts.js';
import { registerTokenRoutes } from './routes/tokens.js';
import { registerRegistryCredentialRoutes } from './routes/registry-credentials.js';
import { bindOlderRegistryCredentials, dropStoredHints } from './credential-upgrades.js';
import { upgradeToProjects } from './project-upgrades.js';
import { registerWhoamiRoutes } from './routes/whoami.js';
import { registerAuthRoutes } from './routes/auth.js';
import { registerProjectRoutes } from './routes/projects.js';
import { AuditLog } from './audit-log.js';
import { recordAudit } from './audit-hook.js';
import { registerAuditRoutes } from './routes/audit.js';
import { DEFAULT_PROJECT, PROJECT_NAME_PATTERN, ruleOfRoute, type RouteRule } from '../domain/access.js';
import { authorize, canSeeProject, hiddenProject, homeProject, PROJECT_HEADER, serviceAccountPrincipal, type Principal, type SessionAuthenticator } from './principal.js';
import { BODY_LIMIT, EMBEDDED_HOST_COMMANDS, type ControlApp, type ControlContext, type ControlDeps } from './context.js';

export { BODY_LIMIT, EMBEDDED_HOST_COMMANDS, type ControlApp, type ControlContext, type ControlDeps };
export type { ListenerTimeouts } from './context.js';

declare module 'fastify' {
  interface FastifyRequest {
    account: ServiceAccountRecord | null;
  }
  interface FastifyContextConfig {
    /** Routes anyone may call: health checks, the API description and the console's files. */
    public?: boolean;
    /** The route's rule from domain/access.ts, set when it is registered. */
    rule?: RouteRule;
  }
}

export async function buildControlApp(given: ControlDeps): Promise<ControlApp> {
  // Every write of the API goes through the store as the index sees it (record-index.ts).
  const index = new RecordIndex(given.store, given.catalog);
  const deps: ControlDeps = { ...given, store: indexedStore(given.store, index) };
  const t = deps.timeouts;
  // Headers must arrive in time (slow-loris) and idle keep-alive connections end; no request
  // timeout, since a log follow (SSE) or a terminal may rightly stay open for hours.
  const listener = t
    ? { headersTimeout: t.headersMs, connectionsCheckingInterval: Math.max(100, Math.min(5_000, Math.floor(t.headersMs / 4))), requestTimeout: 0 }
    : {};
  const options: FastifyServerOptions = {
    bodyLimit: BODY_LIMIT,
    ...(t ? { keepAliveTimeout: t.keepAliveMs, requestTimeout: 0, http: listener } : {}),
    // Request lines keep the path and the query's parameter names, never their values.
    ...(deps.logger ? { loggerInstance: deps.logger.child({}, { serializers: { req: requestLogView } }) } : { logger: false }),
    genReqId: () => crypto.randomUUID(),
    requestIdHeader: 'x-request-id',
    clientErrorHandler: answerClientError,
    frameworkErrors: answerFrameworkError,
    // fastify's 503 while closing has a body of its own; in-flight keep-alive requests are
    // served instead (with Connection: close) until the server has closed.
    return503OnClosing: false,
  };
  const app = (deps.https
    ? Fastify({ ...options, https: { ...deps.https, ...listener, ...(t ? { handshakeTimeout: t.tlsHandshakeMs } : {}) } } as FastifyServerOptions)
    : Fastify(options)
  ).withTypeProvider<TypeBoxTypeProvider>() as unknown as ControlApp;

  app.setValidatorCompiler(validatorCompiler());
  app.setSerializerCompiler(serializerCompiler());
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((request, reply) => {
    const err = new PlatformError('not_found', `no route ${request.method} ${request.url.split('?')[0]}`);
    void reply.status(404).send(err.toBody());
  });

  // The credential entry of Sec-WebSocket-Protocol must never be the protocol answered.
  await app.register(websocket, { options: { maxPayload: 1024 * 1024, handleProtocols: selectProtocol } });
  await app.register(swagger, {
    openapi: {
      info: { title: 'infergate control API', version: '1' },
      components: { securitySchemes: { serviceAccountKey: { type: 'http', scheme: 'bearer' } } },
      security: [{ serviceAccountKey: [] }],
    },
  });

  const certificates = new CertificateService(deps);
  const ctx: ControlContext = {
    deps,
    deployments: new DeploymentService({ ...deps, certificates, index, hostCommands: deps.hostCommands ?? EMBEDDED_HOST_COMMANDS }),
    credentials: new Credentials(deps.store, deps.clock),
    certificates,
    index,
    // The store itself: the API's view of it refuses every write of an audit entry.
    audit: new AuditLog(given.store, deps.clock, deps.logger),
  };
  app.addHook('onClose', async () => {
    index.close();
    await ctx.audit.close();
  });
  // Before any answer: a record from before secret variables keeps no registry key in plain env.
  let scrubbed = 0;
  await ctx.deployments.sealLegacySecretEnv().then(
    (n) => {
      scrubbed += n;
      if (n > 0) deps.logger?.info({ deployments: n }, 'sealed always-secret environment variables that older records kept in plain env');
    },
    (err: unknown) => deps.logger?.warn({ err }, 'sealing always-secret environment variables of older records failed; retried at the next start'),
  );
  // Before any answer too: an older vault registry credential is bound to its host or left
  // unused, and no record keeps a hint of a secret.
  await bindOlderRegistryCredentials(deps.store, deps.clock).then(
    ({ bound, unbound }) => {
      for (const c of bound) deps.logger?.info({ registry_credential: c.id, registry: c.registry }, `registry credential ${c.name} bound to ${c.registry}, the registry its deployments pull from`);
      for (const c of unbound) deps.logger?.warn({ registry_credential: c.id, deployments: c.deployments }, `registry credential ${c.name} is bound to no registry host and is not used until an admin binds it (PATCH /vault/registry-credentials/${c.id})`);
    },
    (err: unknown) => deps.logger?.warn({ err }, 'binding older registry credentials to their registry host failed; retried at the next start'),
  );
  await dropStoredHints(deps.store).then(
    (n) => {
      scrubbed += n;
      if (n > 0) deps.logger?.info({ records: n }, 'removed the hints (last characters of a secret) older credential records kept');
    },
    (err: unknown) => deps.logger?.warn({ err }, 'removing the hints older credential records kept failed; retried at the next start (they are never returned)'),
  );
  // Before any answer too: an installation from before projects is moved into `default`
  // (idempotent: a store already upgraded is only read).
  await upgradeToProjects(deps.store, deps.clock, deps.logger).catch((err: unknown) =>
    deps.logger?.error({ err }, 'moving records from before projects into the default project failed; they read as default meanwhile, and the upgrade is retried at the next start'),
  );
  // The values just replaced must not stay on disk in the store's history either.
  if (scrubbed > 0) await deps.store.compact?.().catch((err: unknown) => deps.logger?.warn({ err }, 'compacting the store after sealing older records failed; the replaced values stay on disk until its next compaction'));

  app.decorateRequest('account', null);
  app.decorateRequest('principal', null);
  app.decorateRequest('project', DEFAULT_PROJECT);
  handleExpectations(app.server);
  app.addHook('onRequest', async (request, reply) => {
    // Every answer is JSON, a stream or a console file with its own type: none may be sniffed as HTML.
    void reply.header('x-content-type-options', 'nosniff');
    const rule = request.routeOptions.config.rule;
    if (!request.routeOptions.config.public && rule !== 'auth') {
      try {
        const principal = await identify(ctx, request, given.sessions ?? null);
        request.principal = principal;
        request.project = await requestedProject(deps.store, request, principal);
      } catch (err) {
        closeIfBodyWithheld(request.raw, reply);
        throw err;
      }
    }
    continueAfterAuthentication(request.raw, reply.raw);
  });
  // Before the body is validated, so a role that may not call a route learns that first.
  app.addHook('preValidation', async (request) => {
    const rule = request.routeOptions.config.rule;
    if (rule === undefined || rule === 'public' || rule === 'auth') return;
    const params = request.params as { project?: unknown } | undefined;
    const project = typeof params?.project === 'string' ? params.project : request.project;
    authorize(request, rule, project);
    // Another project's record is a 404 before its body is looked at (record-scope.ts).
    await assertRecordInProject(deps.store, request);
  });
  // Every mutating and every refused call is written to the audit log before its answer leaves.
  recordAudit(app, ctx.audit);
  // Every route has a rule in the one table (domain/access.ts): one without is a start-up error.
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      const rule = ruleOfRoute(method === 'HEAD' ? 'GET' : method, route.url);
      if (rule === undefined) throw new Error(`route ${method} ${route.url} has no rule in ROUTE_RULES (src/domain/access.ts)`);
      route.config = { ...route.config, rule, public: rule === 'public' };
    }
  });

  registerHealthRoutes(app, ctx);
  registerDeploymentRoutes(app, ctx);
  registerTokenRoutes(app, ctx);
  registerRegistryCredentialRoutes(app, ctx);
  registerCertificateRoutes(app, ctx);
  registerCaRoutes(app, ctx);
  registerServiceAccountRoutes(app, ctx);
  registerClusterRoutes(app, ctx);
  registerPresetRoutes(app, ctx);
  registerWhoamiRoutes(app, ctx);
  registerAuthRoutes(app, ctx);
  registerProjectRoutes(app, ctx);
  registerAuditRoutes(app, ctx.audit);
  const consoleDir = deps.consoleDir === undefined ? defaultConsoleDir() : deps.consoleDir;
  if (consoleDir !== null) await registerConsoleAssets(app, consoleDir);
  return app;
}

/**
 * The key a request presents: `Authorization: Bearer <key>`, or — for a WebSocket upgrade
 * without that header, since a browser cannot set it there — the subprotocol entry
 * `base64url.bearer.infergate.<base64url(key)>`.
 */
function presentedKey(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (header === undefined && request.ws) {
    const offered = bearerFromProtocols(request.headers['sec-websocket-protocol']);
    if (offered.kind === 'key') return offered.key;
    if (offered.kind === 'malformed') throw new PlatformError('unauthenticated', offered.reason);
  }
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  if (!match?.[1]) {
    const browser = request.ws ? ` (from a browser's WebSocket: the subprotocol ${BEARER_PROTOCOL_PREFIX}<key in base64url>)` : '';
    throw new PlatformError('unauthenticated', `missing platform credential: send Authorization: Bearer <service-account key>${browser}`);
  }
  return match[1];
}

/**
 * Who is calling: a person's session (the console's cookie or a CLI's session token) when
 * people sign in here, else a service-account key. Sets `request.account` for a service account.
 */
async function identify(ctx: ControlContext, request: FastifyRequest, sessions: SessionAuthenticator | null): Promise<Principal> {
  const person = sessions ? await sessions.authenticate(request) : null;
  if (person) return person;
  const account = await authenticate(ctx.credentials, presentedKey(request));
  request.account = account;
  return serviceAccountPrincipal(account);
}

/**
 * The project a request acts in: the X-Infergate-Project header (a WebSocket upgrade's
 * `?project=`), else the caller's home project. A member names only projects it is in (which exist); the admin may name any, so a
 * name without a project is a 404 here rather than records made in a project nobody can list.
 */
async function requestedProject(store: Store, request: FastifyRequest, principal: Principal): Promise<string> {
  // A browser's WebSocket cannot set headers: an upgrade may name the project as ?project=.
  const query = request.ws ? (request.query as { project?: unknown } | undefined)?.project : undefined;
  const header = request.headers[PROJECT_HEADER] ?? (typeof query === 'string' ? query : undefined);
  if (header === undefined) return homeProject(principal);
  const name = Array.isArray(header) ? header[0] : header;
  if (!name || !PROJECT_NAME_PATTERN.test(name)) {
    throw new PlatformError('invalid_field', `${PROJECT_HEADER} must name a project: lowercase letters, digits and "-", starting with a letter`, { field: PROJECT_HEADER });
  }
  if (!canSeeProject(principal, name)) throw hiddenProject(name);
  if (principal.admin && name !== DEFAULT_PROJECT && (await store.lookup(PROJECT_NAME_INDEX, name))?.kind !== 'project') {
    throw hiddenProject(name);
  }
  return name;
}

/** A service-account key (docs/control-api.md); endpoint tokens never pass. */
async function authenticate(credentials: Credentials, key: string): Promise<ServiceAccountRecord> {
  const account = await credentials.authenticate(key);
  if (account) return account;
  if (await credentials.isEndpointToken(key)) {
    throw new PlatformError(
      'unauthenticated',
      'this is an endpoint bearer token; it protects a deployed endpoint and cannot call the platform API — use a service-account key',
    );
  }
  throw new PlatformError('unauthenticated', 'invalid platform credential');
}
