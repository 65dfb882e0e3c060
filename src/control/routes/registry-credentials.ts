// Owns the vault's registry credentials: a username and password for a private image
// registry, kept sealed so deployments name them (registry_credential_id) instead of repeating
// them, and bound to the one registry host (`registry`) the password is ever sent to. The
// password is never returned, nor any part of it. A project's owner (or the admin) binds (or
// rebinds) a credential with PATCH; one in use by a deployment's current spec cannot be deleted
// (its next pull would fail), nor bound to a host its deployments' images are not pulled from.
// Credentials belong to a project: names are unique per project, and another project's
// credential is answered as one that does not exist.

import { Type } from '../../core/typebox.js';
import { isoNow } from '../../core/clock.js';
import { notFound, PlatformError } from '../../core/errors.js';
import type { DeploymentRecord, RegistryCredentialRecord } from '../../domain/records.js';
import { normaliseRegistryHost, registryHostOf, registryHostProblem } from '../../domain/registry-hosts.js';
import { ConflictError, modify } from '../../store/store.js';
import { callerName, uniqueKey } from '../caller.js';
import { projectOf } from '../../domain/access.js';
import { listRecords, pageAnswer, PageQuery, PageResponse } from '../paging.js';
import type { DeploymentEntry } from '../record-index.js';
import type { ControlApp, ControlContext } from '../context.js';
import { ErrorResponse, IdParams, RegistryCredentialCreateRequest, RegistryCredentialResponse, RegistryCredentialUpdateRequest } from '../schemas.js';

const NAME_INDEX = 'registry-credential-name';

/** A deployment as far as its registry credential goes: the record index's entry, or `pullsWith` of a record. */
type Puller = Pick<DeploymentEntry, 'id' | 'name' | 'registry'>;

/** What a stored deployment's current spec pulls with, as the record index keeps it. */
const pullsWith = (d: DeploymentRecord): Puller => ({
  id: d.id,
  name: d.name,
  registry: d.spec.family === 'general' && d.spec.registry_credential_id != null ? { credential_id: d.spec.registry_credential_id, host: registryHostOf(d.spec.image) } : null,
});

/** The deployments whose current spec pulls with `c`, with the registry host of their image. */
function usersOf(c: RegistryCredentialRecord, deployments: readonly Puller[]): { id: number; name: string; host: string }[] {
  return deployments.flatMap((d) => (d.registry?.credential_id === c.id ? [{ id: d.id, name: d.name, host: d.registry.host }] : []));
}

function render(c: RegistryCredentialRecord, deployments: readonly Puller[]) {
  return { id: c.id, name: c.name, username: c.username, registry: c.registry ?? null, created_at: c.created_at, deployments: usersOf(c, deployments).map((d) => d.id) };
}

/** The host a request gives, normalised; a 400 naming `registry` when it is not one. */
function registryHost(value: string): string {
  const problem = registryHostProblem(value);
  if (problem) throw new PlatformError('invalid_field', problem, { field: 'registry' });
  return normaliseRegistryHost(value);
}

export function registerRegistryCredentialRoutes(app: ControlApp, ctx: ControlContext): void {
  const tags = ['vault'];
  const { store } = ctx.deps;
  // Changes that must not leave a deployment without its credential read every deployment
  // from the store; answers that only show who uses one read the record index.
  // A credential is the project's, and so are the deployments that may pull with it.
  const deployments = async (project: string) => (await store.list('deployment')).filter((d) => projectOf(d.value) === project).map((d) => pullsWith(d.value));
  const indexed = async (project: string) => (await ctx.index.current()).deployments(project);
  const get = async (id: number, project: string) => {
    const found = await store.get('registry_credential', id);
    if (!found || projectOf(found.value) !== project) throw notFound('registry credential', id);
    return found.value;
  };

  app.post(
    '/vault/registry-credentials',
    { schema: { tags, body: RegistryCredentialCreateRequest, response: { 201: RegistryCredentialResponse, 400: ErrorResponse, 409: ErrorResponse } } },
    async (request, reply) => {
      const { name, username, password } = request.body;
      const { project } = request;
      const registry = registryHost(request.body.registry);
      // The password reaches the container engine: never a platform credential.
      if ((await ctx.credentials.authenticate(password)) !== undefined) {
        throw new PlatformError('invalid_field', 'password is a service-account key, a platform credential for the control API; it cannot be a registry password (it would reach the container engine)', { field: 'password' });
      }
      try {
        const created = await store.create(
          'registry_credential',
          (id) => ({ id, project, name, username, sealed_password: ctx.deps.sealer.seal(password), registry, created_at: isoNow(ctx.deps.clock) }),
          { unique: [{ index: NAME_INDEX, key: uniqueKey(project, name) }] },
        );
        request.log.info({ registry_credential: created.value.id, project, registry, by: callerName(request) }, 'registry credential created');
        return reply.status(201).send(render(created.value, []));
      } catch (err) {
        if (err instanceof ConflictError && err.index === NAME_INDEX) throw new PlatformError('conflict', `a registry credential named "${name}" already exists`, { field: 'name' });
        throw err;
      }
    },
  );

  app.get(
    '/vault/registry-credentials',
    { schema: { tags, querystring: PageQuery, response: { 200: PageResponse(RegistryCredentialResponse), 400: ErrorResponse } } },
    async (request) => {
      const { records, page } = await listRecords(store, ctx.index, 'registry_credential', request.query, 'vault/registry-credentials', { project: request.project });
      const all = await indexed(request.project);
      return pageAnswer(records.map((c) => render(c, all)), page);
    },
  );

  app.get('/vault/registry-credentials/:id', { schema: { tags, params: IdParams, response: { 200: RegistryCredentialResponse, 404: ErrorResponse } } }, async (request) =>
    render(await get(request.params.id, request.project), await indexed(request.project)),
  );

  // Owners (and the admin) only, by the rule table: whoever binds a credential chooses where its
  // password goes, and a developer may use credentials it cannot read.
  app.patch(
    '/vault/registry-credentials/:id',
    { schema: { tags, params: IdParams, body: RegistryCredentialUpdateRequest, response: { 200: RegistryCredentialResponse, 400: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse } } },
    async (request) => {
      const registry = registryHost(request.body.registry);
      const c = await get(request.params.id, request.project);
      const elsewhere = usersOf(c, await deployments(request.project)).filter((d) => d.host !== registry);
      if (elsewhere.length > 0) {
        const named = elsewhere.map((d) => `${d.name} (${d.host})`).join(', ');
        throw new PlatformError('conflict', `registry credential ${c.name} is used by ${named}, whose image is not pulled from ${registry}: point them at other credentials first (PATCH registry_credential_id), or bind it to their host`, { field: 'registry' });
      }
      const updated = (await modify(store, 'registry_credential', c.id, (current) => (current.registry === registry ? undefined : { ...current, registry }))).value;
      request.log.info({ registry_credential: c.id, registry, was: c.registry ?? null, by: callerName(request) }, 'registry credential bound to its registry host');
      return render(updated, await deployments(request.project));
    },
  );

  app.delete(
    '/vault/registry-credentials/:id',
    { schema: { tags, params: IdParams, response: { 204: Type.Null(), 404: ErrorResponse, 409: ErrorResponse } } },
    async (request, reply) => {
      const c = await get(request.params.id, request.project);
      const users = usersOf(c, await deployments(request.project));
      if (users.length > 0) {
        throw new PlatformError('conflict', `registry credential ${c.name} is used by ${users.map((d) => d.name).join(', ')}: point them at other credentials first (PATCH registry_credential_id)`);
      }
      await store.delete('registry_credential', c.id);
      request.log.info({ registry_credential: c.id, by: callerName(request) }, 'registry credential deleted');
      return reply.status(204).send(null);
    },
  );
}
