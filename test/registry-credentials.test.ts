// The vault's registry credentials through the control API: created with a sealed password
// that no answer and no store file shows, named by deployments (registry_credential_id)
// instead of a username and password, refused when unknown or given with the pair, and not
// deletable while a deployment's current spec uses them.

import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FileStore } from '../src/store/file-store.js';
import { ADMIN_KEY, generalBody, startControl, type TestControl } from './helpers/control.js';

const PASSWORD = 'vault-registry-password-0123456789';
let api: TestControl;

beforeAll(async () => {
  api = await startControl();
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

describe('registry credentials in the vault', () => {
  let credentialId: number;

  it('are created with the password sealed: answers show its last four characters, never the password', async () => {
    const created = await api.call('POST', '/vault/registry-credentials', { name: 'team-registry', username: 'team', password: PASSWORD });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: expect.any(Number), name: 'team-registry', username: 'team', hint: '…6789', created_at: expect.any(String), deployments: [] });
    credentialId = created.body.id;
    const listed = await api.call('GET', '/vault/registry-credentials');
    expect(listed.body.items.map((c: { name: string }) => c.name)).toEqual(['team-registry']);
    expect(JSON.stringify(listed.body)).not.toContain(PASSWORD);
    expect(await storeText(api.store as FileStore)).not.toContain(PASSWORD);
    expect((await api.call('POST', '/vault/registry-credentials', { name: 'team-registry', username: 'x', password: 'y' })).status).toBe(409);
    expect((await api.call('POST', '/vault/registry-credentials', { name: 'no-password', username: 'x' })).status).toBe(400);
    const platformKey = await api.call('POST', '/vault/registry-credentials', { name: 'platform-key', username: 'x', password: ADMIN_KEY });
    expect(platformKey.status).toBe(400);
    expect(platformKey.body.error).toMatchObject({ field: 'password', message: expect.stringMatching(/service-account key/) });
  });

  it('a deployment names them instead of a username and password; an unknown id, or both, is refused', async () => {
    const unknown = await api.call('POST', '/deployments/general', { ...generalBody('cred-unknown', 'tok-cred-unknown-0123'), registry_credential_id: 999 });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatchObject({ field: 'registry_credential_id', message: expect.stringMatching(/not in the vault/) });
    const both = await api.call('POST', '/deployments/general', {
      ...generalBody('cred-both', 'tok-cred-both-0123456'),
      registry_credential_id: credentialId,
      registry_username: 'team',
      registry_password: 'other',
    });
    expect(both.status).toBe(400);
    expect(both.body.error.message).toMatch(/not both/);
    const ok = await api.call('POST', '/deployments/general', { ...generalBody('cred-ok', 'tok-cred-ok-012345678'), registry_credential_id: credentialId });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ registry_credential_id: credentialId, registry_username: null, has_registry_password: false });
    expect((await api.call('GET', `/vault/registry-credentials/${credentialId}`)).body.deployments).toEqual([ok.body.id]);
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
