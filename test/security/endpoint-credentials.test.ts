// Platform and endpoint credentials stay apart on the control API: a service-account key is
// refused as an endpoint bearer token (create, PATCH and clone, both families) and inside a
// replica's environment, without the value ever being echoed; and `private_endpoint: false`
// really unbinds the client certificate — or is refused, with the reason, when the endpoint
// would be left with no credential at all.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, disaggregatedBody, generalBody, startControl, type ApiResponse, type TestControl } from '../helpers/control.js';

let api: TestControl;
let memberKey: string;
const TOKEN = 'plain-endpoint-token-0001';

beforeAll(async () => {
  api = await startControl();
  const member = await api.call('POST', '/service-accounts', { name: 'member-bot', role: 'member' });
  expect(member.status).toBe(201);
  memberKey = member.body.key;
});
afterAll(async () => api?.close());

function expectPlatformKeyRefused(res: ApiResponse, field: string, key: string): void {
  expect(res.status).toBe(400);
  expect(res.body.error).toMatchObject({ code: 'invalid_field', field, message: expect.stringContaining('service-account key') });
  expect(res.body.error.message).toMatch(/platform credential/);
  expect(JSON.stringify(res.body)).not.toContain(key);
}

describe('a service-account key is never an endpoint token', () => {
  it('is refused on create, for the admin key and a member key, in both families', async () => {
    for (const key of [ADMIN_KEY, memberKey]) {
      expectPlatformKeyRefused(await api.call('POST', '/deployments/general', generalBody('sa-create', key)), 'endpoint_bearer_token', key);
      expectPlatformKeyRefused(
        await api.call('POST', '/deployments/orchestrated', disaggregatedBody('sa-create-o', key)),
        'endpoint_bearer_token',
        key,
      );
    }
    expect((await api.call('GET', '/deployments/general')).body.items).toHaveLength(0);
    // Nothing reached the vault either: the key would have become an endpoint token.
    expect((await api.call('GET', '/vault/tokens')).body.items).toHaveLength(0);
  });

  it('is refused on PATCH (also when the member sends its own key) and the binding stays', async () => {
    const created = await api.call('POST', '/deployments/general', generalBody('sa-patch', TOKEN));
    expect(created.status).toBe(201);
    for (const [key, caller] of [
      [memberKey, memberKey],
      [ADMIN_KEY, memberKey],
      [ADMIN_KEY, ADMIN_KEY],
    ] as const) {
      const res = await api.call('PATCH', `/deployments/general/${created.body.id}`, { endpoint_bearer_token: key }, caller);
      expectPlatformKeyRefused(res, 'endpoint_bearer_token', key);
    }
    const after = await api.call('GET', `/deployments/general/${created.body.id}`);
    expect(after.body.endpoint_token_id).toBe(created.body.endpoint_token_id);
    // The vault holds the deployment's own token only: no platform key became one.
    const vault = (await api.call('GET', '/vault/tokens')).body.items as Array<{ id: number }>;
    expect(vault.map((t) => t.id)).toEqual([created.body.endpoint_token_id]);
  });

  it('is refused on clone', async () => {
    const source = await api.call('POST', '/deployments/orchestrated', disaggregatedBody('sa-src', TOKEN));
    expect(source.status).toBe(201);
    const res = await api.call('POST', `/deployments/orchestrated/${source.body.id}/clone`, { name: 'sa-clone', endpoint_bearer_token: memberKey });
    expectPlatformKeyRefused(res, 'endpoint_bearer_token', memberKey);
  });

  it('is refused inside env, naming the variable, on create, PATCH and clone', async () => {
    const create = await api.call('POST', '/deployments/general', { ...generalBody('sa-env', TOKEN), env: { CONTROL_KEY: ADMIN_KEY } });
    expectPlatformKeyRefused(create, 'env.CONTROL_KEY', ADMIN_KEY);
    const target = await api.call('POST', '/deployments/general', generalBody('sa-env2', TOKEN));
    const patch = await api.call('PATCH', `/deployments/general/${target.body.id}`, { env: { AUTH_HEADER: `Authorization: Bearer ${memberKey}` } });
    expectPlatformKeyRefused(patch, 'env.AUTH_HEADER', memberKey);
    const clone = await api.call('POST', `/deployments/general/${target.body.id}/clone`, { name: 'sa-env3', env: { ARGS: `--api-key=${memberKey}` } });
    expectPlatformKeyRefused(clone, 'env.ARGS', memberKey);
  });
});

describe('private_endpoint: false', () => {
  const bound = async (certificateId: number) => (await api.call('GET', `/certificates/${certificateId}`)).body;

  it('unbinds the client certificate when a bearer token still protects the endpoint', async () => {
    const created = await api.call('POST', '/deployments/general', { ...generalBody('pe-off', TOKEN), private_endpoint: true });
    expect(created.status).toBe(201);
    const certificateId: number = created.body.client_certificate_id;
    expect(await bound(certificateId)).toMatchObject({ deployment_id: created.body.id, deployments: [created.body.id] });

    const patched = await api.call('PATCH', `/deployments/general/${created.body.id}`, { private_endpoint: false });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ private_endpoint: false, client_certificate_id: null, endpoint_token_id: created.body.endpoint_token_id });
    expect((await api.call('GET', `/deployments/general/${created.body.id}`)).body.client_certificate_id).toBeNull();
    expect(await bound(certificateId)).toMatchObject({ deployment_id: null, deployments: [] });
  });

  it('is refused, naming private_endpoint and why, when no bearer token is bound; nothing changes', async () => {
    const body = { ...disaggregatedBody('pe-only', 'unused'), endpoint_bearer_token: undefined, private_endpoint: true };
    const created = await api.call('POST', '/deployments/orchestrated', body);
    expect(created.status).toBe(201);
    const certificateId: number = created.body.client_certificate_id;

    const refused = await api.call('PATCH', `/deployments/orchestrated/${created.body.id}`, { private_endpoint: false });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'invalid_field', field: 'private_endpoint' });
    expect(refused.body.error.message).toMatch(/no credential/);
    expect(refused.body.error.message).toMatch(/bind a bearer token first/);
    const after = (await api.call('GET', `/deployments/orchestrated/${created.body.id}`)).body;
    expect(after).toMatchObject({ private_endpoint: true, client_certificate_id: certificateId });
    expect(await bound(certificateId)).toMatchObject({ deployments: [created.body.id] });

    // With a token in the same request it goes through, and the answer is the truth.
    const both = await api.call('PATCH', `/deployments/orchestrated/${created.body.id}`, { private_endpoint: false, endpoint_bearer_token: TOKEN });
    expect(both.status).toBe(200);
    expect(both.body).toMatchObject({ private_endpoint: false, client_certificate_id: null, endpoint_token_id: expect.any(Number) });
  });

  it('is refused on a clone that would carry no credential, and a clone with a token carries no certificate', async () => {
    const source = await api.call('POST', '/deployments/general', { ...generalBody('pe-src', 'x'.repeat(8)), endpoint_bearer_token: undefined, private_endpoint: true });
    expect(source.status).toBe(201);
    const refused = await api.call('POST', `/deployments/general/${source.body.id}/clone`, { name: 'pe-clone', private_endpoint: false });
    expect(refused.status).toBe(400);
    expect(refused.body.error.field).toBe('private_endpoint');
    const clone = await api.call('POST', `/deployments/general/${source.body.id}/clone`, {
      name: 'pe-clone',
      private_endpoint: false,
      endpoint_bearer_token: TOKEN,
    });
    expect(clone.status).toBe(201);
    expect(clone.body).toMatchObject({ private_endpoint: false, client_certificate_id: null });
  });
});
