// The control API's side of flow control over real HTTP: an endpoint's flow_control (both
// families; create, PATCH, clone; applied at once without a revision; the view gives the
// effective settings and says when they are the defaults; refusals name the field), and the
// max_priority cap of vault tokens and client certificates (set at creation, changed by PATCH,
// by a member too, validated, in the views and the OpenAPI document). A certificate issued for
// a deployment is listed as accepted by it while it takes client certificates.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modify } from '../src/store/store.js';
import { disaggregatedBody, generalBody, startControl, type TestControl } from './helpers/control.js';

let api: TestControl;
let token: string;

const DEFAULTS = { max_queue: 1000, max_wait_seconds: { critical: 60, standard: 30, sheddable: 5 } };
// One instance each: hardware 1 of the catalog has 16.
const general = (name: string) => ({ ...generalBody(name, token), max_replicas: 1 });

beforeAll(async () => {
  api = await startControl();
  token = (await api.call('POST', '/vault/tokens', { name: 'flow-default' })).body.token;
});
afterAll(async () => api?.close());

describe('flow_control on deployments', () => {
  it('shows the defaults, said to be the defaults, when a deployment sets none', async () => {
    const res = await api.call('POST', '/deployments/general', general('fc-none'));
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ flow_control: DEFAULTS, flow_control_is_default: true });
    expect((await api.store.get('deployment', res.body.id))!.value.limits?.flow_control).toBeNull();
  });

  it('stores what a create gives, complete; a PATCH replaces it at once without a revision; null goes back to the defaults', async () => {
    const created = await api.call('POST', '/deployments/general', { ...general('fc-set'), flow_control: { max_queue: 20, max_wait_seconds: { sheddable: 0 } } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const own = { max_queue: 20, max_wait_seconds: { critical: 60, standard: 30, sheddable: 0 } };
    expect(created.body).toMatchObject({ flow_control: own, flow_control_is_default: false });
    expect((await api.store.get('deployment', created.body.id))!.value.limits?.flow_control).toEqual(own);

    const route = `/deployments/general/${created.body.id}`;
    const patched = await api.call('PATCH', route, { flow_control: { max_wait_seconds: { critical: 600 } } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    // Replaced as a whole: max_queue and sheddable, not given, are back at their defaults.
    expect(patched.body).toMatchObject({ revision: 1, flow_control: { max_queue: 1000, max_wait_seconds: { critical: 600, standard: 30, sheddable: 5 } }, flow_control_is_default: false });
    expect(patched.body.revisions).toHaveLength(1);

    // An unrelated PATCH keeps it.
    expect((await api.call('PATCH', route, { max_request_body_bytes: 4096 })).body.flow_control.max_wait_seconds.critical).toBe(600);

    const cleared = await api.call('PATCH', route, { flow_control: null });
    expect(cleared.body).toMatchObject({ revision: 1, flow_control: DEFAULTS, flow_control_is_default: true });
    expect((await api.store.get('deployment', created.body.id))!.value.limits?.flow_control).toBeNull();
  });

  it('works the same for orchestrated deployments, and a clone carries it over unless overridden', async () => {
    const o = await api.call('POST', '/deployments/orchestrated', { ...disaggregatedBody('fc-orch', token), flow_control: { max_queue: 0 } });
    expect(o.status, JSON.stringify(o.body)).toBe(201);
    expect(o.body).toMatchObject({ flow_control: { ...DEFAULTS, max_queue: 0 }, flow_control_is_default: false });
    const copy = await api.call('POST', `/deployments/orchestrated/${o.body.id}/clone`, { name: 'fc-orch-copy' });
    expect(copy.status, JSON.stringify(copy.body)).toBe(201);
    expect(copy.body.flow_control.max_queue).toBe(0);
    const reset = await api.call('POST', `/deployments/orchestrated/${o.body.id}/clone`, { name: 'fc-orch-dflt', flow_control: null });
    expect(reset.body).toMatchObject({ flow_control: DEFAULTS, flow_control_is_default: true });
    for (const id of [o.body.id, copy.body.id, reset.body.id]) expect((await api.call('DELETE', `/deployments/orchestrated/${id}`)).status).toBeLessThan(300);
  });

  it.each([
    [{ max_queue: 100_001 }, 'flow_control.max_queue', /^flow_control\.max_queue must be a whole number from 0 to 100000 .*got 100001/],
    [{ max_wait_seconds: { sheddable: -1 } }, 'flow_control.max_wait_seconds.sheddable', /^flow_control\.max_wait_seconds\.sheddable must be a whole number of seconds from 0 to 3600 .*got -1/],
    [{ max_wait_seconds: { urgent: 3 } }, 'flow_control.max_wait_seconds.urgent', /unknown field "flow_control\.max_wait_seconds\.urgent"/],
    [{ burst: 3 }, 'flow_control.burst', /unknown field "flow_control\.burst"/],
    [{ max_queue: '10' }, 'flow_control.max_queue', /must be integer/],
    [7, 'flow_control', /must be object/],
  ])('refuses flow_control %j with 400 naming %s', async (flow, field, message) => {
    const res = await api.call('POST', '/deployments/general', { ...general('fc-bad'), flow_control: flow });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_field', field, message: expect.stringMatching(message) });
  });

  it('reads a record from before flow_control as the defaults, and the OpenAPI document describes it', async () => {
    const d = (await api.call('POST', '/deployments/general', general('fc-old'))).body;
    await modify(api.store, 'deployment', d.id, (r) => ({ ...r, limits: { max_request_body_bytes: null, first_response_timeout_seconds: null, rate_limit: null } }));
    expect((await api.call('GET', `/deployments/general/${d.id}`)).body).toMatchObject({ flow_control: DEFAULTS, flow_control_is_default: true });
    const doc = (await api.call('GET', '/openapi.json', undefined, null)).body;
    const patch = JSON.stringify(doc.paths['/deployments/general/{id}'].patch.requestBody);
    expect(patch).toMatch(/"flow_control":\{"type":"object","properties":\{"max_queue"/);
    expect(patch).toContain('max_wait_seconds');
    expect(JSON.stringify(doc.paths['/deployments/orchestrated/{id}'].get.responses['200'])).toContain('flow_control_is_default');
  });
});

describe('max_priority on vault tokens and client certificates', () => {
  it('sets a token’s cap at creation, changes it by PATCH (a member too) and shows it in the views', async () => {
    const plain = await api.call('POST', '/vault/tokens', { name: 'cap-none' });
    expect(plain.body.max_priority).toBeNull();
    const created = await api.call('POST', '/vault/tokens', { name: 'cap-batch', max_priority: 'sheddable' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ max_priority: 'sheddable', token: expect.any(String) });

    const member = (await api.call('POST', '/service-accounts', { name: 'cap-member', role: 'member' })).body.key as string;
    const raised = await api.call('PATCH', `/vault/tokens/${created.body.id}`, { max_priority: 'critical' }, member);
    expect(raised.status, JSON.stringify(raised.body)).toBe(200);
    expect(raised.body).toMatchObject({ id: created.body.id, max_priority: 'critical' });
    expect(raised.body).not.toHaveProperty('token');
    expect((await api.call('GET', `/vault/tokens/${created.body.id}`)).body.max_priority).toBe('critical');
    const listed = (await api.call('GET', '/vault/tokens')).body.items.find((t: { id: number }) => t.id === created.body.id);
    expect(listed.max_priority).toBe('critical');
    expect((await api.call('PATCH', `/vault/tokens/${created.body.id}`, { max_priority: null })).body.max_priority).toBeNull();
    expect((await api.store.get('token', created.body.id))!.value.max_priority).toBeNull();
  });

  it.each([
    ['POST', '/vault/tokens', { name: 'cap-bad', max_priority: 'urgent' }],
    ['POST', '/certificates', { name: 'cap-bad', max_priority: 'HIGH' }],
  ])('refuses an unknown class at %s %s, listing the classes', async (method, path, body) => {
    const res = await api.call(method, path, body);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ field: 'max_priority', message: 'max_priority must be one of critical, standard, sheddable, or null' });
  });

  it('refuses a PATCH of anything but max_priority, a PATCH without it, and an unknown token', async () => {
    const t = (await api.call('POST', '/vault/tokens', { name: 'cap-patch' })).body;
    expect((await api.call('PATCH', `/vault/tokens/${t.id}`, { max_priority: null, name: 'renamed' })).body.error).toMatchObject({ field: 'name', message: 'unknown field "name"' });
    expect((await api.call('PATCH', `/vault/tokens/${t.id}`, {})).body.error).toMatchObject({ field: 'max_priority', message: 'max_priority is required' });
    expect((await api.call('PATCH', `/vault/tokens/${t.id}`, { max_priority: 'low' })).status).toBe(400);
    expect((await api.call('PATCH', '/vault/tokens/999', { max_priority: 'standard' })).status).toBe(404);
  });

  it('sets a certificate’s cap at issue, changes it by PATCH, and refuses to change a revoked one', async () => {
    const cert = await api.call('POST', '/certificates', { name: 'cap-cert', max_priority: 'standard' });
    expect(cert.status, JSON.stringify(cert.body)).toBe(201);
    expect(cert.body.max_priority).toBe('standard');
    expect((await api.call('POST', '/certificates', { name: 'cap-cert-none' })).body.max_priority).toBeNull();
    const changed = await api.call('PATCH', `/certificates/${cert.body.id}`, { max_priority: 'sheddable' });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ id: cert.body.id, max_priority: 'sheddable', revoked: false });
    expect((await api.call('GET', '/certificates')).body.items.find((c: { id: number }) => c.id === cert.body.id).max_priority).toBe('sheddable');
    expect((await api.call('PATCH', '/certificates/999', { max_priority: null })).status).toBe(404);
    expect((await api.call('POST', `/certificates/${cert.body.id}/revoke`)).status).toBe(200);
    const refused = await api.call('PATCH', `/certificates/${cert.body.id}`, { max_priority: null });
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toMatch(/revoked/);
  });

  it('describes the caps and the PATCH routes in the OpenAPI document', async () => {
    const doc = (await api.call('GET', '/openapi.json', undefined, null)).body;
    expect(Object.keys(doc.paths['/vault/tokens/{id}'])).toEqual(expect.arrayContaining(['get', 'patch', 'delete']));
    expect(Object.keys(doc.paths['/certificates/{id}'])).toEqual(expect.arrayContaining(['get', 'patch']));
    const body = JSON.stringify(doc.paths['/vault/tokens/{id}'].patch.requestBody);
    expect(body).toContain('"enum":["critical","standard","sheddable"]');
    expect(JSON.stringify(doc.paths['/certificates'].post.requestBody)).toContain('max_priority');
    expect(JSON.stringify(doc.paths['/vault/tokens'].get.responses['200'])).toContain('max_priority');
  });
});

describe('certificates issued for a deployment', () => {
  it('are listed as accepted by it while it takes client certificates, and not by a token-only one', async () => {
    const priv = await api.call('POST', '/deployments/general', { ...general('fc-mtls'), endpoint_bearer_token: undefined, private_endpoint: true });
    expect(priv.status, JSON.stringify(priv.body)).toBe(201);
    const second = await api.call('POST', '/certificates', { name: 'fc-mtls-app2', deployment_id: priv.body.id, max_priority: 'sheddable' });
    expect(second.body).toMatchObject({ deployment_id: priv.body.id, deployments: [priv.body.id], max_priority: 'sheddable' });
    expect((await api.call('GET', `/certificates/${priv.body.client_certificate_id}`)).body.deployments).toEqual([priv.body.id]);

    const plain = (await api.call('POST', '/deployments/general', general('fc-tok'))).body;
    const unused = await api.call('POST', '/certificates', { name: 'fc-tok-app', deployment_id: plain.id });
    expect(unused.body).toMatchObject({ deployment_id: plain.id, deployments: [] });
  });
});
