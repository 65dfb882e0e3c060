import { describe, expect, it } from 'vitest';
import { ManualClock } from '../core/clock.js';
import { RateLimiter, type RateDecision } from './rate-limiter.js';

const ID = 1;

/** The local limiter (the file store's) decides synchronously: never a promise per request. */
function sync(decision: RateDecision | Promise<RateDecision>): RateDecision {
  if (decision instanceof Promise) throw new Error('a local rate-limit decision must not be a promise');
  return decision;
}

describe('RateLimiter', () => {
  it('lets everything through without a limit', () => {
    const limiter = new RateLimiter(new ManualClock(0));
    for (let i = 0; i < 1000; i++) expect(sync(limiter.admit(ID, null, 'a')).ok).toBe(true);
  });

  it('requests per second: a burst of one second, then one request per 1/rps, with Retry-After until the next', () => {
    const clock = new ManualClock(0);
    const limiter = new RateLimiter(clock);
    const limit = { requests_per_second: 2, tokens_per_minute: null };
    expect(sync(limiter.admit(ID, limit, 'a')).ok).toBe(true);
    expect(sync(limiter.admit(ID, limit, 'a')).ok).toBe(true);
    const refused = sync(limiter.admit(ID, limit, 'a'));
    expect(refused).toMatchObject({ ok: false, limit: 'requests', retryAfterSeconds: 1 });
    clock.advance(499);
    expect(sync(limiter.admit(ID, limit, 'a')).ok).toBe(false);
    clock.advance(1);
    expect(sync(limiter.admit(ID, limit, 'a')).ok).toBe(true);
    expect(sync(limiter.admit(ID, limit, 'a')).ok).toBe(false);
  });

  it('a fractional rate waits whole seconds: 0.2 rps is one request every 5 s', () => {
    const clock = new ManualClock(0);
    const limiter = new RateLimiter(clock);
    const limit = { requests_per_second: 0.2, tokens_per_minute: null };
    expect(sync(limiter.admit(ID, limit, 'a')).ok).toBe(true);
    expect(sync(limiter.admit(ID, limit, 'a'))).toMatchObject({ ok: false, retryAfterSeconds: 5 });
    clock.advance(4000);
    expect(sync(limiter.admit(ID, limit, 'a'))).toMatchObject({ ok: false, retryAfterSeconds: 1 });
    clock.advance(1000);
    expect(sync(limiter.admit(ID, limit, 'a')).ok).toBe(true);
  });

  it('each credential has its own buckets, and each deployment', () => {
    const limiter = new RateLimiter(new ManualClock(0));
    const limit = { requests_per_second: 1, tokens_per_minute: null };
    expect(sync(limiter.admit(ID, limit, 'a')).ok).toBe(true);
    expect(sync(limiter.admit(ID, limit, 'a')).ok).toBe(false);
    expect(sync(limiter.admit(ID, limit, 'b')).ok).toBe(true);
    expect(sync(limiter.admit(2, limit, 'a')).ok).toBe(true);
  });

  it('tokens per minute: spent after the response, admits while any is left, Retry-After until the debt is repaid', () => {
    const clock = new ManualClock(0);
    const limiter = new RateLimiter(clock);
    const limit = { requests_per_second: null, tokens_per_minute: 600 }; // 10 tokens per second
    expect(sync(limiter.admit(ID, limit, 'a')).ok).toBe(true);
    limiter.spendTokens(ID, limit, 'a', 500);
    expect(sync(limiter.admit(ID, limit, 'a')).ok).toBe(true); // 100 left
    limiter.spendTokens(ID, limit, 'a', 400); // 300 in debt
    const refused = sync(limiter.admit(ID, limit, 'a'));
    expect(refused).toMatchObject({ ok: false, limit: 'tokens', retryAfterSeconds: 30 });
    expect(refused.ok === false && refused.message).toMatch(/600 tokens per minute/);
    clock.advance(29_000);
    expect(sync(limiter.admit(ID, limit, 'a')).ok).toBe(false);
    clock.advance(1_001);
    expect(sync(limiter.admit(ID, limit, 'a')).ok).toBe(true);
  });

  it('a changed limit starts fresh buckets; a deployment that left is forgotten', () => {
    const limiter = new RateLimiter(new ManualClock(0));
    const one = { requests_per_second: 1, tokens_per_minute: null };
    expect(sync(limiter.admit(ID, one, 'a')).ok).toBe(true);
    expect(sync(limiter.admit(ID, one, 'a')).ok).toBe(false);
    expect(sync(limiter.admit(ID, { requests_per_second: 5, tokens_per_minute: null }, 'a')).ok).toBe(true);
    expect(sync(limiter.admit(ID, one, 'a')).ok).toBe(true); // changed back: fresh again
    expect(sync(limiter.admit(ID, one, 'a')).ok).toBe(false);
    limiter.retain(new Set());
    expect(sync(limiter.admit(ID, one, 'a')).ok).toBe(true);
  });
});
