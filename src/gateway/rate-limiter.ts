// Owns the per-credential rate limits of a deployment (its `rate_limit`): a token bucket of
// requests per second (a burst of one second's worth) and one of prompt + completion tokens
// per minute. A request is admitted while both buckets have something left; its tokens are
// only known once the response has ended — its `usage`, which the gateway asks every stream
// for (completion-request.ts), or the gateway's estimate where none came (usage-tap.ts) — so
// they are taken afterwards (RequestContext.finish) and may drive the bucket below zero: the
// next requests wait until it has refilled, which is what the 429's Retry-After says. Envoy AI
// Gateway's token limits work the same way.
//
// Buckets are per gateway process and per credential (a bearer token's hash or a client
// certificate's fingerprint): a deployment's limit applies to each of its clients, not to all
// of them together. Only credentials bound to a deployment authenticate, so a deployment has
// at most a couple of buckets and the map stays small.

import type { Clock } from '../core/clock.js';
import type { RateLimit } from '../domain/records.js';

export type RateLimitKind = 'requests' | 'tokens';

export type RateDecision = { ok: true } | { ok: false; limit: RateLimitKind; retryAfterSeconds: number; message: string };

class Bucket {
  private level: number;
  private at: number;

  /** `rate` per ms, `capacity` units; starts full. */
  constructor(
    private readonly rate: number,
    private readonly capacity: number,
    now: number,
  ) {
    this.level = capacity;
    this.at = now;
  }

  private refill(now: number): void {
    if (now > this.at) this.level = Math.min(this.capacity, this.level + (now - this.at) * this.rate);
    this.at = Math.max(this.at, now);
  }

  /** Units available now. */
  available(now: number): number {
    this.refill(now);
    return this.level;
  }

  take(units: number, now: number): void {
    this.refill(now);
    this.level -= units;
  }

  /** Seconds until `units` are available, at least 1 (Retry-After is in whole seconds). */
  secondsUntil(units: number, now: number): number {
    this.refill(now);
    return Math.max(1, Math.ceil((units - this.level) / this.rate / 1000));
  }
}

interface CredentialBuckets {
  /** The limit the buckets were made for: a changed limit starts fresh buckets. */
  limit: RateLimit;
  requests: Bucket | null;
  tokens: Bucket | null;
}

export class RateLimiter {
  private readonly buckets = new Map<number, Map<string, CredentialBuckets>>();

  constructor(private readonly clock: Clock) {}

  /** Whether a request of `credential` may go on now; takes one request from its bucket when it may. */
  admit(deploymentId: number, limit: RateLimit | null, credential: string): RateDecision {
    if (limit === null) return { ok: true };
    const now = this.clock.now();
    const b = this.bucketsOf(deploymentId, limit, credential, now);
    if (b.tokens && b.tokens.available(now) <= 0) {
      const wait = b.tokens.secondsUntil(Number.MIN_VALUE, now);
      return {
        ok: false,
        limit: 'tokens',
        retryAfterSeconds: wait,
        message: `rate limit: this credential used its ${limit.tokens_per_minute} tokens per minute (prompt + completion); retry in ${wait} s`,
      };
    }
    if (b.requests) {
      if (b.requests.available(now) < 1) {
        const wait = b.requests.secondsUntil(1, now);
        return {
          ok: false,
          limit: 'requests',
          retryAfterSeconds: wait,
          message: `rate limit: this credential may send ${limit.requests_per_second} requests per second; retry in ${wait} s`,
        };
      }
      b.requests.take(1, now);
    }
    return { ok: true };
  }

  /** Takes a finished response's tokens from the credential's bucket. */
  spendTokens(deploymentId: number, limit: RateLimit | null, credential: string, tokens: number): void {
    if (limit === null || limit.tokens_per_minute === null || tokens <= 0) return;
    const now = this.clock.now();
    this.bucketsOf(deploymentId, limit, credential, now).tokens?.take(tokens, now);
  }

  /** Forgets deployments that left the routing table. */
  retain(deploymentIds: ReadonlySet<number>): void {
    for (const id of this.buckets.keys()) if (!deploymentIds.has(id)) this.buckets.delete(id);
  }

  private bucketsOf(deploymentId: number, limit: RateLimit, credential: string, now: number): CredentialBuckets {
    let byCredential = this.buckets.get(deploymentId);
    if (!byCredential) {
      byCredential = new Map();
      this.buckets.set(deploymentId, byCredential);
    }
    let b = byCredential.get(credential);
    if (!b || !sameLimit(b.limit, limit)) {
      const rps = limit.requests_per_second;
      const tpm = limit.tokens_per_minute;
      b = {
        limit,
        requests: rps === null ? null : new Bucket(rps / 1000, Math.max(1, rps), now),
        tokens: tpm === null ? null : new Bucket(tpm / 60_000, tpm, now),
      };
      byCredential.set(credential, b);
    }
    return b;
  }
}

function sameLimit(a: RateLimit, b: RateLimit): boolean {
  return a.requests_per_second === b.requests_per_second && a.tokens_per_minute === b.tokens_per_minute;
}
