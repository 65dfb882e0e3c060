// Capabilities a deployment's containers keep (container_capabilities: SETUID, SETGID, MKNOD,
// FSETID, SETFCAP, which the Docker runtime drops from every container by default) are an
// admin's choice on the control API, as host commands are: a member's create, clone or
// spec-changing PATCH whose spec keeps one is a 403 naming the field; an admin's is stored and
// shown; a member may still scale such a deployment, and clone it without them.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generalBody, startControl, type ApiResponse, type TestControl } from '../helpers/control.js';

const TOKEN = 'capabilities-token-0001';
/** The Docker runtime's policy: a member may deploy any image (it runs in its container). */
const CONTAINERS = { sandboxed: false, allowUnsandboxed: false, allowMembers: false, containers: true };

const body = (name: string, o: Record<string, unknown> = {}) => ({ ...generalBody(name, TOKEN), image: 'team/own-engine', tag: 'v1', command: [], ...o });

function expectForbidden(res: ApiResponse): void {
  expect(res.status, JSON.stringify(res.body)).toBe(403);
  expect(res.body.error).toMatchObject({ code: 'forbidden', field: 'container_capabilities', message: expect.stringContaining('only an admin service account may keep capabilities') });
}

describe('container_capabilities: an admin-only field', () => {
  let api: TestControl;
  let member: string;
  let adminsId: number;

  beforeAll(async () => {
    api = await startControl({ hostCommands: CONTAINERS });
    const created = await api.call('POST', '/service-accounts', { name: 'member', role: 'member' });
    expect(created.status).toBe(201);
    member = created.body.key;
  });
  afterAll(async () => {
    await api?.close();
  });

  it('a member asking for one is refused 403 naming the field, and nothing is stored', async () => {
    expectForbidden(await api.call('POST', '/deployments/general', body('by-member', { container_capabilities: ['SETUID'] }), member));
    expect((await api.call('GET', '/deployments/general')).body.items).toHaveLength(0);
    // Without the field, or with an empty list, a member deploys its own image.
    const own = await api.call('POST', '/deployments/general', body('members-own', { container_capabilities: [] }), member);
    expect(own.status, JSON.stringify(own.body)).toBe(201);
    expect(own.body.container_capabilities).toEqual([]);
  });

  it("an admin's is stored in one order and shown; an unknown name is a 400 for anyone", async () => {
    const created = await api.call('POST', '/deployments/general', body('by-admin', { container_capabilities: ['SETGID', 'SETUID'] }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    adminsId = created.body.id;
    expect((await api.call('GET', `/deployments/general/${adminsId}`)).body.container_capabilities).toEqual(['SETUID', 'SETGID']);
    const bad = await api.call('POST', '/deployments/general', body('bad-cap', { container_capabilities: ['SYS_ADMIN'] }));
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ field: 'container_capabilities', message: expect.stringContaining('may name only SETUID, SETGID, MKNOD, FSETID, SETFCAP') });
  });

  it("a member's PATCH adding one, or changing the spec of a deployment that keeps one, is refused; scaling it is not", async () => {
    const own = (await api.call('GET', '/deployments/general')).body.items.find((d: { name: string }) => d.name === 'members-own');
    expectForbidden(await api.call('PATCH', `/deployments/general/${own.id}`, { container_capabilities: ['MKNOD'] }, member));
    expectForbidden(await api.call('PATCH', `/deployments/general/${adminsId}`, { env: { MODE: 'fast' } }, member));
    expect((await api.call('GET', `/deployments/general/${adminsId}`)).body).toMatchObject({ revision: 1, container_capabilities: ['SETUID', 'SETGID'] });
    const scaled = await api.call('PATCH', `/deployments/general/${adminsId}`, { min_replicas: 2, max_replicas: 2 }, member);
    expect(scaled.status, JSON.stringify(scaled.body)).toBe(200);
    // A member may take them away (the spec it writes keeps none).
    const dropped = await api.call('PATCH', `/deployments/general/${adminsId}`, { container_capabilities: [] }, member);
    expect(dropped.status, JSON.stringify(dropped.body)).toBe(200);
    expect(dropped.body.container_capabilities).toEqual([]);
  });

  it("a member's clone keeps the source's capabilities only if an admin writes it: refused with them, allowed without", async () => {
    const admins = await api.call('POST', '/deployments/general', body('capped', { container_capabilities: ['MKNOD'] }));
    expect(admins.status).toBe(201);
    expectForbidden(await api.call('POST', `/deployments/general/${admins.body.id}/clone`, { name: 'capped-copy' }, member));
    const clone = await api.call('POST', `/deployments/general/${admins.body.id}/clone`, { name: 'plain-copy', container_capabilities: [] }, member);
    expect(clone.status, JSON.stringify(clone.body)).toBe(201);
    expect(clone.body.container_capabilities).toEqual([]);
  });
});
