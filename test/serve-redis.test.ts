// `infergate serve --redis`: state lives in Redis, not in the data dir, so a restart on an
// empty data dir keeps every deployment, and a separate `--role gateway` process sharing the
// Redis routes the control process's deployments. Both run the default gateway workers (one
// per core on Redis), so the default is what this exercises.

import { apiCall } from './helpers/admin-api.js';
import { randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { generalBody } from './helpers/control.js';
import { httpsRequest } from './helpers/https-client.js';
import { removePods, scopeOf } from './helpers/pods.js';
import { describeWithRedis, redisUrlForTests } from './helpers/redis.js';
import type { ServeProcess } from './helpers/serve-process.js';
import { startOnSharedStore } from './helpers/shared-store.js';
import { readFile } from 'node:fs/promises';
import { removeTempDir } from './helpers/temp-dirs.js';

describeWithRedis('infergate serve on Redis', () => {
  const prefix = `infergate-test-${randomUUID()}`;
  const adminKey = 'igk_redis-admin-key-for-tests-0000';
  const running: ServeProcess[] = [];
  let root: string;

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'infergate-redis-serve-'));
  });
  afterAll(async () => {
    for (const p of running) p.kill('SIGKILL');
    await Promise.all(running.map((p) => p.exited));
    // Every process here shares one scope (the Redis URL and prefix): their pods go together.
    removePods(scopeOf(root, redisUrlForTests() as string, prefix));
    await removeTempDir(root);
    const redis = new Redis(redisUrlForTests() as string);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  const start = async (name: string, args: string[] = []) => {
    // A short controller lease: the second process takes over soon after the first is killed.
    const p = await startOnSharedStore({ root, redisUrl: redisUrlForTests() as string, prefix, adminKey, domain: 'endpoints.test', secretFill: 7 }, name, ['--controller-lease-ttl', '3', ...args]);
    running.push(p);
    return p;
  };

  it('keeps state across a restart on a new data dir and shares it with a gateway process', async () => {
    const first = await start('one');
    expect(first.output()).toMatch(/state in Redis/);
    const created = await apiCall(first.apiUrl, adminKey, 'POST', '/deployments/general', generalBody('redis-kept', 'redis-endpoint-token-1'));
    expect(created.status).toBe(201);
    first.kill('SIGKILL');
    await first.exited;

    const second = await start('two');
    const list = (await apiCall(second.apiUrl, adminKey, 'GET', '/deployments/general')).body as { items: { name: string }[] };
    expect(list.items.map((d) => d.name)).toEqual(['redis-kept']);

    const gateway = await start('gw', ['--role', 'gateway']);
    const port = Number(/gateway \(TLS[^)]*\) listening on [^:]+:(\d+)/.exec(gateway.output())?.[1]);
    const ca = await readFile(path.join(root, 'certs', 'ca.crt'), 'utf8');
    const host = 'redis-kept.endpoints.test';
    expect((await httpsRequest({ port, host, ca })).status).toBe(401);
    // Served once the second control process has taken the lease the first one held and started a replica.
    const authorized = { port, host, ca, headers: { authorization: 'Bearer redis-endpoint-token-1' } };
    await expect.poll(async () => (await httpsRequest(authorized)).status, { timeout: 30_000, interval: 250 }).toBe(200);
    expect((await httpsRequest({ port, host: 'absent.endpoints.test', ca })).status).toBe(404);

    // A second control process on the same store stands by: one controller acts at a time.
    const standby = await start('three');
    await expect.poll(() => standby.output(), { timeout: 10_000 }).toMatch(/another controller holds the lease on this store: standing by/);
  }, 60_000); // four `infergate serve` starts and a lease hand-over: near the 30 s default on a loaded 2-core machine
});
