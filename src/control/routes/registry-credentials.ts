// Owns the vault's registry credentials: a username and password for a private image
// registry, kept sealed so deployments name them (registry_credential_id) instead of repeating
// them. The password is never returned, only its last four characters. One in use by a
// deployment's current spec cannot be deleted: its next pull would fail.

import { Type } from '../../core/typebox.js';
import { isoNow } from '../../core/clock.js';
import { notFound, PlatformError } from '../../core/errors.js';
import { hintOf } from '../../core/secrets.js';
import type { DeploymentRecord, RegistryCredentialRecord } from '../../domain/records.js';
import { ConflictError } from '../../store/store.js';
import type { ControlApp, ControlContext } from '../context.js';
import { ErrorResponse, IdParams, RegistryCredentialCreateRequest, RegistryCredentialResponse } from '../schemas.js';

const NAME_INDEX = 'registry-credential-name';

function usedBy(c: RegistryCredentialRecord, deployments: DeploymentRecord[]): number[] {
  return deployments.filter((d) => d.spec.family === 'general' && d.spec.registry_credential_id === c.id).map((d) => d.id);
}

function render(c: RegistryCredentialRecord, deployments: DeploymentRecord[]) {
  return { id: c.id, name: c.name, username: c.username, hint: c.hint, created_at: c.created_at, deployments: usedBy(c, deployments) };
}

export function registerRegistryCredentialRoutes(app: ControlApp, ctx: ControlContext): void {
  const tags = ['vault'];
  const { store } = ctx.deps;
  const deployments = async () => (await store.list('deployment')).map((d) => d.value);
  const get = async (id: number) => {
    const found = await store.get('registry_credential', id);
    if (!found) throw notFound('registry credential', id);
    return found.value;
  };

  app.post(
    '/vault/registry-credentials',
    { schema: { tags, body: RegistryCredentialCreateRequest, response: { 201: RegistryCredentialResponse, 400: ErrorResponse, 409: ErrorResponse } } },
    async (request, reply) => {
      const { name, username, password } = request.body;
      // The password reaches the container engine: never a platform credential.
      if ((await ctx.credentials.authenticate(password)) !== undefined) {
        throw new PlatformError('invalid_field', 'password is a service-account key, a platform credential for the control API; it cannot be a registry password (it would reach the container engine)', { field: 'password' });
      }
      try {
        const created = await store.create(
          'registry_credential',
          (id) => ({ id, name, username, sealed_password: ctx.deps.sealer.seal(password), hint: hintOf(password), created_at: isoNow(ctx.deps.clock) }),
          { unique: [{ index: NAME_INDEX, key: name }] },
        );
        request.log.info({ registry_credential: created.value.id, by: request.account?.name }, 'registry credential created');
        return reply.status(201).send(render(created.value, []));
      } catch (err) {
        if (err instanceof ConflictError && err.index === NAME_INDEX) throw new PlatformError('conflict', `a registry credential named "${name}" already exists`, { field: 'name' });
        throw err;
      }
    },
  );

  app.get('/vault/registry-credentials', { schema: { tags, response: { 200: Type.Object({ items: Type.Array(RegistryCredentialResponse) }) } } }, async () => {
    const all = await deployments();
    return { items: (await store.list('registry_credential')).map((c) => render(c.value, all)) };
  });

  app.get('/vault/registry-credentials/:id', { schema: { tags, params: IdParams, response: { 200: RegistryCredentialResponse, 404: ErrorResponse } } }, async (request) =>
    render(await get(request.params.id), await deployments()),
  );

  app.delete(
    '/vault/registry-credentials/:id',
    { schema: { tags, params: IdParams, response: { 204: Type.Null(), 404: ErrorResponse, 409: ErrorResponse } } },
    async (request, reply) => {
      const c = await get(request.params.id);
      const all = await deployments();
      const users = usedBy(c, all);
      if (users.length > 0) {
        const names = all.filter((d) => users.includes(d.id)).map((d) => d.name);
        throw new PlatformError('conflict', `registry credential ${c.name} is used by ${names.join(', ')}: point them at other credentials first (PATCH registry_credential_id)`);
      }
      await store.delete('registry_credential', c.id);
      request.log.info({ registry_credential: c.id, by: request.account?.name }, 'registry credential deleted');
      return reply.status(204).send(null);
    },
  );
}
