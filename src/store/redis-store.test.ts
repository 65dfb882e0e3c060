// Tests for the Redis store: the shared Store contract on a random key prefix, plus what only
// a shared store has — several instances seeing each other's changes and drawing distinct ids.

import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { describeWithRedis, redisUrlForTests } from '../../test/helpers/redis.js';
import { freePort } from '../../test/helpers/ports.js';
import { RedisStore, redactRedisUrl } from './redis-store.js';
import { StoreError, type ChangeEvent, type Store } from './store.js';
import { createToken, describeStoreContract, type StoreHarness } from './store.contract.js';

function randomPrefix(): string {
  return `infergate-test-${randomBytes(6).toString('hex')}`;
}

/** Removes every key under the prefix, through a connection of its own. */
async function dropPrefix(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** Resolves once the server's clock, which expires leases and reports, is `ms` past now. */
async function redisTimePasses(url: string, ms: number): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  const serverMs = async () => {
    const [seconds, micros] = await redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };
  try {
    await redis.connect();
    const until = (await serverMs()) + ms;
    await expect.poll(serverMs, { interval: 20, timeout: ms + 5000 }).toBeGreaterThanOrEqual(until);
  } finally {
    redis.disconnect();
  }
}

/** Stores on one fresh prefix; cleanup closes them all and deletes the prefix's keys. */
async function redisHarness(): Promise<StoreHarness & { another: () => Promise<Store> }> {
  const url = redisUrlForTests() ?? '';
  const prefix = randomPrefix();
  const opened: Store[] = [];
  const openNew = async () => {
    const store = new RedisStore({ url, prefix });
    await store.open();
    opened.push(store);
    return store;
  };
  return {
    store: await openNew(),
    reopen: openNew,
    another: openNew,
    cleanup: async () => {
      for (const store of opened) await store.close();
      await dropPrefix(url, prefix);
    },
    elapse: (ms) => redisTimePasses(url, ms),
  };
}

describeWithRedis('RedisStore', () => {
  describeStoreContract('RedisStore', redisHarness);

  it('lets two instances on one prefix see each other’s changes', async () => {
    const h = await redisHarness();
    try {
      const other = await h.another();
      const seenHere: ChangeEvent[] = [];
      const seenThere: ChangeEvent[] = [];
      h.store.watch((e) => seenHere.push(e));
      other.watch((e) => seenThere.push(e));
      // Let both subscriptions settle before the first write: another instance's writes do not
      // wait for our SUBSCRIBE.
      await createToken(h.store, 'warm-up');
      await createToken(other, 'a');
      await h.store.delete('token', 2);
      const expected = [
        { kind: 'token', id: 1, op: 'put', version: 1 },
        { kind: 'token', id: 2, op: 'put', version: 1 },
        { kind: 'token', id: 2, op: 'delete', version: 1 },
      ];
      await vi.waitFor(() => expect(seenHere).toEqual(expected), { timeout: 5_000 });
      await vi.waitFor(() => expect(seenThere.slice(-2)).toEqual(expected.slice(-2)), { timeout: 5_000 });
      expect(await other.get('token', 1)).toMatchObject({ value: { name: 'warm-up' } });
    } finally {
      await h.cleanup();
    }
  });

  it('never gives the same id to concurrent creates from two instances', async () => {
    const h = await redisHarness();
    try {
      const other = await h.another();
      const creates = Array.from({ length: 40 }, (_, i) => createToken(i % 2 === 0 ? h.store : other, `t${i}`));
      const ids = (await Promise.all(creates)).map((t) => t.value.id);
      expect(new Set(ids).size).toBe(40);
      expect([...ids].sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      expect(await other.list('token')).toHaveLength(40);
    } finally {
      await h.cleanup();
    }
  });

  it('resolves a unique-key race between two instances to exactly one winner', async () => {
    const h = await redisHarness();
    try {
      const other = await h.another();
      const results = await Promise.allSettled(
        Array.from({ length: 10 }, (_, i) => createToken(i % 2 === 0 ? h.store : other, `t${i}`, 'contested')),
      );
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      expect(await h.store.list('token')).toHaveLength(1);
    } finally {
      await h.cleanup();
    }
  });
});

describe('RedisStore without a server', () => {
  it('fails open() with a clear message that hides the password', async () => {
    const port = await freePort();
    const store = new RedisStore({ url: `redis://:s3cret@127.0.0.1:${port}/0` });
    const err = await store.open().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect((err as Error).message).toMatch(new RegExp(`^cannot reach Redis at redis://127\\.0\\.0\\.1:${port}/0: .*ECONNREFUSED`));
    expect((err as Error).message).not.toContain('s3cret');
    await store.close();
  });

  it('redacts only the password from URLs', () => {
    expect(redactRedisUrl('redis://user:pw@host:6380/2')).toBe('redis://user@host:6380/2');
    expect(redactRedisUrl('rediss://host:6380')).toBe('rediss://host:6380');
  });
});
