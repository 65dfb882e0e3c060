// Tests for rate limits shared by gateways through Redis (RateLimiter with SharedRateLimits
// over RedisRateLimits): two limiters on one Redis admit one limit between them, not one
// each; the decisions of one turn of the event loop go to Redis in one batch; tokens spent
// through one gateway count at the other. Then on a private redis-server the test stops and
// freezes: each gateway falls back to its share of the limit (1/N, N the gateways reporting
// load), logs one warning and shows it in a metric, never waits longer than the timeout, and
// counts in Redis again — with one info line — once Redis answers.

import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino, type Logger } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../test/helpers/ports.js';
import { describeWithRedis, redisUrlForTests } from '../../test/helpers/redis.js';
import { startRedisServer, type RedisServer } from '../../test/helpers/redis-server.js';
import { systemClock } from '../core/clock.js';
import { LOAD_TOPIC } from '../domain/load-report.js';
import type { RateLimit } from '../domain/records.js';
import { RedisRateLimits, type SharedLimitOp, type SharedLimitVerdict } from '../store/redis-rate-limit.js';
import { RedisStore } from '../store/redis-store.js';
import type { Store } from '../store/store.js';
import { RateLimiter, type RateDecision } from './rate-limiter.js';
import { SharedRateLimits } from './shared-rate-limit.js';

const ID = 7;

/** RedisRateLimits that also records each batch it sends. */
class CountedRedisRateLimits extends RedisRateLimits {
  readonly batches: number[] = [];
  override run(ops: readonly SharedLimitOp[]): Promise<SharedLimitVerdict[]> {
    this.batches.push(ops.length);
    return super.run(ops);
  }
}

interface TestGateway {
  limiter: RateLimiter;
  shared: SharedRateLimits;
  redis: CountedRedisRateLimits;
  registry: Registry;
  logs: Array<{ level: number; msg: string }>;
}

function captureLogger(into: Array<{ level: number; msg: string }>): Logger {
  return pino({ level: 'info' }, { write: (line: string) => void into.push(JSON.parse(line) as { level: number; msg: string }) });
}

async function startGatewayLimiter(url: string, prefix: string, heartbeats: Pick<Store, 'readReports'>, timeoutMs?: number): Promise<TestGateway> {
  const logs: TestGateway['logs'] = [];
  const registry = new Registry();
  const redis = new CountedRedisRateLimits({ url, prefix, timeoutMs });
  const shared = new SharedRateLimits({ redis, heartbeats, log: captureLogger(logs), registry, probeIntervalMs: 100, countIntervalMs: 200 });
  const limiter = new RateLimiter(systemClock, shared);
  await limiter.start();
  return { limiter, shared, redis, registry, logs };
}

const noHeartbeats: Pick<Store, 'readReports'> = { readReports: () => Promise.resolve(new Map()) };

async function metric(registry: Registry, name: string, labels = ''): Promise<number | undefined> {
  const text = await registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

describeWithRedis('rate limits shared through Redis', () => {
  const prefix = `infergate-test-${randomBytes(6).toString('hex')}`;
  const url = (): string => redisUrlForTests() as string;
  const started: TestGateway[] = [];
  const gateway = async (): Promise<TestGateway> => {
    const g = await startGatewayLimiter(url(), prefix, noHeartbeats);
    started.push(g);
    return g;
  };

  afterAll(async () => {
    for (const g of started) await g.limiter.close();
    const redis = new Redis(url());
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('two gateways on one Redis admit one limit between them, not one each', async () => {
    const [a, b] = [await gateway(), await gateway()];
    const limit: RateLimit = { requests_per_second: 10, tokens_per_minute: null };
    const decisions = await Promise.all(Array.from({ length: 40 }, async (_, i) => (i % 2 === 0 ? a : b).limiter.admit(ID, limit, 'token:both')));
    const admitted = decisions.filter((d) => d.ok).length;
    // The burst (one second's worth), plus what refilled while the batches ran.
    expect(admitted).toBeGreaterThanOrEqual(10);
    expect(admitted).toBeLessThanOrEqual(11);
    const refused = decisions.find((d): d is Extract<RateDecision, { ok: false }> => !d.ok);
    expect(refused).toMatchObject({ limit: 'requests', retryAfterSeconds: 1 });
    expect(refused?.message).toMatch(/may send 10 requests per second/);
  });

  it("sends one turn of the event loop's decisions to Redis in one batch", async () => {
    const g = await gateway();
    const limit: RateLimit = { requests_per_second: 1000, tokens_per_minute: null };
    await g.limiter.admit(ID, limit, 'token:warm-up'); // the connection is up
    g.redis.batches.length = 0;
    const decisions = await Promise.all(Array.from({ length: 100 }, async () => g.limiter.admit(ID, limit, 'token:batched')));
    expect(decisions.every((d) => d.ok)).toBe(true);
    expect(g.redis.batches).toEqual([100]);
  });

  it('tokens spent through one gateway are owed at the other', async () => {
    const [a, b] = [await gateway(), await gateway()];
    const limit: RateLimit = { requests_per_second: null, tokens_per_minute: 600 };
    expect((await a.limiter.admit(ID, limit, 'token:spender')).ok).toBe(true);
    a.limiter.spendTokens(ID, limit, 'token:spender', 900); // 300 tokens of debt: 30 s
    await expect
      .poll(async () => b.limiter.admit(ID, limit, 'token:spender'))
      .toMatchObject({ ok: false, limit: 'tokens', retryAfterSeconds: 30, message: expect.stringMatching(/600 tokens per minute/) });
  });

  it('is synchronous with no limit, as on the file store', async () => {
    expect((await gateway()).limiter.admit(ID, null, 'token:free')).toEqual({ ok: true });
  });
});

describe('when Redis does not answer: each gateway at its share, and back', () => {
  let dir: string;
  let port: number;
  let server: RedisServer | null = null;
  let store: RedisStore;
  let g: TestGateway | undefined;
  const prefix = 'infergate-fallback-test';

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-rl-redis-'));
    port = await freePort();
    server = await startRedisServer({ port, dir });
    store = new RedisStore({ url: server.url, prefix });
    await store.open();
    // Two gateways report their load: each one's share is half of every limit.
    await store.publishReport(LOAD_TOPIC, 'gw-a', '{}', 600_000);
    await store.publishReport(LOAD_TOPIC, 'gw-b', '{}', 600_000);
  });

  afterEach(() => {
    // A test that failed while Redis was frozen must not leave it so.
    if (server) process.kill(server.pid, 'SIGCONT');
  });

  afterAll(async () => {
    await g?.limiter.close();
    await store?.close();
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const limit: RateLimit = { requests_per_second: 10, tokens_per_minute: null };
  const slow: RateLimit = { requests_per_second: 1, tokens_per_minute: null };

  it('falls back to local buckets at 1/N of the limit, says so once, and shares again once Redis is back', async () => {
    const gw = (g = await startGatewayLimiter(server!.url, prefix, store));
    await expect.poll(() => gw.shared.liveGateways).toBe(2);
    const first = gw.limiter.admit(ID, limit, 'token:x');
    expect(first).toBeInstanceOf(Promise);
    expect((await first).ok).toBe(true);
    // This gateway's share of one request a second (one every 2 s) used through Redis: a
    // fallback goes on from there.
    expect((await gw.limiter.admit(ID, slow, 'token:busy')).ok).toBe(true);
    expect(await metric(gw.registry, 'infergate_gateway_rate_limit_shared', 'state="redis"')).toBe(1);

    await server!.stop();
    server = null;
    // The next decision does not wait for Redis: it is this gateway's own, at its share.
    const startedAt = performance.now();
    expect((await gw.limiter.admit(ID, limit, 'token:x')).ok).toBe(true);
    expect(performance.now() - startedAt).toBeLessThan(1000);
    expect(gw.shared.state).toBe('fallback');
    // Local now, synchronous: 5 a second (10 ÷ 2 gateways), the burst of one of them.
    const local: RateDecision[] = [];
    for (let i = 0; i < 10; i++) {
      const d = gw.limiter.admit(ID, limit, 'token:y');
      if (d instanceof Promise) throw new Error('a fallback decision must not wait for Redis');
      local.push(d);
    }
    expect(local.filter((d) => d.ok)).toHaveLength(5);
    // Not a fresh burst for a credential that had used this gateway's share through Redis.
    expect(gw.limiter.admit(ID, slow, 'token:busy')).toMatchObject({ ok: false, limit: 'requests' });
    // The refusal names the deployment's limit, not the share.
    expect(local.at(-1)).toMatchObject({ ok: false, limit: 'requests', message: expect.stringMatching(/may send 10 requests per second/) });
    const warnings = gw.logs.filter((l) => l.level === 40 && /rate limits: Redis did not answer/.test(l.msg));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toMatch(/1\/2 of each limit/);
    expect(await metric(gw.registry, 'infergate_gateway_rate_limit_shared', 'state="fallback"')).toBe(1);
    expect(await metric(gw.registry, 'infergate_gateway_rate_limit_shared', 'state="redis"')).toBe(0);
    expect(await metric(gw.registry, 'infergate_gateway_rate_limit_fallback_decisions_total')).toBeGreaterThanOrEqual(12);

    server = await startRedisServer({ port, dir });
    await expect.poll(() => gw.shared.state, { timeout: 10_000 }).toBe('redis');
    expect(gw.logs.filter((l) => l.level === 30 && /rate limits: Redis answers again/.test(l.msg))).toHaveLength(1);
    expect(await metric(gw.registry, 'infergate_gateway_rate_limit_shared', 'state="redis"')).toBe(1);
    // Counted in Redis again (a new, empty one here: the whole limit is there).
    const again = gw.limiter.admit(ID, limit, 'token:z');
    expect(again).toBeInstanceOf(Promise);
    expect((await again).ok).toBe(true);
    expect(gw.logs.filter((l) => l.level === 40)).toHaveLength(1);
  });

  it('never holds a request longer than the timeout on a Redis that stopped answering on an open connection', async () => {
    const gw = g!;
    await expect.poll(() => gw.shared.state).toBe('redis');
    process.kill(server!.pid, 'SIGSTOP');
    // Each decision waits the timeout at most, then is taken locally; three late in a row and
    // the gateway stops asking.
    for (let i = 0; i < 3; i++) {
      expect(gw.shared.state).toBe('redis');
      const startedAt = performance.now();
      const decision = await gw.limiter.admit(ID, limit, 'token:frozen');
      const waited = performance.now() - startedAt;
      expect(decision.ok).toBe(true);
      // The timeout is 50 ms; the bound leaves room for a loaded machine and is still far from
      // the 3 s a store command may wait.
      expect(waited).toBeGreaterThanOrEqual(49);
      expect(waited).toBeLessThan(1000);
    }
    expect(gw.shared.state).toBe('fallback');
    expect(gw.limiter.admit(ID, limit, 'token:frozen')).not.toBeInstanceOf(Promise);
    process.kill(server!.pid, 'SIGCONT');
    await expect.poll(() => gw.shared.state, { timeout: 10_000 }).toBe('redis');
    expect(gw.logs.filter((l) => l.level === 40 && /rate limits: Redis did not answer/.test(l.msg))).toHaveLength(2);
  });
});
