// Owns whether this gateway's rate limits are counted in Redis, shared with every gateway on
// it, or locally at its share: the decisions of one event-loop turn go to Redis together (one
// round trip, store/redis-rate-limit.ts). A batch Redis fails or answers later than the
// timeout (50 ms) is decided from local buckets at 1/N of each limit, N being the gateways
// alive by their load reports in Redis (the last count seen); a failure, or three late
// batches in a row, send the gateway to those buckets until Redis answers. It says so once — a
// warning, `infergate_gateway_rate_limit_shared{state="fallback"}` — pings Redis every second,
// and says once more when Redis answers again. A request never waits longer than the timeout.

import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import { LOAD_TOPIC } from '../domain/load-report.js';
import type { RateLimit } from '../domain/records.js';
import type { SharedLimitOp, SharedLimitStore, SharedLimitVerdict } from '../store/redis-rate-limit.js';
import type { Store } from '../store/store.js';

export type SharedLimitState = 'redis' | 'fallback';

export interface SharedRateLimitOptions {
  redis: SharedLimitStore;
  /** Where the gateways' load reports are: one per live gateway process. */
  heartbeats: Pick<Store, 'readReports'>;
  log: Logger;
  registry: Registry;
  /** How often Redis is pinged while falling back. */
  probeIntervalMs?: number;
  /** How often the live gateways are counted. */
  countIntervalMs?: number;
}

type Waiter = (verdict: SharedLimitVerdict | null) => void;

/** Batches answered late in a row before this gateway stops asking Redis (an error: at once). */
const LATE_BATCHES_TO_FALL_BACK = 3;

class LateAnswer extends Error {
  override name = 'LateAnswer';
  constructor(ms: number) {
    super(`Redis did not answer within ${ms} ms`);
  }
}

export class SharedRateLimits {
  private mode: SharedLimitState = 'redis';
  private gateways = 1;
  private ops: SharedLimitOp[] = [];
  private waiters: Waiter[] = [];
  private scheduled = false;
  private lateBatches = 0;
  private since = 0;
  private probing = false;
  private probeTimer: NodeJS.Timeout | null = null;
  private countTimer: NodeJS.Timeout | null = null;
  private readonly timeoutMs: number;
  private readonly stateGauge: Gauge<'state'>;
  private readonly fallbackDecisions: Counter;
  private readonly flushBatch = (): void => this.flush();
  private readonly shares = new WeakMap<RateLimit, { n: number; share: RateLimit }>();

  constructor(private readonly opts: SharedRateLimitOptions) {
    this.timeoutMs = opts.redis.timeoutMs;
    const registers = [opts.registry];
    // Summed over gateway workers like any gauge: how many gateway processes are in each state.
    this.stateGauge = new Gauge({
      name: 'infergate_gateway_rate_limit_shared',
      help: 'Where this gateway counts rate limits: state="redis" 1 while shared by every gateway through Redis, state="fallback" 1 while counted locally at its share because Redis does not answer',
      labelNames: ['state'],
      registers,
    });
    this.fallbackDecisions = new Counter({
      name: 'infergate_gateway_rate_limit_fallback_decisions_total',
      help: "Rate-limit decisions taken from local buckets at this gateway's share of the limit, Redis not answering in time",
      registers,
    });
    this.showState();
  }

  /** Counting in Redis now; false: in local buckets at this gateway's share. */
  get counting(): boolean {
    return this.mode === 'redis';
  }

  get state(): SharedLimitState {
    return this.mode;
  }

  /** The gateways sharing the limits, as last counted (at least 1: this one). */
  get liveGateways(): number {
    return this.gateways;
  }

  /** Resolves once connected (or found unreachable: the first batch then falls back). */
  async start(): Promise<void> {
    this.countTimer = setInterval(() => void this.count(), this.opts.countIntervalMs ?? 5_000);
    this.countTimer.unref();
    await this.opts.redis.open();
    await this.count();
  }

  async close(): Promise<void> {
    if (this.countTimer) clearInterval(this.countTimer);
    if (this.probeTimer) clearInterval(this.probeTimer);
    this.countTimer = this.probeTimer = null;
    await this.opts.redis.close();
  }

  /** This gateway's share of `limit`, for its local buckets. */
  share(limit: RateLimit): RateLimit {
    const n = this.gateways;
    if (n <= 1) return limit;
    // A route's limit is one object until the table changes: one share object for it, not one per request.
    const known = this.shares.get(limit);
    if (known?.n === n) return known.share;
    const share: RateLimit = {
      requests_per_second: limit.requests_per_second === null ? null : limit.requests_per_second / n,
      tokens_per_minute: limit.tokens_per_minute === null ? null : limit.tokens_per_minute / n,
    };
    this.shares.set(limit, { n, share });
    return share;
  }

  /** A decision taken locally: counted in the metric. */
  decidedLocally(): void {
    this.fallbackDecisions.inc();
  }

  /** Redis's decision; null when it did not come in time (decide locally at the share). */
  admit(deploymentId: number, limit: RateLimit, credential: string): Promise<SharedLimitVerdict | null> {
    return this.enqueue({ op: 'admit', deploymentId, credential, requestsPerSecond: limit.requests_per_second, tokensPerMinute: limit.tokens_per_minute });
  }

  /** Spends `tokens` in Redis, with the next batch; lost if Redis does not answer. */
  spend(deploymentId: number, tokensPerMinute: number, credential: string, tokens: number): void {
    void this.enqueue({ op: 'spend', deploymentId, credential, tokensPerMinute, tokens });
  }

  private enqueue(op: SharedLimitOp): Promise<SharedLimitVerdict | null> {
    if (this.mode !== 'redis') return Promise.resolve(null);
    return new Promise((resolve) => {
      this.ops.push(op);
      this.waiters.push(resolve);
      if (!this.scheduled) {
        this.scheduled = true;
        // After the poll phase: every request parsed in this turn of the loop is in the batch.
        setImmediate(this.flushBatch);
      }
    });
  }

  private flush(): void {
    const { ops, waiters } = this;
    this.ops = [];
    this.waiters = [];
    this.scheduled = false;
    if (this.mode !== 'redis') {
      for (const w of waiters) w(null);
      return;
    }
    answeredWithin(this.opts.redis.run(ops), this.timeoutMs).then(
      (verdicts) => {
        this.lateBatches = 0;
        for (let i = 0; i < waiters.length; i++) waiters[i]!(verdicts[i] ?? null);
      },
      (err: unknown) => {
        // This batch is decided locally either way. An error means Redis is not there; one
        // late answer may be a hiccup (a busy host), so only a few in a row mean it is gone.
        if (!(err instanceof LateAnswer) || ++this.lateBatches >= LATE_BATCHES_TO_FALL_BACK) this.fallBack(err);
        for (const w of waiters) w(null);
      },
    );
  }

  private fallBack(err: unknown): void {
    if (this.mode === 'fallback') return;
    this.mode = 'fallback';
    this.lateBatches = 0;
    this.since = Date.now();
    this.showState();
    this.opts.log.warn(
      { err, gateways: this.gateways, timeout_ms: this.timeoutMs },
      `rate limits: Redis did not answer; this gateway counts them locally at its share (1/${this.gateways} of each limit) until it does`,
    );
    this.probeTimer = setInterval(() => this.probe(), this.opts.probeIntervalMs ?? 1_000);
    this.probeTimer.unref();
  }

  private probe(): void {
    if (this.probing) return;
    this.probing = true;
    answeredWithin(this.opts.redis.ping(), this.timeoutMs)
      .then(
        () => this.back(),
        () => undefined,
      )
      .finally(() => {
        this.probing = false;
      });
  }

  private back(): void {
    if (this.mode === 'redis') return;
    this.mode = 'redis';
    if (this.probeTimer) clearInterval(this.probeTimer);
    this.probeTimer = null;
    this.showState();
    this.opts.log.info({ fallback_ms: Date.now() - this.since }, 'rate limits: Redis answers again; they are shared by every gateway once more');
    void this.count();
  }

  /** Counts the live gateways; while Redis does not answer, the last count stands. */
  private async count(): Promise<void> {
    if (this.mode !== 'redis') return;
    try {
      const reports = await this.opts.heartbeats.readReports(LOAD_TOPIC);
      this.gateways = Math.max(1, reports.size);
    } catch {
      // The store monitor reports the outage; the last count stays.
    }
  }

  private showState(): void {
    this.stateGauge.set({ state: 'redis' }, this.mode === 'redis' ? 1 : 0);
    this.stateGauge.set({ state: 'fallback' }, this.mode === 'fallback' ? 1 : 0);
  }
}

/**
 * `work`'s result, or a rejection once it has taken longer than `ms`. A reply already in the
 * socket is read in the event loop's poll phase, which a timer that fires late (a busy loop)
 * would otherwise beat: the deadline counts only if no answer came by the next check phase, so
 * a loaded gateway does not take its own slowness for Redis's.
 */
function answeredWithin<T>(work: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(
      () =>
        setImmediate(() => {
          if (settled) return;
          settled = true;
          reject(new LateAnswer(ms));
        }),
      ms,
    );
    work.then(
      (value) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}
