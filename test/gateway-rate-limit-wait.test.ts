// The gateway waiting on a rate-limit decision counted in Redis: a real gateway (TLS on
// loopback) whose limits are counted in a private redis-server. A request admitted by Redis
// goes on through the pipeline; a client that leaves while its decision is still in Redis
// (frozen with SIGSTOP, the round-trip timeout set long) ends at once as 499 — it does not
// wait for the decision — and the late decision changes nothing. Redis stopped by its pid.

import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createGateway, type Gateway } from '../src/gateway/gateway.js';
import { loadOrCreateCa } from '../src/pki/ca.js';
import { loadOrIssueGatewayCertificate } from '../src/pki/server-certs.js';
import { RedisRateLimits, type SharedLimitOp, type SharedLimitVerdict } from '../src/store/redis-rate-limit.js';
import { generalBody, startControl, type TestControl } from './helpers/control.js';
import { httpsRequest } from './helpers/https-client.js';
import { freePort } from './helpers/ports.js';
import { startRedisServer, type RedisServer } from './helpers/redis-server.js';

const DOMAIN = 'endpoints.test';
const TOKEN = 'tok_waits_0123456789abcdef0123';
const HOST = `waits.${DOMAIN}`;

/** The gateway's counters in Redis, also telling the test when a batch went out. */
class WatchedRedisRateLimits extends RedisRateLimits {
  sent = 0;
  override run(ops: readonly SharedLimitOp[]): Promise<SharedLimitVerdict[]> {
    this.sent++;
    return super.run(ops);
  }
}

const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0;
if (!hasRedisServer) console.warn('SKIPPED (no redis-server): the gateway waiting on a rate limit counted in Redis');

(hasRedisServer ? describe : describe.skip)('a request waiting on its rate-limit decision from Redis', () => {
  let dir: string;
  let redis: RedisServer;
  let limits: WatchedRedisRateLimits;
  let api: TestControl;
  let gateway: Gateway;
  let port: number;
  let ca: string;
  const registry = new Registry();

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-rl-wait-'));
    redis = await startRedisServer({ port: await freePort(), dir });
    const authority = await loadOrCreateCa(path.join(dir, 'certs'));
    ca = authority.certPem;
    api = await startControl({ ca: authority });
    const cert = await loadOrIssueGatewayCertificate(authority, path.join(dir, 'certs'), DOMAIN);
    // Long enough that only the client leaving can end the request while Redis is frozen.
    limits = new WatchedRedisRateLimits({ url: redis.url, prefix: 'infergate-wait-test', timeoutMs: 30_000 });
    gateway = createGateway({ store: api.store, domain: DOMAIN, ...cert, ca: authority, registry, logger: pino({ level: 'silent' }), sharedLimits: limits });
    await gateway.start();
    await new Promise<void>((resolve) => gateway.server.listen(0, '127.0.0.1', resolve));
    port = (gateway.server.address() as { port: number }).port;
    const created = await api.call('POST', '/deployments/general', { ...generalBody('waits', TOKEN), rate_limit: { requests_per_second: 100 } });
    expect(created.status).toBe(201);
    await vi.waitFor(() => expect(gateway.table.lookup(HOST)).toBeDefined());
  });

  afterAll(async () => {
    process.kill(redis.pid, 'SIGCONT');
    await gateway?.close();
    await api?.close();
    await redis?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const requests = async (status: number): Promise<number> => {
    const text = await registry.metrics();
    const line = text.split('\n').find((l) => l.startsWith('infergate_requests_total{') && l.includes('deployment="waits"') && l.includes(`status="${status}"`));
    return line === undefined ? 0 : Number(line.split(' ').at(-1));
  };

  it('goes on once Redis admits it (here to 503: the deployment has no replica yet)', async () => {
    const res = await httpsRequest({ port, host: HOST, ca, path: '/v1/models', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(503);
    expect(limits.sent).toBeGreaterThan(0);
  });

  it('ends as aborted (499) the moment its client leaves, without waiting for the decision', async () => {
    process.kill(redis.pid, 'SIGSTOP');
    const sentBefore = limits.sent;
    const req = https.request({ host: '127.0.0.1', port, servername: HOST, ca, path: '/v1/models', headers: { host: HOST, authorization: `Bearer ${TOKEN}` }, agent: false });
    req.on('error', () => undefined);
    req.end();
    // Its decision is in Redis, which does not answer.
    await expect.poll(() => limits.sent).toBe(sentBefore + 1);
    req.destroy();
    await expect.poll(() => requests(499), { timeout: 2_000 }).toBe(1);
    process.kill(redis.pid, 'SIGCONT');
    // The late answer arrives and changes nothing: the request ended once, as 499.
    await expect.poll(async () => (await limits.run([{ op: 'admit', deploymentId: 0, credential: 'token:probe', requestsPerSecond: null, tokensPerMinute: null }])).length).toBe(1);
    expect(await requests(499)).toBe(1);
    expect(await requests(503)).toBe(1);
    expect(await requests(500)).toBe(0);
  });
});
