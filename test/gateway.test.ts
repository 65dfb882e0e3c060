// The gateway's listener in front of the control plane's state: TLS with the platform CA,
// Host routing, Bearer authentication, paused / not-ready answers, forwarding to a ready
// replica without the client's Authorization, and changes taking effect from the feed.

import { waitFor } from './helpers/wait.js';
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway, type Gateway } from '../src/gateway/gateway.js';
import { loadOrCreateCa } from '../src/pki/ca.js';
import { loadOrIssueGatewayCertificate } from '../src/pki/server-certs.js';
import { generalBody, startControl, type TestControl } from './helpers/control.js';
import { httpsRequest } from './helpers/https-client.js';

const DOMAIN = 'endpoints.test';
let api: TestControl;
let gateway: Gateway;
let port: number;
let caPem: string;
let certsDir: string;
let upstream: http.Server;
let upstreamPort: number;
const seenHeaders: http.IncomingHttpHeaders[] = [];


beforeAll(async () => {
  api = await startControl();
  certsDir = await mkdtemp(path.join(os.tmpdir(), 'infergate-certs-'));
  const ca = await loadOrCreateCa(certsDir);
  caPem = ca.certPem;
  const cert = await loadOrIssueGatewayCertificate(ca, certsDir, DOMAIN);
  gateway = createGateway({ store: api.store, domain: DOMAIN, ...cert, ca, logger: pino({ level: 'silent' }) });
  await gateway.start();
  await new Promise<void>((resolve) => gateway.server.listen(0, '127.0.0.1', resolve));
  port = (gateway.server.address() as { port: number }).port;
  upstream = http.createServer((req, res) => {
    seenHeaders.push(req.headers);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ path: req.url }));
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamPort = (upstream.address() as { port: number }).port;
});

afterAll(async () => {
  await gateway?.close();
  upstream?.close();
  await api?.close();
  await rm(certsDir, { recursive: true, force: true });
});

const get = (host: string, headers: Record<string, string> = {}) => httpsRequest({ port, host, ca: caPem, headers });

describe('gateway', () => {
  const token = 'gateway-test-token-0001';
  let id: number;

  it('answers 404 for a host that is no endpoint', async () => {
    const res = await get(`nothing.${DOMAIN}`);
    expect(res.status).toBe(404);
  });

  it('answers 401 without or with a wrong token, and 503 not ready with the right one', async () => {
    const created = await api.call('POST', '/deployments/general', generalBody('gw-one', token));
    expect(created.status).toBe(201);
    id = created.body.id;
    const host = `gw-one.${DOMAIN}`;
    await waitFor(async () => (await get(host)).status !== 404);

    const none = await get(host);
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
    expect((await get(host, { authorization: 'Bearer wrong-token-000000' })).status).toBe(401);

    const pending = await get(host, { authorization: `Bearer ${token}` });
    expect(pending.status).toBe(503);
    expect(JSON.parse(pending.body).error.message).toMatch(/gw-one is not ready \(pending\)/);
  });

  it('answers 503 paused within a second of the pause', async () => {
    const host = `gw-one.${DOMAIN}`;
    expect((await api.call('POST', `/deployments/general/${id}/pause`)).status).toBe(202);
    await waitFor(async () => /paused/.test((await get(host, { authorization: `Bearer ${token}` })).body));
    expect((await api.call('POST', `/deployments/general/${id}/resume`)).status).toBe(202);
  });

  it('forwards to a ready replica without the Authorization header', async () => {
    const host = `gw-one.${DOMAIN}`;
    await api.store.create('replica', (rid) => ({
      id: rid,
      deployment_id: id,
      revision: 1,
      component: 'Replica',
      name: `gw-one-${rid}`,
      address: `127.0.0.1:${upstreamPort}`,
      state: 'ready',
      restarts: 0,
      pid: null,
      metrics_target: null,
      updated_at: new Date().toISOString(),
    }));
    await waitFor(async () => (await get(host, { authorization: `Bearer ${token}` })).status === 200);
    const res = await httpsRequest({ port, host, ca: caPem, path: '/v1/models?x=1', headers: { authorization: `Bearer ${token}`, 'x-request-id': 'req-42' } });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ path: '/v1/models?x=1' });
    const last = seenHeaders.at(-1);
    expect(last?.authorization).toBeUndefined();
    expect(last?.['x-forwarded-proto']).toBe('https');
    expect(last?.['x-forwarded-host']).toBe(host);
    expect(last?.['x-request-id']).toBe('req-42');
  });

  it('stops accepting a deleted token, and answers 404 for a deleted deployment, within a second', async () => {
    const host = `gw-one.${DOMAIN}`;
    const d = await api.call('GET', `/deployments/general/${id}`);
    expect((await api.call('DELETE', `/vault/tokens/${d.body.endpoint_token_id}`)).status).toBe(204);
    await waitFor(async () => (await get(host, { authorization: `Bearer ${token}` })).status === 401);
    expect((await api.call('DELETE', `/deployments/general/${id}`)).status).toBe(202);
    await waitFor(async () => (await get(host)).status === 404);
  });
});
