// The Redis store when Redis goes away, against a redis-server this test owns (persistent, so
// it can be stopped and started again on the same port with the same data): calls fail with
// StoreUnavailableError at once while it is down and after the command timeout while it is
// frozen (SIGSTOP) — never hang; once it is back the store calls its resync listeners, reads
// what was written meanwhile and delivers changes again. Redis is stopped by its pid.

import { randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStore } from '../src/store/redis-store.js';
import { deploymentRecord } from '../src/store/store.contract.js';
import { StoreUnavailableError, type ChangeEvent } from '../src/store/store.js';
import { freePort } from './helpers/ports.js';
import { startRedisServer, type RedisServer } from './helpers/redis-server.js';

const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0;
if (!hasRedisServer) {
  if (process.env.CI === 'true') throw new Error('redis-server is required under CI=true (this test starts and stops its own)');
  console.warn('SKIPPED (no redis-server): the Redis store when Redis goes away');
}

/** How long a call took and how it ended. */
async function timed(call: () => Promise<unknown>): Promise<{ ms: number; error: unknown }> {
  const started = Date.now();
  try {
    await call();
    return { ms: Date.now() - started, error: null };
  } catch (error) {
    return { ms: Date.now() - started, error };
  }
}

(hasRedisServer ? describe : describe.skip)('the Redis store when Redis goes away', () => {
  const prefix = `infergate-test-${randomUUID()}`;
  let dir: string;
  let port: number;
  let redis: RedisServer | null = null;
  let store: RedisStore;
  const events: ChangeEvent[] = [];
  let resyncs = 0;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-redis-store-outage-'));
    port = await freePort();
    redis = await startRedisServer({ port, dir, persistent: true });
    store = new RedisStore({ url: redis.url, prefix });
    await store.open();
    store.watch((e) => events.push(e));
    store.onResync(() => resyncs++);
  });

  afterAll(async () => {
    if (redis) process.kill(redis.pid, 'SIGCONT');
    await store?.close();
    await redis?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('fails at once while Redis is down, resyncs and delivers changes once it is back', async () => {
    const before = await store.create('deployment', (id) => deploymentRecord(id, 'before'));
    await redis!.stop();
    redis = null;
    for (const call of [() => store.get('deployment', before.value.id), () => store.create('deployment', (id) => deploymentRecord(id, 'lost')), () => store.ping()]) {
      const { ms, error } = await timed(call);
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).message).toMatch(/^the store \(Redis\) is unreachable/);
      expect(ms).toBeLessThan(1_000);
    }

    redis = await startRedisServer({ port, dir, persistent: true });
    // Written by another process as soon as Redis is back, perhaps before this store's feed is.
    const other = new RedisStore({ url: redis.url, prefix });
    await other.open();
    const during = await other.create('deployment', (id) => deploymentRecord(id, 'meanwhile'));
    await other.close();
    await expect.poll(() => resyncs, { timeout: 10_000 }).toBe(1);
    expect((await store.list('deployment')).map((d) => d.value.name)).toEqual(['before', 'meanwhile']);
    expect(during.version).toBe(1);
    const after = await store.create('deployment', (id) => deploymentRecord(id, 'after'));
    await expect.poll(() => events.some((e) => e.id === after.value.id && e.op === 'put'), { timeout: 5_000 }).toBe(true);
  }, 30_000);

  it('gives up on a call Redis does not answer after the command timeout, then works again', async () => {
    await expect.poll(() => store.ping().then(() => true, () => false), { timeout: 10_000 }).toBe(true);
    process.kill(redis!.pid, 'SIGSTOP');
    let frozen: { ms: number; error: unknown };
    try {
      frozen = await timed(() => store.list('deployment'));
    } finally {
      process.kill(redis!.pid, 'SIGCONT');
    }
    expect(frozen.error).toBeInstanceOf(StoreUnavailableError);
    expect(frozen.ms).toBeGreaterThanOrEqual(2_500);
    expect(frozen.ms).toBeLessThan(8_000);
    await expect.poll(() => store.list('deployment').then((l) => l.length, () => -1), { timeout: 10_000 }).toBe(3);
  }, 30_000);
});
