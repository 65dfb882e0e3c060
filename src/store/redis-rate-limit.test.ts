// Tests for the rate limits counted in Redis: the Lua script's decisions against a real
// redis-server, on the clock the test sets (and once on Redis's own) — the burst, the
// interval, fractional rates, the token debt and its Retry-After, keys per deployment and
// credential with a time to live, a changed limit, a batch in one pipeline, EVAL after
// NOSCRIPT — and the same answers as the in-memory limiter for a long random sequence.

import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { describeWithRedis, redisUrlForTests } from '../../test/helpers/redis.js';
import { ManualClock } from '../core/clock.js';
import type { RateLimit } from '../domain/records.js';
import { RateLimiter } from '../gateway/rate-limiter.js';
import { RATE_LIMIT_SHA, RedisRateLimits, type SharedLimitVerdict } from './redis-rate-limit.js';

const ID = 1;

describeWithRedis('RedisRateLimits: the Lua script against redis-server', () => {
  const url = (): string => redisUrlForTests() as string;
  let prefix: string;
  let now: number;
  let limits: RedisRateLimits;
  let redis: Redis;

  beforeEach(async () => {
    prefix = `infergate-test-${randomBytes(6).toString('hex')}`;
    now = 1_700_000_000_000;
    limits = new RedisRateLimits({ url: url(), prefix, now: () => now });
    await limits.open();
    redis = new Redis(url());
  });

  afterEach(async () => {
    await limits.close();
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  const admit = async (limit: RateLimit, credential = 'token:a', deploymentId = ID): Promise<SharedLimitVerdict> =>
    (await limits.run([{ op: 'admit', deploymentId, credential, requestsPerSecond: limit.requests_per_second, tokensPerMinute: limit.tokens_per_minute }]))[0]!;
  const spend = async (tpm: number, tokens: number, credential = 'token:a'): Promise<void> => {
    await limits.run([{ op: 'spend', deploymentId: ID, credential, tokensPerMinute: tpm, tokens }]);
  };
  const rps = (n: number): RateLimit => ({ requests_per_second: n, tokens_per_minute: null });

  it('requests per second: a burst of one second, then one request per 1/rps, with the wait until the next', async () => {
    expect(await admit(rps(2))).toEqual({ ok: true });
    expect(await admit(rps(2))).toEqual({ ok: true });
    expect(await admit(rps(2))).toEqual({ ok: false, limit: 'requests', waitMs: 500 });
    now += 499;
    expect(await admit(rps(2))).toEqual({ ok: false, limit: 'requests', waitMs: 1 });
    now += 1;
    expect(await admit(rps(2))).toEqual({ ok: true });
    expect((await admit(rps(2))).ok).toBe(false);
  });

  it('a fractional rate: 0.2 rps is one request every 5 s', async () => {
    expect(await admit(rps(0.2))).toEqual({ ok: true });
    expect(await admit(rps(0.2))).toEqual({ ok: false, limit: 'requests', waitMs: 5000 });
    now += 4000;
    expect(await admit(rps(0.2))).toEqual({ ok: false, limit: 'requests', waitMs: 1000 });
    now += 1000;
    expect(await admit(rps(0.2))).toEqual({ ok: true });
  });

  it('one key per deployment and credential, expiring once its budgets are full again; no secret in it', async () => {
    expect((await admit(rps(1), 'token:a')).ok).toBe(true);
    expect((await admit(rps(1), 'token:a')).ok).toBe(false);
    expect((await admit(rps(1), 'cert:b')).ok).toBe(true);
    expect((await admit(rps(1), 'token:a', 2)).ok).toBe(true);
    expect((await redis.keys(`${prefix}:*`)).sort()).toEqual([`${prefix}:ratelimit:1:cert:b`, `${prefix}:ratelimit:1:token:a`, `${prefix}:ratelimit:2:token:a`]);
    // Full again 1 s after the request; the key lives a second more.
    const ttl = await redis.pttl(`${prefix}:ratelimit:1:cert:b`);
    expect(ttl).toBeGreaterThan(1500);
    expect(ttl).toBeLessThanOrEqual(2000);
    // A token debt keeps it for as long as the debt lasts: 1200 tokens at 600 a minute is two minutes.
    await spend(600, 1200, 'cert:b');
    expect(await redis.pttl(`${prefix}:ratelimit:1:cert:b`)).toBeGreaterThan(120_000);
  });

  it('tokens per minute: spent after the response, admits while any is left, waits until the debt is repaid', async () => {
    const limit: RateLimit = { requests_per_second: null, tokens_per_minute: 600 }; // 10 tokens a second
    expect(await admit(limit)).toEqual({ ok: true });
    await spend(600, 500);
    expect(await admit(limit)).toEqual({ ok: true }); // 100 left
    await spend(600, 400); // 300 in debt
    expect(await admit(limit)).toEqual({ ok: false, limit: 'tokens', waitMs: 30_000 });
    now += 29_000;
    expect((await admit(limit)).ok).toBe(false);
    now += 1_001;
    expect(await admit(limit)).toEqual({ ok: true });
  });

  it('tokens are checked first: a credential in token debt takes nothing from its request budget', async () => {
    const both: RateLimit = { requests_per_second: 1, tokens_per_minute: 60 };
    await spend(60, 120);
    expect(await admit(both)).toMatchObject({ ok: false, limit: 'tokens' });
    now += 60_001;
    expect(await admit(both)).toEqual({ ok: true });
  });

  it('a changed limit starts full', async () => {
    expect((await admit(rps(1))).ok).toBe(true);
    expect((await admit(rps(1))).ok).toBe(false);
    expect((await admit(rps(5))).ok).toBe(true);
    expect((await admit(rps(1))).ok).toBe(true); // changed back: full again
    expect((await admit(rps(1))).ok).toBe(false);
  });

  it('a batch is one pipeline, answered in order: the burst passes and the rest are refused', async () => {
    const ops = Array.from({ length: 10 }, () => ({ op: 'admit' as const, deploymentId: ID, credential: 'token:a', requestsPerSecond: 4, tokensPerMinute: null }));
    const verdicts = await limits.run(ops);
    expect(verdicts.map((v) => v.ok)).toEqual([true, true, true, true, false, false, false, false, false, false]);
  });

  it('sends the script again with EVAL when Redis lost it (NOSCRIPT)', async () => {
    expect((await admit(rps(1))).ok).toBe(true);
    await redis.script('FLUSH');
    expect(await admit(rps(1))).toEqual({ ok: false, limit: 'requests', waitMs: 1000 });
    // EVAL cached it again: the next batches go by EVALSHA.
    expect(await redis.script('EXISTS', RATE_LIMIT_SHA)).toEqual([1]);
    expect((await admit(rps(1), 'token:other')).ok).toBe(true);
  });

  it("on Redis's own clock (no clock given), as gateways run it", async () => {
    const onRedisTime = new RedisRateLimits({ url: url(), prefix });
    await onRedisTime.open();
    try {
      const op = { op: 'admit' as const, deploymentId: ID, credential: 'token:redis-time', requestsPerSecond: 1, tokensPerMinute: null };
      const [first, second] = await onRedisTime.run([op, op]);
      expect(first).toEqual({ ok: true });
      expect(second).toMatchObject({ ok: false, limit: 'requests' });
      expect((second as { waitMs: number }).waitMs).toBeGreaterThan(900);
      expect((second as { waitMs: number }).waitMs).toBeLessThanOrEqual(1000);
    } finally {
      await onRedisTime.close();
    }
  });

  it('answers as the in-memory limiter does, over a long random sequence of admits, spends and time', async () => {
    const clock = new ManualClock(now);
    const local = new RateLimiter(clock);
    let seed = 42;
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const limitsToTry: RateLimit[] = [
      { requests_per_second: 3, tokens_per_minute: null },
      { requests_per_second: 0.5, tokens_per_minute: 1000 },
      { requests_per_second: null, tokens_per_minute: 600 },
    ];
    let compared = 0;
    const refused = { requests: 0, tokens: 0 };
    for (let step = 0; step < 600; step++) {
      const limit = limitsToTry[Math.floor(step / 200)]!;
      const credential = random() < 0.8 ? 'token:a' : 'cert:b';
      // Fractional steps: no two sides land on a refill's exact boundary, where floats may differ.
      const dt = random() < 0.5 ? 0 : random() * 700 + 0.123;
      now += dt;
      clock.advance(dt);
      if (limit.tokens_per_minute !== null && random() < 0.3) {
        const tokens = Math.floor(random() * 400) + 1;
        local.spendTokens(ID, limit, credential, tokens);
        await spend(limit.tokens_per_minute, tokens, credential);
        continue;
      }
      const mine = local.admit(ID, limit, credential);
      if (mine instanceof Promise) throw new Error('the in-memory limiter answered with a promise');
      const theirs = await admit(limit, credential);
      expect({ step, ok: theirs.ok, limit: theirs.ok ? null : theirs.limit, retryAfter: theirs.ok ? null : Math.max(1, Math.ceil(theirs.waitMs / 1000)) }).toEqual({
        step,
        ok: mine.ok,
        limit: mine.ok ? null : mine.limit,
        retryAfter: mine.ok ? null : mine.retryAfterSeconds,
      });
      compared++;
      if (!mine.ok) refused[mine.limit]++;
    }
    expect(compared).toBeGreaterThan(300);
    // Both budgets ran out often enough for the comparison to mean something.
    expect(refused.requests).toBeGreaterThan(20);
    expect(refused.tokens).toBeGreaterThan(20);
  });
});
