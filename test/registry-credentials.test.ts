// The vault's registry credentials through the control API: created with a sealed password
// that no answer and no store file shows (nor any part of it), bound to the one registry host
// the password is ever sent to; named by deployments (registry_credential_id) only for an image
// pulled from that host; bound again only by an admin; not deletable while a deployment's
// current spec uses them. A clone or PATCH that moves an image to another registry host drops
// the credentials it inherits, and asks for new ones or null. Where images run in containers,
// an image on a host the daemon may not contact (loopback, link-local, this service's own
// listeners, unless --registries lists it) is refused with a 400 naming `image`. At start-up,
// older credentials are bound to the host their deployments pull from, or left unbound with
// an event, and the hints older records kept are removed.

import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileStore } from '../src/store/file-store.js';
import { modify } from '../src/store/store.js';
import { HostRegistryGate } from '../src/net/registry-gate.js';
import { ADMIN_KEY, generalBody, startControl, type TestControl } from './helpers/control.js';

const PASSWORD = 'vault-registry-password-0123456789';
/** The password's last four characters, which answers once showed as its "hint". */
const TAIL = PASSWORD.slice(-4);
const TEAM_REGISTRY = 'registry.example.com:5000';
/** This service's metrics port, as the gate knows it. */
const METRICS_PORT = 9464;
/** Images run in containers here: the registry rules that protect the daemon apply. */
const CONTAINERS = { sandboxed: true, allowUnsandboxed: false, allowMembers: false, containers: true };
/** A name that resolves to loopback (as a DNS record an attacker controls would). */
const RESOLVES_TO_LOOPBACK = 'loopback.attacker.example';

let api: TestControl;
let memberKey: string;

beforeAll(async () => {
  api = await startControl({
    gpuQuota: 10_000,
    hostCommands: CONTAINERS,
    registries: new HostRegistryGate({
      listed: ['127.0.0.1:5000', '*'],
      ports: [METRICS_PORT],
      resolve: (name) => Promise.resolve(name === RESOLVES_TO_LOOPBACK ? ['127.0.0.1'] : ['203.0.113.10']),
      addresses: () => ['127.0.0.1', '::1', '10.0.0.5'],
    }),
  });
  const member = await api.call('POST', '/service-accounts', { name: 'registry-member', role: 'member' });
  memberKey = member.body.key;
});
afterAll(async () => {
  await api?.close();
});

/** Every file the store wrote, as text. */
async function storeText(store: FileStore): Promise<string> {
  const dir = (store as unknown as { dir: string }).dir;
  const names = await readdir(dir, { recursive: true });
  const texts = await Promise.all(names.map((n) => readFile(path.join(dir, String(n)), 'utf8').catch(() => '')));
  return texts.join('\n');
}

/** A general deployment pulled from `image` (its own entrypoint, in a container). */
const pulled = (name: string, image: string, extra: Record<string, unknown> = {}) => ({ ...generalBody(name, `tok-${name}-0123456789`), image, tag: 'v1', command: [], max_replicas: 1, ...extra });

describe('registry credentials in the vault', () => {
  let credentialId: number;

  it('are created bound to a registry host, with the password sealed: no answer shows it or any part of it', async () => {
    const created = await api.call('POST', '/vault/registry-credentials', { name: 'team-registry', username: 'team', password: PASSWORD, registry: 'Registry.Example.com:5000' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: expect.any(Number), name: 'team-registry', username: 'team', registry: TEAM_REGISTRY, created_at: expect.any(String), deployments: [] });
    credentialId = created.body.id;
    const listed = await api.call('GET', '/vault/registry-credentials');
    expect(listed.body.items.map((c: { name: string }) => c.name)).toEqual(['team-registry']);
    expect(JSON.stringify(listed.body)).not.toContain(TAIL);
    expect(await storeText(api.store as FileStore)).not.toContain(PASSWORD);
    expect((await api.call('POST', '/vault/registry-credentials', { name: 'team-registry', username: 'x', password: 'y', registry: 'r.example' })).status).toBe(409);
    expect((await api.call('POST', '/vault/registry-credentials', { name: 'no-password', username: 'x', registry: 'r.example' })).status).toBe(400);
    const platformKey = await api.call('POST', '/vault/registry-credentials', { name: 'platform-key', username: 'x', password: ADMIN_KEY, registry: 'r.example' });
    expect(platformKey.status).toBe(400);
    expect(platformKey.body.error).toMatchObject({ field: 'password', message: expect.stringMatching(/service-account key/) });
  });

  it('need a registry host, host[:port]; Docker Hub under any of its names is docker.io', async () => {
    const missing = await api.call('POST', '/vault/registry-credentials', { name: 'no-host', username: 'x', password: 'p' });
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toMatch(/registry/);
    for (const [registry, message] of [
      ['https://registry.example.com', /without a scheme or a path/],
      ['registry.example.com/team', /without a scheme or a path/],
      ['myregistry', /Docker Hub namespace/],
      ['127.1:5000', /four decimal numbers/],
    ] as const) {
      const refused = await api.call('POST', '/vault/registry-credentials', { name: 'bad-host', username: 'x', password: 'p', registry });
      expect(refused.status, registry).toBe(400);
      expect(refused.body.error).toMatchObject({ field: 'registry', message: expect.stringMatching(message) });
    }
    const hub = await api.call('POST', '/vault/registry-credentials', { name: 'hub', username: 'x', password: 'p', registry: 'index.docker.io' });
    expect(hub.body.registry).toBe('docker.io');
  });

  it('a deployment names them only for an image pulled from their host; an unknown id, or both, is refused', async () => {
    const unknown = await api.call('POST', '/deployments/general', { ...pulled('cred-unknown', `${TEAM_REGISTRY}/team/engine`), registry_credential_id: 999 });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatchObject({ field: 'registry_credential_id', message: expect.stringMatching(/not in the vault/) });
    const both = await api.call('POST', '/deployments/general', { ...pulled('cred-both', `${TEAM_REGISTRY}/team/engine`), registry_credential_id: credentialId, registry_username: 'team', registry_password: 'other' });
    expect(both.status).toBe(400);
    expect(both.body.error.message).toMatch(/not both/);
    // The attack: a member names the vault's credential with an image on a host of its choosing.
    for (const image of ['127.0.0.1:5000/corp/engine', 'attacker.example/corp/engine', 'corp/engine']) {
      const elsewhere = await api.call('POST', '/deployments/general', { ...pulled('cred-elsewhere', image), registry_credential_id: credentialId }, memberKey);
      expect(elsewhere.status, image).toBe(400);
      expect(elsewhere.body.error).toMatchObject({ field: 'registry_credential_id', message: expect.stringMatching(new RegExp(`is for the registry ${TEAM_REGISTRY}, and image ${image} is pulled from`)) });
    }
    const ok = await api.call('POST', '/deployments/general', { ...pulled('cred-ok', `${TEAM_REGISTRY}/team/engine`), registry_credential_id: credentialId }, memberKey);
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    expect(ok.body).toMatchObject({ registry_credential_id: credentialId, registry_username: null, has_registry_password: false });
    expect((await api.call('GET', `/vault/registry-credentials/${credentialId}`)).body.deployments).toEqual([ok.body.id]);
  });

  it('are bound again by an owner or the admin only (not a developer), and never to a host their deployments do not pull from', async () => {
    const byMember = await api.call('PATCH', `/vault/registry-credentials/${credentialId}`, { registry: 'attacker.example' }, memberKey);
    expect(byMember.status).toBe(403);
    expect(byMember.body.error.message).toMatch(/only owners may bind a registry credential to its registry host; you are a developer/);
    const inUse = await api.call('PATCH', `/vault/registry-credentials/${credentialId}`, { registry: 'attacker.example' });
    expect(inUse.status).toBe(409);
    expect(inUse.body.error.message).toMatch(new RegExp(`used by cred-ok \\(${TEAM_REGISTRY}\\), whose image is not pulled from attacker\\.example`));
    expect((await api.call('PATCH', `/vault/registry-credentials/${credentialId}`, { registry: 'bad host' })).status).toBe(400);
    const same = await api.call('PATCH', `/vault/registry-credentials/${credentialId}`, { registry: TEAM_REGISTRY.toUpperCase() });
    expect(same.status).toBe(200);
    expect(same.body.registry).toBe(TEAM_REGISTRY);
  });

  it('cannot be deleted while a deployment uses them; can once it points elsewhere', async () => {
    const d = (await api.call('GET', '/deployments/general')).body.items.find((x: { name: string }) => x.name === 'cred-ok');
    const refused = await api.call('DELETE', `/vault/registry-credentials/${credentialId}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toMatch(/used by cred-ok/);
    const switched = await api.call('PATCH', `/deployments/general/${d.id}`, { registry_credential_id: null, registry_username: 'team', registry_password: 'own-password' });
    expect(switched.status).toBe(200);
    expect(switched.body).toMatchObject({ registry_credential_id: null, registry_username: 'team', has_registry_password: true });
    expect((await api.call('DELETE', `/vault/registry-credentials/${credentialId}`)).status).toBe(204);
    expect((await api.call('GET', `/vault/registry-credentials/${credentialId}`)).status).toBe(404);
  });
});

describe('credentials of a deployment whose image moves to another registry host', () => {
  let own: number;
  let vaulted: number;

  beforeAll(async () => {
    const created = await api.call('POST', '/deployments/general', pulled('move-own', `${TEAM_REGISTRY}/team/engine`, { registry_username: 'bob', registry_password: 'bobs-password' }), memberKey);
    expect(created.status).toBe(201);
    own = created.body.id;
    const robot = await api.call('POST', '/vault/registry-credentials', { name: 'move-robot', username: 'robot', password: 'robot-password', registry: TEAM_REGISTRY });
    const withVault = await api.call('POST', '/deployments/general', pulled('move-vault', `${TEAM_REGISTRY}/team/engine`, { registry_credential_id: robot.body.id }), memberKey);
    expect(withVault.status).toBe(201);
    vaulted = withVault.body.id;
  });

  it('a PATCH that names no credential is refused, naming each inherited field and what to do', async () => {
    const moved = await api.call('PATCH', `/deployments/general/${own}`, { image: 'other.example/team/engine' }, memberKey);
    expect(moved.status).toBe(400);
    expect(moved.body.error.field).toBe('registry_username');
    expect(moved.body.error.details.map((p: { field: string }) => p.field)).toEqual(['registry_username', 'registry_password']);
    expect(moved.body.error.message).toBe(
      "the image moves from the registry registry.example.com:5000 to other.example, and the credentials of registry.example.com:5000 (registry_username and registry_password) are not sent to other.example: give other.example's (registry_credential_id, or registry_username and registry_password), or set registry_username and registry_password to null to pull without",
    );
    const fromVault = await api.call('PATCH', `/deployments/general/${vaulted}`, { image: 'other.example/team/engine' }, memberKey);
    expect(fromVault.status).toBe(400);
    expect(fromVault.body.error).toMatchObject({ field: 'registry_credential_id', message: expect.stringMatching(/credentials of registry\.example\.com:5000 \(registry_credential_id\) are not sent to other\.example/) });
    // The same host keeps them: a new tag or image there is no move.
    const sameHost = await api.call('PATCH', `/deployments/general/${own}`, { image: `${TEAM_REGISTRY}/team/engine-2` }, memberKey);
    expect(sameHost.status).toBe(200);
    expect(sameHost.body).toMatchObject({ registry_username: 'bob', has_registry_password: true });
  });

  it('a clone onto another host is refused the same way; with null it pulls without them, with new ones it uses those', async () => {
    const refused = await api.call('POST', `/deployments/general/${own}/clone`, { name: 'move-clone', endpoint_bearer_token: 'tok-move-clone-0123456789', image: 'other.example/team/engine' }, memberKey);
    expect(refused.status).toBe(400);
    expect(refused.body.error.details.map((p: { field: string }) => p.field)).toEqual(['registry_username', 'registry_password']);
    const without = await api.call(
      'POST',
      `/deployments/general/${own}/clone`,
      { name: 'move-clone', endpoint_bearer_token: 'tok-move-clone-0123456789', image: 'other.example/team/engine', registry_username: null, registry_password: null },
      memberKey,
    );
    expect(without.status, JSON.stringify(without.body)).toBe(201);
    expect(without.body).toMatchObject({ image: 'other.example/team/engine', registry_username: null, has_registry_password: false, registry_credential_id: null });
    // Naming only a new username drops the inherited password too: it was for the other host.
    const halfPair = await api.call('POST', `/deployments/general/${own}/clone`, { name: 'move-half', endpoint_bearer_token: 'tok-move-half-0123456789', image: 'other.example/team/engine', registry_username: 'carol' }, memberKey);
    expect(halfPair.status).toBe(400);
    expect(halfPair.body.error).toMatchObject({ field: 'registry_password', message: expect.stringMatching(/registry_password is required with registry_username/) });
    const fresh = await api.call(
      'POST',
      `/deployments/general/${own}/clone`,
      { name: 'move-fresh', endpoint_bearer_token: 'tok-move-fresh-0123456789', image: 'other.example/team/engine', registry_username: 'carol', registry_password: 'carols-password' },
      memberKey,
    );
    expect(fresh.status).toBe(201);
    expect(fresh.body).toMatchObject({ registry_username: 'carol', has_registry_password: true });
    // A clone on the same host keeps the source's pair.
    const sameHost = await api.call('POST', `/deployments/general/${own}/clone`, { name: 'move-same', endpoint_bearer_token: 'tok-move-same-0123456789' }, memberKey);
    expect(sameHost.body).toMatchObject({ registry_username: 'bob', has_registry_password: true });
  });

  it('a PATCH with null moves without credentials, and the sealed password is gone', async () => {
    const moved = await api.call('PATCH', `/deployments/general/${own}`, { image: 'other.example/team/engine', registry_username: null, registry_password: null }, memberKey);
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ image: 'other.example/team/engine', registry_username: null, has_registry_password: false });
    const stored = (await api.store.get('deployment', own))?.value;
    expect(stored?.spec.secrets.registry_password).toBeUndefined();
    const vaultMoved = await api.call('PATCH', `/deployments/general/${vaulted}`, { image: 'other.example/team/engine', registry_credential_id: null }, memberKey);
    expect(vaultMoved.body).toMatchObject({ registry_credential_id: null });
  });
});

describe('registry hosts the daemon may be sent to, where images run in containers', () => {
  it.each([
    [`127.0.0.1:${METRICS_PORT}/metrics`, /this service's own listener \(port 9464/],
    ['127.0.0.1:19555/corp/engine', /is this host \(loopback\): the service pulls from such a host only when the operator lists it exactly in --registries/],
    ['localhost:5000/corp/engine', /loopback/],
    ['[::1]:5000/corp/engine', /loopback/],
    ['169.254.169.254/latest/meta-data', /link-local/],
    [`${RESOLVES_TO_LOOPBACK}:5000/corp/engine`, /loopback/],
    ['10.0.0.5:9464/x', /own listener/],
  ])('%s is a 400 naming image', async (image, message) => {
    const refused = await api.call('POST', '/deployments/general', pulled('gate-refused', image), memberKey);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ field: 'image', message: expect.stringMatching(message) });
  });

  it('a listed loopback registry, and any public one, are taken; a PATCH or clone onto a refused host is refused too', async () => {
    const listed = await api.call('POST', '/deployments/general', pulled('gate-listed', '127.0.0.1:5000/corp/engine'), memberKey);
    expect(listed.status).toBe(201);
    const open = await api.call('POST', '/deployments/general', pulled('gate-public', 'registry.public.example/corp/engine'), memberKey);
    expect(open.status).toBe(201);
    const patched = await api.call('PATCH', `/deployments/general/${open.body.id}`, { image: `127.0.0.1:${METRICS_PORT}/metrics` }, memberKey);
    expect(patched.status).toBe(400);
    expect(patched.body.error.field).toBe('image');
    const cloned = await api.call('POST', `/deployments/general/${open.body.id}/clone`, { name: 'gate-clone', endpoint_bearer_token: 'tok-gate-clone-0123456789', image: '127.0.0.1:6379/redis' }, memberKey);
    expect(cloned.status).toBe(400);
    expect(cloned.body.error.field).toBe('image');
    // infergate's own engine is never pulled: no registry to judge.
    const engine = await api.call('POST', '/deployments/general', generalBody('gate-engine', 'tok-gate-engine-0123456789'), memberKey);
    expect(engine.status, JSON.stringify(engine.body)).toBe(201);
  });
});

describe('credential records from older versions, at start-up', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-regcred-upgrade-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a credential is bound to the one host its deployments pull from, or left unbound (not used) with an event on each deployment', async () => {
    const first = await startControl({ store: new FileStore({ dir }), hostCommands: CONTAINERS });
    const cred = async (name: string, registry: string) => (await first.call('POST', '/vault/registry-credentials', { name, username: name, password: `${name}-password-WXYZ`, registry })).body.id as number;
    const [agreed, split, unused] = [await cred('agreed', 'a.example'), await cred('split', 'a.example'), await cred('unused', 'a.example')];
    const other = await cred('other', 'b.example');
    const deploy = async (name: string, image: string, credential: number) => {
      const created = await first.call('POST', '/deployments/general', pulled(name, image, { registry_credential_id: credential }));
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      return created.body.id as number;
    };
    await deploy('up-agreed-1', 'a.example/team/x', agreed);
    await deploy('up-agreed-2', 'A.example/team/y', agreed);
    const splitA = await deploy('up-split-a', 'a.example/team/x', split);
    const splitB = await deploy('up-split-b', 'b.example/team/x', other);
    const token = await first.call('POST', '/vault/tokens', { name: 'up-token' });
    // What an older version wrote: no `registry` on credentials, one credential used on two hosts, and hints of secrets.
    const store = first.store;
    await modify(store, 'deployment', splitB, (d) => {
      if (d.spec.family !== 'general') return undefined;
      const spec = { ...d.spec, registry_credential_id: split };
      return { ...d, spec, revisions: d.revisions.map((r) => ({ ...r, spec })) };
    });
    for (const id of [agreed, split, unused, other]) await modify(store, 'registry_credential', id, ({ registry: _bound, ...c }) => ({ ...c, hint: '…WXYZ' }));
    await modify(store, 'token', token.body.id, (t) => ({ ...t, hint: `…${token.body.token.slice(-4)}` }));
    for (const a of await store.list('service_account')) await modify(store, 'service_account', a.value.id, (v) => ({ ...v, hint: '…cdef' }));
    await first.close();

    const second = await startControl({ store: new FileStore({ dir }), hostCommands: CONTAINERS });
    try {
      const byName = new Map(((await second.call('GET', '/vault/registry-credentials')).body.items as { name: string; registry: string | null }[]).map((c) => [c.name, c.registry]));
      expect(Object.fromEntries(byName)).toEqual({ agreed: 'a.example', split: null, unused: null, other: null });
      const events = async (id: number) => (await second.call('GET', `/deployments/general/${id}/events`)).body.items as { reason: string; type: string; message: string }[];
      for (const id of [splitA, splitB]) {
        expect(await events(id)).toContainEqual(
          expect.objectContaining({ reason: 'RegistryCredentialUnbound', type: 'warning', message: expect.stringMatching(/registry credential "split" .* is bound to no registry host, so it is not used: an admin must bind it .*\(its deployments pull from a\.example and b\.example\); the image is pulled without it/) }),
        );
      }
      // Unbound: not used for a new deployment, and the 400 says an admin must bind it.
      const refused = await second.call('POST', '/deployments/general', pulled('up-new', 'a.example/team/x', { registry_credential_id: unused }));
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatchObject({ field: 'registry_credential_id', message: expect.stringMatching(/bound to no registry host.*an admin must bind it/) });
      // Scaling a deployment that names it is not refused: only naming it is.
      expect((await second.call('PATCH', `/deployments/general/${splitA}`, { max_replicas: 3 })).status).toBe(200);
      // An admin binds it; then it is used again.
      expect((await second.call('PATCH', `/vault/registry-credentials/${unused}`, { registry: 'a.example' })).status).toBe(200);
      expect((await second.call('POST', '/deployments/general', pulled('up-new', 'a.example/team/x', { registry_credential_id: unused }))).status).toBe(201);
      // No hint of a secret is left, in the store or in an answer.
      for (const kind of ['registry_credential', 'token', 'service_account'] as const) {
        for (const { value } of await second.store.list(kind)) expect(Object.keys(value), kind).not.toContain('hint');
      }
      const answers = await Promise.all(['/vault/tokens', '/service-accounts', '/vault/registry-credentials'].map(async (p) => JSON.stringify((await second.call('GET', p)).body)));
      for (const text of answers) expect(text).not.toMatch(/hint|WXYZ|cdef/);
      expect(answers.join('')).not.toContain(token.body.token.slice(-4));
    } finally {
      await second.close();
    }
  });
});
