// Owns the per-credential rate limits of a deployment (its `rate_limit`): a token bucket of
// requests per second (a burst of one second's worth) and one of prompt + completion tokens
// per minute. A request is admitted while both buckets have something left; its tokens are
// only known once the response has ended — its `usage`, which the gateway asks every stream
// for (completion-request.ts), or the gateway's estimate where none came (usage-tap.ts) — so
// they are taken afterwards (RequestContext.finish) and may drive the bucket below zero: the
// next requests wait until it has refilled, which is what the 429's Retry-After says. Envoy AI
// Gateway's token limits work the same way.
//
// Buckets are per credential (a bearer token's hash or a client certificate's fingerprint): a
// deployment's limit applies to each of its clients, not to all of them together. Where they
// are kept depends on the store. On the file store (one gateway) they are in this process's
// memory and a decision is synchronous: no promise per request. On Redis several gateways
// serve the same clients, so the buckets are counted in Redis (shared-rate-limit.ts,
// store/redis-rate-limit.ts) and a decision is a promise the pipeline waits for; while Redis
// does not answer in time, this gateway decides from the local buckets at its share of the
// limit (1/N with N gateways), so the gateways together still admit about the limit. Only
// credentials bound to a deployment authenticate, so a deployment has at most a couple of
// local buckets and the map stays small.

import type { Clock } from '../core/clock.js';
import type { RateLimit } from '../domain/records.js';
import type { SharedLimitVerdict } from '../store/redis-rate-limit.js';
import type { SharedRateLimits } from './shared-rate-limit.js';

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

const ADMITTED: RateDecision = { ok: true };

export class RateLimiter {
  private readonly buckets = new Map<number, Map<string, CredentialBuckets>>();

  /** `shared`: count in Redis (several gateways on one Redis); null: in this process only. */
  constructor(
    private readonly clock: Clock,
    private readonly shared: SharedRateLimits | null = null,
  ) {}

  /**
   * Whether a request of `credential` may go on now; takes one request from its bucket when it
   * may. Synchronous unless the limits are counted in Redis and it answers: then a promise,
   * which never rejects and resolves within the shared limits' timeout.
   */
  admit(deploymentId: number, limit: RateLimit | null, credential: string): RateDecision | Promise<RateDecision> {
    if (limit === null) return ADMITTED;
    const shared = this.shared;
    if (shared === null) return this.local(deploymentId, limit, credential);
    if (!shared.counting) return this.atShare(shared, deploymentId, limit, credential);
    return shared.admit(deploymentId, limit, credential).then((verdict) => {
      if (verdict === null) return this.atShare(shared, deploymentId, limit, credential);
      if (verdict.ok) this.shadow(shared, deploymentId, limit, credential);
      return decisionOf(verdict, limit);
    });
  }

  /** Takes a finished response's tokens from the credential's bucket. */
  spendTokens(deploymentId: number, limit: RateLimit | null, credential: string, tokens: number): void {
    if (limit === null || limit.tokens_per_minute === null || tokens <= 0) return;
    const shared = this.shared;
    if (shared === null) return this.take(deploymentId, limit, credential, tokens);
    // From this gateway's share too, as admissions are (shadow): a fallback goes on from there.
    this.take(deploymentId, shared.share(limit), credential, tokens);
    if (shared.counting) shared.spend(deploymentId, limit.tokens_per_minute, credential, tokens);
  }

  /** Forgets deployments that left the routing table (their Redis keys expire by themselves). */
  retain(deploymentIds: { has(id: number): boolean }): void {
    for (const id of this.buckets.keys()) if (!deploymentIds.has(id)) this.buckets.delete(id);
  }

  /** Connects to the shared counters, if any. */
  async start(): Promise<void> {
    await this.shared?.start();
  }

  async close(): Promise<void> {
    await this.shared?.close();
  }

  /** Redis did not answer in time: this gateway's share of the limit, from its own buckets. */
  private atShare(shared: SharedRateLimits, deploymentId: number, limit: RateLimit, credential: string): RateDecision {
    shared.decidedLocally();
    // The refusal names the deployment's limit, not this gateway's share of it.
    return this.local(deploymentId, shared.share(limit), credential, limit);
  }

  /**
   * A request Redis admitted also comes off this gateway's share of the limit, while any is
   * left: should Redis stop answering, the local buckets go on from what this gateway has been
   * using rather than from a fresh burst, which every gateway would otherwise add at once.
   */
  private shadow(shared: SharedRateLimits, deploymentId: number, limit: RateLimit, credential: string): void {
    const now = this.clock.now();
    const requests = this.bucketsOf(deploymentId, shared.share(limit), credential, now).requests;
    if (requests && requests.available(now) >= 1) requests.take(1, now);
  }

  /** A decision from this process's buckets for `limit`; a refusal's message names `shown`. */
  private local(deploymentId: number, limit: RateLimit, credential: string, shown = limit): RateDecision {
    const now = this.clock.now();
    const b = this.bucketsOf(deploymentId, limit, credential, now);
    if (b.tokens && b.tokens.available(now) <= 0) {
      return refusal('tokens', b.tokens.secondsUntil(Number.MIN_VALUE, now), shown);
    }
    if (b.requests) {
      if (b.requests.available(now) < 1) return refusal('requests', b.requests.secondsUntil(1, now), shown);
      b.requests.take(1, now);
    }
    return ADMITTED;
  }

  private take(deploymentId: number, limit: RateLimit, credential: string, tokens: number): void {
    const now = this.clock.now();
    this.bucketsOf(deploymentId, limit, credential, now).tokens?.take(tokens, now);
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

function decisionOf(verdict: SharedLimitVerdict, limit: RateLimit): RateDecision {
  if (verdict.ok) return ADMITTED;
  return refusal(verdict.limit, Math.max(1, Math.ceil(verdict.waitMs / 1000)), limit);
}

function refusal(kind: RateLimitKind, wait: number, limit: RateLimit): RateDecision {
  const message =
    kind === 'tokens'
      ? `rate limit: this credential used its ${limit.tokens_per_minute} tokens per minute (prompt + completion); retry in ${wait} s`
      : `rate limit: this credential may send ${limit.requests_per_second} requests per second; retry in ${wait} s`;
  return { ok: false, limit: kind, retryAfterSeconds: wait, message };
}
