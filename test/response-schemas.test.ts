// The control API's answers against their response schemas (domain/api-views.ts). The test
// helper checks every JSON answer strictly; here views broken on purpose — a render that drops
// a required field, one that sends a status no schema allows — are refused, and a walk over the
// routes with deployments of both families and every kind of credential finds none outside its schema.

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ADMIN_KEY, disaggregatedBody, generalBody, startControl, type TestControl } from './helpers/control.js';

const broken = vi.hoisted(() => ({ tokenWithoutCap: false, deploymentStatus: null as string | null }));

vi.mock('../src/control/render.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/control/render.js')>();
  return {
    ...real,
    renderToken: (...args: Parameters<typeof real.renderToken>) => {
      const view = real.renderToken(...args);
      if (!broken.tokenWithoutCap) return view;
      const { max_priority: _dropped, ...rest } = view;
      return rest as typeof view;
    },
    renderDeployment: (...args: Parameters<typeof real.renderDeployment>) => {
      const view = real.renderDeployment(...args);
      return broken.deploymentStatus === null ? view : ({ ...view, status: broken.deploymentStatus } as typeof view);
    },
  };
});

describe('control API answers match their response schemas', () => {
  let api: TestControl;
  beforeAll(async () => {
    api = await startControl();
  });
  afterAll(async () => {
    await api?.close();
  });

  const heal = () => {
    broken.tokenWithoutCap = false;
    broken.deploymentStatus = null;
    api.schemaMismatches.splice(0);
  };

  it('a view that drops a required field fails the call, and the answer is a 500', async () => {
    const created = await api.call('POST', '/vault/tokens', { name: 'schema-probe' });
    expect(created.status).toBe(201);
    broken.tokenWithoutCap = true;
    try {
      await expect(api.call('GET', `/vault/tokens/${created.body.id}`)).rejects.toThrow(/GET \/vault\/tokens\/\d+ answered 200 not matching its response schema: .*max_priority/);
      // Any client sees it, not only the helper's.
      const raw = await fetch(`${api.url}/vault/tokens/${created.body.id}`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
      expect(raw.status).toBe(500);
    } finally {
      heal();
    }
    expect((await api.call('GET', `/vault/tokens/${created.body.id}`)).body.max_priority).toBeNull();
  });

  it('a value outside its enum fails too, though fastify would serialise it', async () => {
    const created = await api.call('POST', '/deployments/general', generalBody('schema-enum', 'tok-schema-enum-0123456789'));
    expect(created.status).toBe(201);
    broken.deploymentStatus = 'sleeping';
    try {
      await expect(api.call('GET', `/deployments/general/${created.body.id}`)).rejects.toThrow(/\/status must be equal to one of the allowed values/);
    } finally {
      heal();
    }
    expect((await api.call('GET', `/deployments/general/${created.body.id}`)).body.status).toBe('pending');
  });

  it('every route answers inside its schema: deployments of both families, credentials, catalog', async () => {
    const general = await api.call('POST', '/deployments/general', {
      ...generalBody('schema-general', 'tok-schema-general-0123456789'),
      env: { MODE: 'x' },
      secret_env: { API_KEY: 's3cret' },
      rate_limit: { requests_per_second: 2.5, tokens_per_minute: null },
      traffic: [{ latest: true, percent: 100, tag: 'stable' }],
    });
    expect(general.status).toBe(201);
    const orchestrated = await api.call('POST', '/deployments/orchestrated', disaggregatedBody('schema-disagg', 'tok-schema-disagg-0123456789'));
    expect(orchestrated.status).toBe(201);
    const g = `/deployments/general/${general.body.id}`;
    const o = `/deployments/orchestrated/${orchestrated.body.id}`;
    expect((await api.call('PATCH', g, { max_replicas: 3 })).status).toBe(200);

    const answers = await Promise.all([
      api.call('GET', '/deployments/general'),
      api.call('GET', '/deployments/orchestrated'),
      api.call('GET', o),
      api.call('GET', `${g}/revisions`),
      api.call('GET', `${g}/revisions/1`),
      api.call('GET', `${g}/replicas`),
      api.call('GET', `${g}/events`),
      api.call('GET', `${g}/usage`),
      api.call('GET', `${o}/usage`),
      api.call('POST', '/vault/tokens', { name: 'schema-token', max_priority: 'standard' }),
      api.call('POST', '/certificates', { name: 'schema-cert', deployment_id: general.body.id, max_priority: null }),
      api.call('POST', '/service-accounts', { name: 'schema-bot', role: 'member' }),
      api.call('POST', '/vault/registry-credentials', { name: 'schema-registry', username: 'u', password: 'p4ssword', registry: 'registry.example.com' }),
      api.call('GET', '/clusters'),
      api.call('GET', '/clusters/1/hardware'),
      api.call('GET', '/quota'),
      api.call('GET', '/presets'),
      api.call('GET', '/whoami'),
    ]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201, 201, 201, 201, 200, 200, 200, 200, 200]);
    const lists = await Promise.all(['/vault/tokens', '/certificates', '/service-accounts', '/vault/registry-credentials'].map((p) => api.call('GET', p)));
    expect(lists.map((l) => l.body.items.length > 0)).toEqual([true, true, true, true]);
    // Refusals are views too.
    expect((await api.call('GET', '/deployments/general/999999')).status).toBe(404);
    expect((await api.call('POST', '/deployments/general', { ...generalBody('Bad Name', 'tok-schema-bad-0123456789') })).status).toBe(400);
    expect(api.schemaMismatches).toEqual([]);
  });
});
