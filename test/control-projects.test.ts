// Projects through the control API (a real HTTP control API, port 0): the admin creates them
// and sets their GPU quota; each caller lists only its own; a project is deleted only when it
// owns nothing (default never); members by e-mail address or group with a role, kept with at
// least one owner unless the admin says otherwise; usage summed per project and per
// deployment; service accounts per project; whoami; and the project's GPU quota checked at
// create, scale and split time with the figures, beside the cluster's.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generalBody, startControl, type TestControl, disaggregatedBody } from './helpers/control.js';
import { A, B, callAs, setUpTwoProjects, type TwoProjects } from './helpers/projects.js';
import { Credentials } from '../src/control/credentials.js';
import { systemClock } from '../src/core/clock.js';

let api: TestControl;
let p: TwoProjects;

beforeAll(async () => {
  api = await startControl({ gpuQuota: 1000 });
  p = await setUpTwoProjects(api);
});
afterAll(async () => {
  await api?.close();
});

describe('projects', () => {
  it('the admin sees every project (default made on first use), a member only its own, with its role', async () => {
    const all = await p.call('admin', 'GET', '/projects');
    expect(all.body.items.map((x: { name: string }) => x.name)).toEqual(['default', A, B]);
    expect(all.body.items.find((x: { name: string }) => x.name === A)).toMatchObject({ gpu_quota: null, role: null });
    const mine = await p.call('viewerA', 'GET', '/projects');
    expect(mine.body.items).toEqual([expect.objectContaining({ name: A, role: 'viewer' })]);
    expect((await p.call('viewerA', 'GET', `/projects/${B}`)).body.error).toMatchObject({ code: 'not_found', message: `no project named ${B}` });
  });

  it('refuses a name that is not a DNS label and a name taken; only the admin creates or changes one', async () => {
    expect((await p.call('admin', 'POST', '/projects', { name: 'Team_C' })).status).toBe(400);
    expect((await p.call('admin', 'POST', '/projects', { name: A })).status).toBe(409);
    expect((await p.call('ownerA', 'POST', '/projects', { name: 'team-c' })).body.error.code).toBe('forbidden');
    expect((await p.call('ownerA', 'PATCH', `/projects/${A}`, { gpu_quota: 1000 })).body.error.code).toBe('forbidden');
  });

  it('deletes a project only once it owns nothing, and never default', async () => {
    expect((await p.call('admin', 'POST', '/projects', { name: 'team-c', gpu_quota: 4 })).status).toBe(201);
    const robot = await p.call('admin', 'POST', '/service-accounts', { name: 'c-robot', project: 'team-c' });
    expect(robot.body).toMatchObject({ project: 'team-c', role: 'developer' });
    const busy = await p.call('admin', 'DELETE', '/projects/team-c');
    expect(busy.status).toBe(409);
    expect(busy.body.error.message).toBe('project team-c still owns 1 service accounts: delete them first');
    expect((await p.call('admin', 'DELETE', `/service-accounts/${robot.body.id}`, undefined, 'team-c')).status).toBe(204);
    expect((await p.call('admin', 'DELETE', '/projects/team-c')).status).toBe(204);
    expect((await p.call('admin', 'GET', '/projects/team-c')).status).toBe(404);
    expect((await p.call('admin', 'DELETE', '/projects/default')).status).toBe(409);
    // Naming a project that is not there is a 404 for the admin too: nothing is made in it.
    const gone = await p.call('admin', 'POST', '/vault/tokens', { name: 'orphan' }, 'team-c');
    expect(gone.status).toBe(404);
    expect(gone.body.error.message).toBe('no project named team-c');
  });
});

describe('members', () => {
  const subject = encodeURIComponent('user:Carol@Example.COM');

  it('an owner adds people by e-mail (lowercased) and groups with a role; others of the project read them', async () => {
    const added = await p.call('ownerA', 'PUT', `/projects/${A}/members/${subject}`, { role: 'owner' });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    expect(added.body).toEqual({ subject: 'user:carol@example.com', role: 'owner' });
    expect((await p.call('ownerA', 'PUT', `/projects/${A}/members/${encodeURIComponent('group:ML Platform')}`, { role: 'viewer' })).status).toBe(200);
    const listed = await p.call('viewerA', 'GET', `/projects/${A}/members`);
    expect(listed.body.items).toEqual([
      { subject: 'group:ML Platform', role: 'viewer' },
      { subject: 'user:carol@example.com', role: 'owner' },
    ]);
    expect((await p.call('developerA', 'PUT', `/projects/${A}/members/${subject}`, { role: 'viewer' })).body.error.code).toBe('forbidden');
    expect((await p.call('ownerA', 'PUT', `/projects/${A}/members/${encodeURIComponent('alice@example.com')}`, { role: 'viewer' })).body.error.field).toBe('subject');
    expect((await p.call('ownerA', 'PUT', `/projects/${A}/members/${subject}`, { role: 'admin' })).status).toBe(400);
    expect((await p.call('ownerB', 'PUT', `/projects/${A}/members/${subject}`, { role: 'viewer' })).status).toBe(404);
  });

  it('an owner may not remove or demote the last owner member; the admin may (an admin-managed project)', async () => {
    const demote = await p.call('ownerA', 'PUT', `/projects/${A}/members/${subject}`, { role: 'developer' });
    expect(demote.status).toBe(409);
    expect(demote.body.error.message).toMatch(/must keep an owner/);
    expect((await p.call('ownerA', 'DELETE', `/projects/${A}/members/${subject}`)).status).toBe(409);
    expect((await p.call('ownerA', 'DELETE', `/projects/${A}/members/${encodeURIComponent('group:nobody')}`)).status).toBe(404);
    expect((await p.call('admin', 'DELETE', `/projects/${A}/members/${subject}`, undefined, A)).status).toBe(204);
    expect((await p.call('ownerA', 'GET', `/projects/${A}/members`)).body.items).toEqual([{ subject: 'group:ML Platform', role: 'viewer' }]);
  });
});

describe('service accounts of a project', () => {
  it('an owner makes and deletes its project’s accounts with a role; only the admin makes an admin or another project’s', async () => {
    const made = await p.call('ownerA', 'POST', '/service-accounts', { name: 'ci' });
    expect(made.body).toMatchObject({ name: 'ci', role: 'developer', project: A });
    expect((await p.call('ownerB', 'POST', '/service-accounts', { name: 'ci' })).status).toBe(201); // names are per project
    expect((await p.call('ownerA', 'POST', '/service-accounts', { name: 'ci' })).status).toBe(409);
    expect((await p.call('ownerA', 'POST', '/service-accounts', { name: 'root', role: 'admin' })).body.error).toMatchObject({ code: 'forbidden', field: 'role' });
    expect((await p.call('ownerA', 'POST', '/service-accounts', { name: 'spy', project: B })).body.error).toMatchObject({ code: 'forbidden', field: 'project' });
    expect((await p.call('developerA', 'POST', '/service-accounts', { name: 'dev-made' })).body.error.code).toBe('forbidden');
    const names = (await p.call('ownerA', 'GET', '/service-accounts')).body.items.map((a: { name: string }) => a.name).sort();
    expect(names).toEqual(['a-robot', 'alice', 'alice-owner', 'alice-viewer', 'ci']);
    expect((await p.call('ownerB', 'DELETE', `/service-accounts/${made.body.id}`)).status).toBe(404);
    expect((await p.call('ownerA', 'DELETE', `/service-accounts/${made.body.id}`)).status).toBe(204);
    const admin = (await p.call('admin', 'GET', '/service-accounts')).body.items.find((a: { role: string }) => a.role === 'admin');
    expect((await p.call('ownerA', 'GET', `/service-accounts/${admin.id}`)).status).toBe(404);
    expect((await p.call('admin', 'DELETE', `/service-accounts/${admin.id}`)).status).toBe(409);
  });

  it('a project account named admin is not the admin: a new admin key leaves it alone', async () => {
    const named = await p.call('ownerA', 'POST', '/service-accounts', { name: 'admin', role: 'viewer' });
    expect(named.status, JSON.stringify(named.body)).toBe(201);
    // Twice: the second time the admin account is newer than team-a's, so a lookup by name alone finds team-a's first.
    const credentials = new Credentials(api.store, systemClock);
    await credentials.setAdminKey();
    const { key } = await credentials.setAdminKey();
    expect((await callAs(api.url, key, 'GET', '/whoami')).body).toMatchObject({ admin: true, name: 'admin' });
    expect((await callAs(api.url, named.body.key, 'GET', '/whoami')).body).toMatchObject({ admin: false, project: A, role: 'viewer' });
    // The old admin key is gone with the account it belonged to; the tests go on with the new one.
    p.keys.admin = key;
  });

  it('whoami says the project acted in, the role there and the caller’s projects', async () => {
    const me = await p.call('ownerA', 'GET', '/whoami');
    expect(me.body).toMatchObject({ kind: 'service_account', name: 'alice-owner', admin: false, project: A, role: 'owner', projects: [{ name: A, role: 'owner' }] });
    const admin = await p.call('admin', 'GET', '/whoami', undefined, B);
    expect(admin.body).toMatchObject({ admin: true, project: B, role: 'admin' });
    expect(admin.body.projects.map((x: { name: string }) => x.name)).toEqual(expect.arrayContaining(['default', A, B]));
  });
});

describe('usage per project', () => {
  it('sums the project’s usage records, per deployment too, and nothing of another project', async () => {
    const hour = '2026-11-23T16:00:00.000Z';
    const base = { hour, errors: 0, prompt_tokens: 10, completion_tokens: 20, gpu_seconds: 3600, replica_seconds: { Replica: 3600 }, updated_at: hour };
    await api.store.create('usage', (id) => ({ id, project: A, deployment_id: p.a.deployment, requests: 5, ...base }));
    await api.store.create('usage', (id) => ({ id, project: A, deployment_id: p.a.orchestrated, requests: 7, ...base }));
    await api.store.create('usage', (id) => ({ id, project: B, deployment_id: 999, requests: 100, ...base }));
    const usage = await p.call('viewerA', 'GET', `/projects/${A}/usage`);
    expect(usage.status, JSON.stringify(usage.body)).toBe(200);
    expect(usage.body.project).toBe(A);
    expect(usage.body.totals).toMatchObject({ requests: 12, prompt_tokens: 20, gpu_seconds: 7200 });
    expect(usage.body.deployments).toEqual([
      expect.objectContaining({ deployment_id: p.a.deployment, name: 'chat', family: 'general', totals: expect.objectContaining({ requests: 5 }) }),
      expect.objectContaining({ deployment_id: p.a.orchestrated, name: 'orch', family: 'orchestrated', totals: expect.objectContaining({ requests: 7 }) }),
    ]);
    expect((await p.call('viewerA', 'GET', `/projects/${A}/usage?from=2026-11-24T00:00:00Z`)).body.totals.requests).toBe(0);
    expect((await p.call('ownerB', 'GET', `/projects/${A}/usage`)).status).toBe(404);
  });
});

describe("a project's GPU quota", () => {
  const Q = 'quota-team';
  let call: (method: string, path: string, body?: unknown) => ReturnType<typeof callAs>;

  beforeAll(async () => {
    expect((await callAs(api.url, p.keys.admin, 'POST', '/projects', { name: Q, gpu_quota: 8 })).status).toBe(201);
    const key = (await callAs(api.url, p.keys.admin, 'POST', '/service-accounts', { name: 'q-dev', role: 'developer', project: Q })).body.key as string;
    call = (method, path, body) => callAs(api.url, key, method, path, body);
  });

  it('is refused at create with the figures, beside the cluster’s quota', async () => {
    // max_replicas 3 × sim-gpu-2x = 6 GPUs.
    const first = await call('POST', '/deployments/general', { ...generalBody('big', 'quota-big-token-0123456789'), hardware_instance_id: 2, max_replicas: 3 });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const over = await call('POST', '/deployments/general', { ...generalBody('more', 'quota-more-token-0123456789'), hardware_instance_id: 2, max_replicas: 2 });
    expect(over.status).toBe(422);
    expect(over.body.error).toMatchObject({ code: 'quota_exceeded', field: 'max_replicas' });
    expect(over.body.error.message).toMatch(/^project quota-team: 6 GPUs reserved \+ 4 requested > quota 8/);
    // Disaggregated: both pools count (prefill 1 × 1 GPU + decode 2 × 2 GPUs = 5).
    const pools = await call('POST', '/deployments/orchestrated', disaggregatedBody('pools', 'quota-pools-token-0123456789'));
    expect(pools.status).toBe(422);
    expect(pools.body.error.message).toMatch(/^project quota-team: 6 GPUs reserved \+ 5 requested > quota 8/);
    const quota = await call('GET', '/quota');
    expect(quota.body.project).toEqual({ name: Q, gpu_quota: 8, gpus_reserved: 6, gpus_free: 2 });
    expect(quota.body.deployments).toEqual([{ id: first.body.id, name: 'big', family: 'general', gpus: 6 }]);
    expect(quota.body.gpu_quota).toBe(1000);
  });

  it('is refused at scale time (PATCH of the replica counts) and at split time (traffic over two revisions)', async () => {
    const d = (await call('GET', '/deployments/general?name=big')).body.items[0];
    const scale = await call('PATCH', `/deployments/general/${d.id}`, { max_replicas: 5 });
    expect(scale.status).toBe(422);
    expect(scale.body.error.message).toMatch(/^project quota-team: 0 GPUs reserved \+ 10 requested > quota 8/);
    expect((await call('PATCH', `/deployments/general/${d.id}`, { max_replicas: 4 })).status).toBe(200);
    // A second revision (a spec edit), then a split: each revision runs up to 4 × 2 GPUs.
    expect((await call('PATCH', `/deployments/general/${d.id}`, { env: { REVISION: '2' } })).status).toBe(200);
    const split = await call('PATCH', `/deployments/general/${d.id}`, { traffic: [{ revision: 1, percent: 50 }, { revision: 2, percent: 50 }] });
    expect(split.status).toBe(422);
    expect(split.body.error.field).toBe('traffic');
    expect(split.body.error.message).toMatch(/^project quota-team: 0 GPUs reserved \+ 16 requested > quota 8/);
    // Raised by the admin, the same split fits.
    expect((await callAs(api.url, p.keys.admin, 'PATCH', `/projects/${Q}`, { gpu_quota: 16 })).body.gpu_quota).toBe(16);
    expect((await call('PATCH', `/deployments/general/${d.id}`, { traffic: [{ revision: 1, percent: 50 }, { revision: 2, percent: 50 }] })).status).toBe(200);
  });
});
