// The control API over real HTTP on port 0: platform credentials, the error shape,
// both families' routes, revisions, that no response carries a secret, and secret
// environment variables (sealed, named only, merged by name on PATCH and clone).

import { modify } from '../src/store/store.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { disaggregatedBody, generalBody, startControl, type TestControl } from './helpers/control.js';

let api: TestControl;
let token: string;

beforeAll(async () => {
  api = await startControl();
  const created = await api.call('POST', '/vault/tokens', { name: 'default' });
  expect(created.status).toBe(201);
  token = created.body.token;
});
afterAll(async () => api?.close());

describe('platform credentials', () => {
  it('answers 401 without a key, with a wrong key, and with an endpoint bearer token', async () => {
    const none = await api.call('GET', '/deployments/general', undefined, null);
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('unauthenticated');
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);

    const wrong = await api.call('GET', '/deployments/general', undefined, 'igk_not-a-real-key');
    expect(wrong.status).toBe(401);

    const endpointToken = await api.call('GET', '/deployments/general', undefined, token);
    expect(endpointToken.status).toBe(401);
    expect(endpointToken.body.error.message).toMatch(/endpoint bearer token/);
  });

  it('leaves health and the OpenAPI document open', async () => {
    expect((await api.call('GET', '/healthz', undefined, null)).status).toBe(200);
    expect((await api.call('GET', '/readyz', undefined, null)).status).toBe(200);
    const doc = await api.call('GET', '/openapi.json', undefined, null);
    expect(doc.status).toBe(200);
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining(['/deployments/orchestrated', '/deployments/general/{id}/rollback', '/vault/tokens', '/service-accounts', '/clusters/{id}/hardware']),
    );
  });

  it('lets an admin create a member account whose key works but cannot manage accounts', async () => {
    const created = await api.call('POST', '/service-accounts', { name: 'ci-bot', role: 'member' });
    expect(created.status).toBe(201);
    expect(created.body.key).toMatch(/^igk_/);
    const memberKey: string = created.body.key;
    expect((await api.call('GET', '/clusters', undefined, memberKey)).status).toBe(200);
    const denied = await api.call('POST', '/service-accounts', { name: 'other' }, memberKey);
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('forbidden');
    const listed = await api.call('GET', '/service-accounts');
    expect(JSON.stringify(listed.body)).not.toContain(memberKey);
    expect((await api.call('DELETE', `/service-accounts/${created.body.id}`)).status).toBe(204);
    expect((await api.call('GET', '/clusters', undefined, memberKey)).status).toBe(401);
  });

  it('says who the caller is at GET /whoami: kind, id, name, admin, project and role, for an admin and a member (a developer)', async () => {
    const admin = await api.call('GET', '/whoami');
    expect(admin.status).toBe(200);
    const listed = (await api.call('GET', '/service-accounts')).body.items.find((a: { role: string }) => a.role === 'admin');
    expect(admin.body).toEqual({
      kind: 'service_account',
      id: listed.id,
      name: listed.name,
      admin: true,
      project: 'default',
      role: 'admin',
      projects: [{ name: 'default', role: null }],
    });

    // `member`, the role's name before projects, is a developer of the request's project.
    const created = await api.call('POST', '/service-accounts', { name: 'whoami-member', role: 'member' });
    expect(created.body).toMatchObject({ role: 'developer', project: 'default' });
    const member = await api.call('GET', '/whoami', undefined, created.body.key);
    expect(member.status).toBe(200);
    expect(member.body).toEqual({
      kind: 'service_account',
      id: created.body.id,
      name: 'whoami-member',
      admin: false,
      project: 'default',
      role: 'developer',
      projects: [{ name: 'default', role: 'developer' }],
    });
    expect((await api.call('DELETE', `/service-accounts/${created.body.id}`)).status).toBe(204);

    expect((await api.call('GET', '/whoami', undefined, null)).status).toBe(401);
    expect((await api.call('GET', '/whoami', undefined, token)).body.error.message).toMatch(/endpoint bearer token/);
    const doc = await api.call('GET', '/openapi.json', undefined, null);
    expect(doc.body.paths['/whoami'].get.responses).toHaveProperty('200');
  });

  it('refuses to delete the last admin', async () => {
    const admins = (await api.call('GET', '/service-accounts')).body.items.filter((a: { role: string }) => a.role === 'admin');
    expect(admins).toHaveLength(1);
    const res = await api.call('DELETE', `/service-accounts/${admins[0].id}`);
    expect(res.status).toBe(409);
  });
});

describe('errors', () => {
  it('answers 404 for unknown ids and routes', async () => {
    for (const p of ['/deployments/general/999', '/deployments/orchestrated/999', '/vault/tokens/999', '/service-accounts/999', '/clusters/9', '/no/such/route']) {
      const res = await api.call('GET', p);
      expect(res.status, p).toBe(404);
      expect(res.body.error.code, p).toBe('not_found');
    }
  });

  it('answers 413 for a body over 1 MiB', async () => {
    const big = { ...generalBody('big', token), annotations: { blob: 'x'.repeat(1024 * 1024 + 10) } };
    const res = await api.call('POST', '/deployments/general', big);
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('payload_too_large');
  });

  it('answers 400 naming the field for a wrong type, and for JSON that does not parse', async () => {
    const wrongType = await api.call('POST', '/deployments/general', { ...generalBody('typed', token), cluster_id: '1' });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.error.field).toBe('cluster_id');
    const broken = await api.call('POST', '/deployments/general', '{"name": ');
    expect(broken.status).toBe(400);
    expect(broken.body.error.code).toBe('invalid_request');
  });

  it('answers 409 when a name is taken, across both families', async () => {
    expect((await api.call('POST', '/deployments/general', generalBody('shared-name', token))).status).toBe(201);
    const again = await api.call('POST', '/deployments/orchestrated', disaggregatedBody('shared-name', token));
    expect(again.status).toBe(409);
    expect(again.body.error.field).toBe('name');
  });

  it('answers 422 with the numbers when the GPU quota would be exceeded', async () => {
    const res = await api.call('POST', '/deployments/general', {
      ...generalBody('too-big', token),
      hardware_instance_id: 3,
      min_replicas: 1,
      max_replicas: 2,
      max_concurrency: 2,
      cluster_id: 2,
    });
    expect(res.status).toBe(201); // 16 GPUs of 32
    const over = await api.call('POST', '/deployments/general', { ...generalBody('over', token), hardware_instance_id: 2, max_replicas: 8 });
    expect(over.status).toBe(422);
    expect(over.body.error.code).toBe('quota_exceeded');
    expect(over.body.error.message).toMatch(/32/);
    expect((await api.call('DELETE', `/deployments/general/${res.body.id}`)).status).toBe(202);
  });
});

describe('orchestrated deployments (the spec examples)', () => {
  it('creates a disaggregated deployment and GET returns the same worker_pools', async () => {
    const body = disaggregatedBody('llama-disagg', token);
    const created = await api.call('POST', '/deployments/orchestrated', body);
    expect(created.status).toBe(201);
    expect(created.body.worker_pools).toEqual(body.worker_pools);
    const got = await api.call('GET', `/deployments/orchestrated/${created.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body.worker_pools).toEqual(body.worker_pools);
    expect(got.body.serving_mode).toBe('disaggregated');
    expect(got.body.status).toBe('pending');
    expect(got.body.endpoint_url).toBe('llama-disagg.endpoints.test');
    expect(Object.keys(got.body.components).sort()).toEqual(['Decode', 'Frontend', 'Prefill']);
    expect(got.body.components.Decode).toEqual({ ready: 0, desired: 2 });
    expect(got.body).not.toHaveProperty('min_replicas');
  });

  it('rejects the same request with min_replicas at the top level, naming that field', async () => {
    const res = await api.call('POST', '/deployments/orchestrated', { ...disaggregatedBody('llama-bad', token), min_replicas: 1 });
    expect(res.status).toBe(400);
    expect(res.body.error.field).toBe('min_replicas');
  });

  it('clones a disaggregated deployment from the worker_pools GET returns', async () => {
    const source = (await api.call('GET', '/deployments/orchestrated')).body.items.find((d: { name: string }) => d.name === 'llama-disagg');
    const clone = await api.call('POST', `/deployments/orchestrated/${source.id}/clone`, { name: 'llama-copy', worker_pools: source.worker_pools });
    expect(clone.status).toBe(201);
    expect(clone.body.worker_pools).toEqual(source.worker_pools);
    expect(clone.body.revision).toBe(1);
    expect(clone.body.endpoint_token_id).toBe(source.endpoint_token_id);
  });

  it('clones an aggregated deployment with overrides, keeping the rest of its spec', async () => {
    const created = await api.call('POST', '/deployments/orchestrated', {
      name: 'agg-src',
      cluster_id: 1,
      model: 'org/agg-model',
      hardware_instance_id: 1,
      min_replicas: 1,
      max_replicas: 1,
      served_model_name: 'agg',
      extra_args: ['--max-model-len', '4096'],
      endpoint_bearer_token: token,
    });
    expect(created.status).toBe(201);
    const clone = await api.call('POST', `/deployments/orchestrated/${created.body.id}/clone`, { name: 'agg-copy', max_replicas: 2, concurrency: 4 });
    expect(clone.status).toBe(201);
    expect(clone.body).toMatchObject({
      name: 'agg-copy',
      serving_mode: 'aggregated',
      model: 'org/agg-model',
      hardware_instance_id: 1,
      min_replicas: 1,
      max_replicas: 2,
      concurrency: 4,
      served_model_name: 'agg',
      extra_args: ['--max-model-len', '4096'],
      revision: 1,
    });
    expect(clone.body.revisions[0].reason).toBe('clone');
    expect((await api.call('GET', `/deployments/orchestrated/${created.body.id}`)).body.max_replicas).toBe(1);
    // Both go again: the rest of this file needs their instances.
    for (const id of [created.body.id, clone.body.id]) expect((await api.call('DELETE', `/deployments/orchestrated/${id}`)).status).toBe(202);
  });

  it('refuses to pause an orchestrated deployment whose rollout is in progress, naming the rollout', async () => {
    const source = (await api.call('POST', '/deployments/orchestrated', { name: 'agg-roll', cluster_id: 1, model: 'org/m', hardware_instance_id: 1, endpoint_bearer_token: token })).body;
    await modify(api.store, 'deployment', source.id, (d) => ({
      ...d,
      rollout: { revision: 2, from_revision: 1, state: 'in_progress', reason: null, started_at: new Date().toISOString(), finished_at: null },
    }));
    const res = await api.call('POST', `/deployments/orchestrated/${source.id}/pause`);
    expect(res.status).toBe(409);
    expect(res.body.error.message).toContain('rollout to revision 2 from revision 1 is in progress');
    await modify(api.store, 'deployment', source.id, (d) => ({ ...d, rollout: { ...d.rollout!, state: 'complete' } }));
    expect((await api.call('POST', `/deployments/orchestrated/${source.id}/pause`)).status).toBe(202);
  });
});

describe('revisions and lifecycle', () => {
  let id: number;
  beforeAll(async () => {
    const created = await api.call('POST', '/deployments/general', generalBody('life', token));
    expect(created.status).toBe(201);
    id = created.body.id;
  });

  it('scales in place without a new revision', async () => {
    const res = await api.call('PATCH', `/deployments/general/${id}`, { min_replicas: 2, max_replicas: 3 });
    expect(res.status).toBe(200);
    expect(res.body.revision).toBe(1);
    expect(res.body.min_replicas).toBe(2);
    expect(res.body.revisions).toHaveLength(1);
  });

  it('applies first_response_timeout_seconds at once without a new revision; a record from before it reads null', async () => {
    const created = await api.call('POST', '/deployments/general', { ...generalBody('first-resp', token), first_response_timeout_seconds: 30 });
    expect(created.status).toBe(201);
    expect(created.body.first_response_timeout_seconds).toBe(30);
    const route = `/deployments/general/${created.body.id}`;
    const res = await api.call('PATCH', route, { first_response_timeout_seconds: 600 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ revision: 1, first_response_timeout_seconds: 600, max_request_body_bytes: null });
    expect(res.body.revisions).toHaveLength(1);
    const refused = await api.call('PATCH', route, { first_response_timeout_seconds: 86_401 });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ field: 'first_response_timeout_seconds', message: expect.stringMatching(/from 1 to 86400/) });
    const cleared = await api.call('PATCH', route, { first_response_timeout_seconds: null });
    expect(cleared.body).toMatchObject({ revision: 1, first_response_timeout_seconds: null });

    await modify(api.store, 'deployment', created.body.id, (d) => ({ ...d, limits: { max_request_body_bytes: 4096, rate_limit: null } }));
    expect((await api.call('GET', route)).body).toMatchObject({ first_response_timeout_seconds: null, max_request_body_bytes: 4096 });
    const doc = await api.call('GET', '/openapi.json', undefined, null);
    expect(JSON.stringify(doc.body)).toContain('first_response_timeout_seconds');
    expect((await api.call('DELETE', route)).status).toBeLessThan(300);
  });

  it('makes a new revision on a spec edit and rolls back to an earlier spec', async () => {
    const edited = await api.call('PATCH', `/deployments/general/${id}`, { tag: 'nim', command: ['--itl-ms', '5'] });
    expect(edited.status).toBe(200);
    expect(edited.body.revision).toBe(2);
    expect(edited.body.tag).toBe('nim');
    expect(edited.body.min_replicas).toBe(2);

    const back = await api.call('POST', `/deployments/general/${id}/rollback`, { revision: 1 });
    expect(back.status).toBe(202);
    expect(back.body.revision).toBe(3);
    expect(back.body.tag).toBe('openai');
    expect(back.body.command).toEqual([]);
    expect(back.body.min_replicas).toBe(2); // replica counts are not part of a revision

    const history = await api.call('GET', `/deployments/general/${id}/revisions`);
    expect(history.body.current).toBe(3);
    expect(history.body.items.map((r: { revision: number; reason: string }) => [r.revision, r.reason])).toEqual([
      [1, 'create'],
      [2, 'update'],
      [3, 'rollback'],
    ]);
    const two = await api.call('GET', `/deployments/general/${id}/revisions/2`);
    expect(two.body.spec.tag).toBe('nim');
    expect((await api.call('POST', `/deployments/general/${id}/rollback`, { revision: 9 })).status).toBe(404);
  });

  it('pauses and resumes the whole deployment, refusing the wrong state', async () => {
    const paused = await api.call('POST', `/deployments/general/${id}/pause`);
    expect(paused.status).toBe(202);
    expect(paused.body.status).toBe('paused');
    expect(paused.body.components.Replica.desired).toBe(0);
    expect((await api.call('POST', `/deployments/general/${id}/pause`)).status).toBe(409);
    const resumed = await api.call('POST', `/deployments/general/${id}/resume`);
    expect(resumed.status).toBe(202);
    expect(resumed.body.paused).toBe(false);
    expect(resumed.body.components.Replica.desired).toBe(2);
    expect((await api.call('POST', `/deployments/general/${id}/resume`)).status).toBe(409);
  });

  it('refuses to change the name through PATCH', async () => {
    const res = await api.call('PATCH', `/deployments/general/${id}`, { name: 'renamed' });
    expect(res.status).toBe(400);
    expect(res.body.error.field).toBe('name');
  });

  it('deletes with 202, then 404, and the name is free again', async () => {
    const res = await api.call('DELETE', `/deployments/general/${id}`);
    expect(res.status).toBe(202);
    expect(res.body.status).toBe('deleting');
    expect((await api.call('GET', `/deployments/general/${id}`)).status).toBe(404);
    expect((await api.call('POST', '/deployments/general', generalBody('life', token))).status).toBe(201);
  });

  it('keeps an id to its family', async () => {
    const general = (await api.call('GET', '/deployments/general')).body.items[0];
    expect((await api.call('GET', `/deployments/orchestrated/${general.id}`)).status).toBe(404);
  });
});

describe('secrets never leave the API', () => {
  it('returns no token, key, password or hash in any response', async () => {
    const ownToken = 'my-own-endpoint-token-123';
    const password = 'registry-secret-pw-456';
    const hubToken = 'hf_hub_token_789xyz';
    const seen: string[] = [];
    const record = async (method: string, p: string, body?: unknown) => {
      const res = await api.call(method, p, body);
      seen.push(JSON.stringify(res.body));
      return res;
    };
    const g = await record('POST', '/deployments/general', {
      ...generalBody('secretive', ownToken),
      registry_username: '$oauthtoken',
      registry_password: password,
    });
    expect(g.status).toBe(201);
    expect(g.body.has_registry_password).toBe(true);
    const o = await record('POST', '/deployments/orchestrated', {
      name: 'hub-model',
      cluster_id: 1,
      model: 'org/private-model',
      hardware_instance_id: 1,
      model_hub_token: hubToken,
      endpoint_bearer_token: ownToken,
    });
    expect(o.status).toBe(201);
    expect(o.body.has_model_hub_token).toBe(true);
    await record('GET', `/deployments/general/${g.body.id}`);
    await record('GET', `/deployments/general/${g.body.id}/revisions`);
    await record('GET', '/deployments/orchestrated');
    await record('GET', '/vault/tokens');
    await record('GET', '/service-accounts');
    const all = seen.join('\n');
    for (const secret of [ownToken, password, hubToken, token]) expect(all).not.toContain(secret);
    expect(all).not.toMatch(/[0-9a-f]{64}/); // no SHA-256 hashes
    expect(all).not.toMatch(/"v1\.[A-Za-z0-9_-]+\./); // no sealed blobs
  });

  it('binds a token given by value to one vault entry, reused by a second deployment', async () => {
    const value = 'shared-endpoint-token-abc';
    const a = await api.call('POST', '/deployments/general', generalBody('share-a', value));
    const b = await api.call('POST', '/deployments/general', generalBody('share-b', value));
    expect(a.body.endpoint_token_id).toBe(b.body.endpoint_token_id);
    const vault = await api.call('GET', `/vault/tokens/${a.body.endpoint_token_id}`);
    expect(vault.body.deployments.sort()).toEqual([a.body.id, b.body.id].sort());
  });
});

describe('secret environment variables', () => {
  const KEY_1 = 'nvapi-secret-one-0123456789';
  const KEY_2 = 'nvapi-secret-two-9876543210';
  const HF = 'hf_secret_env_value_42';
  const route = (id: number) => `/deployments/general/${id}`;
  /** The stored deployment, as the store keeps it. */
  const stored = async (id: number) => (await api.store.get('deployment', id))!.value;
  /** One replica each on the second cluster (the suites before hold the first one's), all deleted afterwards. */
  const small = (name: string) => ({ ...generalBody(name, token), cluster_id: 2, min_replicas: 1, max_replicas: 1, max_concurrency: null });
  afterAll(async () => {
    for (const family of ['general', 'orchestrated']) {
      for (const d of (await api.call('GET', `/deployments/${family}`)).body.items as { id: number; name: string }[]) {
        if (/secret|orch-secret/.test(d.name)) await api.call('DELETE', `/deployments/${family}/${d.id}`);
      }
    }
  });

  it('seals them, lists only their names, and never puts them in env', async () => {
    const created = await api.call('POST', '/deployments/general', {
      ...small('secret-env'),
      env: { MODE: 'fast', REGISTRY_API_KEY: KEY_1 },
      secret_env: { HF_TOKEN: HF, UNSET: null },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ env: { MODE: 'fast' }, secret_env: ['HF_TOKEN', 'REGISTRY_API_KEY'], revision: 1 });
    const record = await stored(created.body.id);
    expect(record.spec.env).toEqual({ MODE: 'fast' });
    expect(Object.keys(record.spec.secrets.env ?? {})).toEqual(['HF_TOKEN', 'REGISTRY_API_KEY']);
    expect(Object.values(record.spec.secrets.env ?? {}).every((v) => v.startsWith('v1.'))).toBe(true);
    expect(JSON.stringify(record)).not.toMatch(new RegExp(`${KEY_1}|${HF}`));
    const revision = await api.call('GET', `${route(created.body.id)}/revisions/1`);
    expect(revision.body.spec).toMatchObject({ env: { MODE: 'fast' }, secret_env: ['HF_TOKEN', 'REGISTRY_API_KEY'] });
    const listed = (await api.call('GET', '/deployments/general')).body.items.find((d: { name: string }) => d.name === 'secret-env');
    expect(listed.secret_env).toEqual(['HF_TOKEN', 'REGISTRY_API_KEY']);
    const plain = await api.call('POST', '/deployments/general', small('no-secret'));
    expect((await api.call('GET', route(plain.body.id))).body.secret_env).toEqual([]);
  });

  it('PATCH merges by name: left out keeps, a value replaces or adds (a revision), null removes (a revision); rollback restores a revision’s set', async () => {
    const id = (await api.call('GET', '/deployments/general')).body.items.find((d: { name: string }) => d.name === 'secret-env').id as number;
    const sealedBefore = (await stored(id)).spec.secrets.env!;

    const edited = await api.call('PATCH', route(id), { cooldown_period: 60, env: { MODE: 'slow' } });
    expect(edited.body).toMatchObject({ revision: 2, env: { MODE: 'slow' }, secret_env: ['HF_TOKEN', 'REGISTRY_API_KEY'] });
    expect((await stored(id)).spec.secrets.env).toEqual(sealedBefore); // untouched, not even re-sealed
    expect((await api.call('PATCH', route(id), { cooldown_period: 30 })).body.revision).toBe(2);

    const replaced = await api.call('PATCH', route(id), { secret_env: { REGISTRY_API_KEY: KEY_2, EXTRA: 'extra-secret-1' } });
    expect(replaced.body).toMatchObject({ revision: 3, secret_env: ['EXTRA', 'HF_TOKEN', 'REGISTRY_API_KEY'] });
    const after = (await stored(id)).spec.secrets.env!;
    expect(after.HF_TOKEN).toBe(sealedBefore.HF_TOKEN);
    expect(after.REGISTRY_API_KEY).not.toBe(sealedBefore.REGISTRY_API_KEY);

    const removed = await api.call('PATCH', route(id), { secret_env: { EXTRA: null, NEVER_SET: null } });
    expect(removed.body).toMatchObject({ revision: 4, secret_env: ['HF_TOKEN', 'REGISTRY_API_KEY'] });
    expect((await api.call('PATCH', route(id), { secret_env: { NEVER_SET: null } })).body.revision).toBe(4);

    const back = await api.call('POST', `${route(id)}/rollback`, { revision: 3 });
    expect(back.body).toMatchObject({ revision: 5, secret_env: ['EXTRA', 'HF_TOKEN', 'REGISTRY_API_KEY'] });
    expect((await stored(id)).spec.secrets.env).toEqual(after);
    const history = await api.call('GET', `${route(id)}/revisions`);
    expect(history.body.items.map((r: { spec: { secret_env: string[] } }) => r.spec.secret_env.length)).toEqual([2, 2, 3, 2, 3]);
  });

  it('refuses a name both plain and secret with 400 on the field, saying what to do, never quoting a value', async () => {
    const id = (await api.call('GET', '/deployments/general')).body.items.find((d: { name: string }) => d.name === 'secret-env').id as number;
    const plainToo = await api.call('PATCH', route(id), { env: { MODE: 'slow', HF_TOKEN: 'now-in-plain-sight' } });
    expect(plainToo.status).toBe(400);
    expect(plainToo.body.error).toMatchObject({ code: 'invalid_field', field: 'env.HF_TOKEN', message: expect.stringContaining('"secret_env": {"HF_TOKEN": null}') });
    const both = await api.call('POST', '/deployments/general', { ...small('both-ways'), env: { REGISTRY_API_KEY: KEY_1 }, secret_env: { REGISTRY_API_KEY: KEY_2 } });
    expect(both.status).toBe(400);
    expect(both.body.error).toMatchObject({ field: 'secret_env.REGISTRY_API_KEY', message: expect.stringContaining('give it once') });
    const badName = await api.call('POST', '/deployments/general', { ...small('bad-secret'), secret_env: { 'NOT-A-NAME': KEY_1 } });
    expect(badName.status).toBe(400);
    expect(badName.body.error).toMatchObject({ field: 'secret_env.NOT-A-NAME', message: expect.stringContaining('names use letters, digits and underscores') });
    const badValue = await api.call('POST', '/deployments/general', { ...small('bad-secret'), secret_env: { OK: 7 } });
    expect(badValue.body.error).toMatchObject({ code: 'invalid_field', field: 'secret_env.OK' });
    for (const res of [plainToo, both, badName]) expect(JSON.stringify(res.body)).not.toMatch(new RegExp(`${KEY_1}|${KEY_2}|${HF}|now-in-plain-sight`));
  });

  it('a clone copies the sealed set and merges its own secret_env over it', async () => {
    const source = (await api.call('GET', '/deployments/general')).body.items.find((d: { name: string }) => d.name === 'secret-env');
    const copy = await api.call('POST', `${route(source.id)}/clone`, { name: 'secret-copy', secret_env: { EXTRA: null, CLONE_ONLY: 'clone-secret-1' } });
    expect(copy.status, JSON.stringify(copy.body)).toBe(201);
    expect(copy.body).toMatchObject({ revision: 1, secret_env: ['CLONE_ONLY', 'HF_TOKEN', 'REGISTRY_API_KEY'] });
    const [from, to] = [(await stored(source.id)).spec.secrets.env!, (await stored(copy.body.id)).spec.secrets.env!];
    expect(to.HF_TOKEN).toBe(from.HF_TOKEN);
    expect(JSON.stringify(copy.body)).not.toContain('clone-secret-1');
  });

  it('works the same for orchestrated deployments, and the OpenAPI document describes both sides', async () => {
    const o = await api.call('POST', '/deployments/orchestrated', { name: 'orch-secret', cluster_id: 1, model: 'org/m', hardware_instance_id: 2, endpoint_bearer_token: token, secret_env: { API_KEY: 'orch-key-1' } });
    expect(o.status, JSON.stringify(o.body)).toBe(201);
    expect(o.body).toMatchObject({ env: {}, secret_env: ['API_KEY'] });
    const patched = await api.call('PATCH', `/deployments/orchestrated/${o.body.id}`, { secret_env: { API_KEY: null } });
    expect(patched.body).toMatchObject({ revision: 2, secret_env: [] });
    const doc = (await api.call('GET', '/openapi.json')).body;
    const op = doc.paths['/deployments/orchestrated/{id}'].patch;
    expect(JSON.stringify(op.requestBody)).toContain('secret_env');
    expect(JSON.stringify(op.responses['200'])).toMatch(/"secret_env":\{"type":"array"/);
  });
});

describe('catalog', () => {
  it('lists the embedded clusters and the instances still free', async () => {
    const res = await api.call('GET', '/clusters');
    expect(res.body.items.map((c: { id: number; orchestration_enabled: boolean }) => [c.id, c.orchestration_enabled])).toEqual([
      [1, true],
      [2, false],
    ]);
    const hw = await api.call('GET', '/clusters/1/hardware');
    const oneX = hw.body.items.find((h: { id: number }) => h.id === 1);
    expect(oneX.instances).toBe(16);
    expect(oneX.instances_free).toBeLessThan(16);
  });
});

describe('quota', () => {
  it('reports the account GPU quota and what each deployment reserves of it', async () => {
    const before = await api.call('GET', '/quota');
    expect(before.status).toBe(200);
    const d = await api.call('POST', '/deployments/general', { ...generalBody('quota-view', 'quota-view-token-0123'), hardware_instance_id: 1, min_replicas: 1, max_replicas: 2, max_concurrency: 4 });
    expect(d.status).toBe(201);
    const after = await api.call('GET', '/quota');
    expect(after.body.gpu_quota).toBe(before.body.gpu_quota);
    // 2 replicas × 1 GPU per sim-gpu-1x instance.
    expect(after.body.gpus_reserved - before.body.gpus_reserved).toBe(2);
    expect(after.body.gpus_free).toBe(after.body.gpu_quota - after.body.gpus_reserved);
    expect(after.body.deployments).toContainEqual({ id: d.body.id, name: 'quota-view', family: 'general', gpus: 2 });
    expect((await api.call('DELETE', `/deployments/general/${d.body.id}`)).status).toBe(202);
  });
});

describe('binding a vault token by id', () => {
  it('creates and edits a deployment with endpoint_token_id, the value never sent again', async () => {
    const a = await api.call('POST', '/vault/tokens', { name: 'by-id-a' });
    const b = await api.call('POST', '/vault/tokens', { name: 'by-id-b' });
    const body = generalBody('bound-by-id', 'unused-token-value-0');
    delete body.endpoint_bearer_token;
    const d = await api.call('POST', '/deployments/general', { ...body, endpoint_token_id: a.body.id });
    expect(d.status).toBe(201);
    expect(d.body.endpoint_token_id).toBe(a.body.id);
    expect((await api.call('GET', `/vault/tokens/${a.body.id}`)).body.deployments).toEqual([d.body.id]);

    const moved = await api.call('PATCH', `/deployments/general/${d.body.id}`, { endpoint_token_id: b.body.id });
    expect(moved.status).toBe(200);
    expect(moved.body.endpoint_token_id).toBe(b.body.id);
    expect(moved.body.revision).toBe(1);
    expect((await api.call('GET', `/vault/tokens/${a.body.id}`)).body.deployments).toEqual([]);

    const unknown = await api.call('PATCH', `/deployments/general/${d.body.id}`, { endpoint_token_id: 999_999 });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.field).toBe('endpoint_token_id');
  });
});
