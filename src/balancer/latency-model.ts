// Owns the gateway's model of each replica's time to first token (TTFT), learnt online from
// what the gateway itself observes — no engine metrics needed, so it works in front of TGI,
// Triton or a custom server as well as vLLM (docs/routing.md). Three parts:
//   the fleet fit    per deployment (scope), ttft ≈ a + b·tokensAhead + c·inflight by
//                    recursive least squares with forgetting, on samples that did not queue;
//                    the prior (50 ms, 0.1 ms a token, 2 ms a request in flight) stands until
//                    samples come, so a fresh gateway already weighs prefill against load;
//   a speed factor   per replica, observed ÷ fleet prediction (a geometric moving average,
//                    clamped), so a replica slower than its fleet — a slower GPU, a noisy
//                    neighbour — costs more at once, before any queue shows; what all the
//                    replicas' speeds share drifts into the fit, so speeds say how a replica
//                    differs and the fit is what a new replica is expected to do; a replica
//                    seen only while the fit warmed up (no speed learnt) is predicted a little
//                    faster than the fastest one learnt, so it is tried rather than left at
//                    the fleet's mean forever;
//   a queue model    per replica, a concurrency limit learnt AIMD-like from samples that
//                    queued (observed − predicted above max(25 ms, the prediction)) and a
//                    queue turn (ms a request waits per request queued ahead of it).
// Every observe and predict is O(1), but for such a replica, whose predict is O(replicas of its
// deployment) once per change of their speeds: the gateway predicts for every replica on every
// request.

import type { LatencySample } from './selector.js';

export type { LatencySample };

export interface LatencyModelOptions {
  /** Forgetting factor of the fleet fit (default 0.985: about the last 70 samples count). */
  forgetting?: number;
  /** Prior of the fixed part of a first token, ms (default 50). */
  priorBaseMs?: number;
  /** Prior prefill cost, ms per token (default 0.1: an 8B model on one current GPU). */
  priorMsPerToken?: number;
  /** Prior cost of one more request in the batch, ms (default 2). */
  priorMsPerInflight?: number;
  /** A sample queued only if it exceeds the prediction by more than this and by the prediction itself (default 25 ms). */
  queueFloorMs?: number;
  /** Ms per request queued ahead until the replica or its deployment has shown one (default 250). */
  defaultQueueTurnMs?: number;
  /** Deployments whose fit is kept (default 1,024), least recently observed forgotten first. */
  scopes?: number;
}

/** What the model believes of a replica (metrics, docs, tests). */
export interface ReplicaBelief {
  samples: number;
  speed: number;
  limit: number;
  baseMs: number;
  msPerToken: number;
}

// Tokens enter the fit in thousands: the three inputs are then of like magnitude, which keeps
// the covariance well conditioned.
const TOKEN_UNIT = 1000;
/** A queue turn is at most an hour: past that a sample is a stuck request, not a queue. */
const MAX_TURN_MS = 3_600_000;
/** No prediction is below 1 ms: a ratio to it stays finite. */
const MIN_PREDICTION_MS = 1;
/**
 * The in-flight term never learns below this: a replica with more requests in flight is never
 * cheaper than an otherwise equal one, so equal replicas still share load evenly.
 */
const MIN_MS_PER_INFLIGHT = 0.1;
/**
 * Nor does more prefill ever predict a faster answer, and a cached prompt is never worth
 * nothing: a fit learnt from noisy first tokens (a cheap prefill, a loaded host) may find no
 * cost per token at all, and prefix locality would then be left to chance. 5 µs a token (per
 * 1,000: TOKEN_UNIT) is far below any GPU's prefill, so it only breaks ties.
 */
const MIN_MS_PER_KTOKEN = 5;
const SPEED_MIN = 1 / 8;
const SPEED_MAX = 16;
const LOG_SPEED_MIN = Math.log(SPEED_MIN);
const LOG_SPEED_MAX = Math.log(SPEED_MAX);
/**
 * Every SETTLE_EVERY samples of a deployment, this share of its replicas' mean log speed moves
 * into the fit (settle): 5 % a sample, in steps rare enough that the replicas' cached speeds
 * are recomputed once per step rather than on every request.
 */
const SETTLE_EVERY = 16;
const SETTLE_SHARE = 1 - 0.95 ** SETTLE_EVERY;
/** Samples the fit takes as they come, queued-looking or not, before it judges queueing. */
const FIT_WARMUP = 8;
/** A replica's first samples set its speed whatever they look like: the fit cannot judge a replica it has not seen. */
const REPLICA_WARMUP = 3;
/**
 * A replica observed only during its fit's warm-up (so with no speed learnt) is predicted this
 * much faster than the fastest learnt speed of its deployment: sent the next request, it gets a
 * speed of its own. At the fleet's mean instead,
 * it would never be tried while a replica measured faster than the mean is idle — a fast replica
 * whose first samples fell in the fit's warm-up was starved that way. No faster than the best
 * known, so a burst does not pile onto it.
 */
const UNLEARNT_EDGE = 0.95;
/** The speed's moving average weight once past its first samples. */
const SPEED_ALPHA = 0.2;
/**
 * A sample far slower than expected moves the replica's speed by at most log 2 × its weight:
 * with nothing in flight ahead of it (it cannot have queued) by SPEED_ALPHA, at most 15 %; with
 * requests ahead but below the learnt limit (a queue or a slowdown: a replica that became
 * slower everywhere must still be learnt) by CREEP_ALPHA, under 4 %. Once the speed is within
 * a factor of two, its samples are no longer slow and it learns at the full rate.
 */
const SLOW_CLIP = Math.LN2;
const CREEP_ALPHA = 0.05;
const TURN_ALPHA = 0.2;
/** Samples a limit is judged on, and how many of them at or above k must have queued to lower it to k. */
const WINDOW = 4;
const QUEUED_TO_LOWER = 2;

/**
 * Prior covariance of a, b (per thousand tokens) and c, in units of the samples' noise
 * variance: large, so the prior weighs a small fraction of one sample and the first samples
 * replace it.
 */
const P0 = [100 ** 2, 200 ** 2, 5 ** 2] as const;
/**
 * The covariance's trace never grows past the prior's (wind-up: with forgetting, a direction
 * the inputs do not excite — every prompt the same length — would grow without bound, and the
 * first sample that differs would meet a covariance of 1e30 or an overflow).
 */
const P_TRACE_MAX = P0[0] + P0[1] + P0[2];

/** A sample up to this many times the usual squared input size counts in full. */
const LEVERAGE = 16;

/** A deployment's fit: θ = [a, b, c], P its 3×3 covariance (row-major). */
class FleetFit {
  readonly theta: Float64Array;
  readonly p = new Float64Array(9);
  /** Samples the fit learnt from, and samples of the deployment observed at all. */
  samples = 0;
  observed = 0;
  /** Ms per request queued ahead, over the deployment's queued samples; NaN until one. */
  turnMs = NaN;
  /** Typical squared size of the inputs (tokens/1000, in flight): a moving average. */
  private inputScale = NaN;
  /**
   * Replicas' log speeds are kept against this offset (speed = e^(logSpeed − offset)), so that
   * what all of them share moves into θ without touching each replica: O(1) per sample.
   */
  offset = 0;
  /** The deployment's replicas and the sum of their log speeds: their mean is drawn to the offset. */
  readonly replicas = new Set<ReplicaState>();
  logSum = 0;
  /** Bumped whenever the offset moves: every replica's cached speed is then stale. */
  version = 0;
  /** Bumped whenever a replica's speed, or the set of them, changes: bestLogSpeed() is then recomputed. */
  speedChanges = 0;
  private bestAt = -1;
  private best = Infinity;

  /** The lowest log speed of a member with a learnt speed (Infinity: none yet), recomputed once per change. */
  bestLogSpeed(): number {
    if (this.bestAt !== this.speedChanges) {
      let best = Infinity;
      for (const r of this.replicas) if (r.learnt && r.logSpeed < best) best = r.logSpeed;
      this.best = best;
      this.bestAt = this.speedChanges;
    }
    return this.best;
  }

  constructor(prior: readonly [number, number, number]) {
    this.theta = Float64Array.from(prior);
    this.p[0] = P0[0];
    this.p[4] = P0[1];
    this.p[8] = P0[2];
  }

  predict(tokens: number, inflight: number): number {
    const t = this.theta;
    const ms = Math.max(0, t[0]!) + Math.max(MIN_MS_PER_KTOKEN, t[1]!) * (tokens / TOKEN_UNIT) + Math.max(MIN_MS_PER_INFLIGHT, t[2]!) * inflight;
    return ms > MIN_PREDICTION_MS ? ms : MIN_PREDICTION_MS;
  }

  /** One recursive least squares step towards y at x = [1, tokens/1000, inflight]. */
  update(tokens: number, inflight: number, y: number, lambda: number): void {
    const p = this.p;
    const t = this.theta;
    const x1 = tokens / TOKEN_UNIT;
    const x2 = inflight;
    // Px (P is symmetric)
    const q0 = p[0]! + p[1]! * x1 + p[2]! * x2;
    const q1 = p[3]! + p[4]! * x1 + p[5]! * x2;
    const q2 = p[6]! + p[7]! * x1 + p[8]! * x2;
    // A sample far larger than those usually seen (a prompt of millions of tokens) has its
    // weight cut in proportion: at full weight it alone would collapse the covariance along
    // its direction and freeze that coefficient for hundreds of samples.
    const size = x1 * x1 + x2 * x2;
    if (Number.isNaN(this.inputScale)) this.inputScale = Math.max(1, size);
    const usual = LEVERAGE * this.inputScale;
    const weight = size <= usual ? 1 : usual / size;
    this.inputScale += (Math.min(size, usual) - this.inputScale) * 0.05;
    const denom = lambda / weight + q0 + x1 * q1 + x2 * q2;
    if (!(denom > 0) || !Number.isFinite(denom)) return;
    const predicted = t[0]! + t[1]! * x1 + t[2]! * x2;
    // A residual far past the prediction is a queue or a stall the detector missed: it moves
    // the fit at most so far, so one such sample cannot wreck it.
    const bound = 2 * Math.abs(predicted) + 100;
    const e = Math.max(-bound, Math.min(bound, y - predicted));
    const k0 = q0 / denom;
    const k1 = q1 / denom;
    const k2 = q2 / denom;
    t[0] = t[0]! + k0 * e;
    t[1] = t[1]! + k1 * e;
    t[2] = t[2]! + k2 * e;
    // P ← (P − k qᵀ) / λ, kept symmetric by computing the upper triangle only.
    const trace = p[0]! - k0 * q0 + (p[4]! - k1 * q1) + (p[8]! - k2 * q2);
    const scale = trace / lambda <= P_TRACE_MAX ? 1 / lambda : 1;
    const p00 = (p[0]! - k0 * q0) * scale;
    const p01 = (p[1]! - k0 * q1) * scale;
    const p02 = (p[2]! - k0 * q2) * scale;
    const p11 = (p[4]! - k1 * q1) * scale;
    const p12 = (p[5]! - k1 * q2) * scale;
    const p22 = (p[8]! - k2 * q2) * scale;
    p[0] = p00;
    p[4] = p11;
    p[8] = p22;
    p[1] = p[3] = p01;
    p[2] = p[6] = p02;
    p[5] = p[7] = p12;
    this.samples++;
  }
}

interface ReplicaState {
  scope: number;
  samples: number;
  /** Whether a sample came while its fit was warm (those in the warm-up teach no speed). */
  learnt: boolean;
  /** e^(logSpeed − its fit's offset), as of the fit's `version` in speedVersion. */
  speed: number;
  speedVersion: number;
  logSpeed: number;
  /** The fit its log speed counts in (its deployment's, once it has been observed). */
  member: FleetFit | null;
  /** Concurrency past which it queues (fractional: it rises by 1/limit); Infinity: unknown. */
  limit: number;
  /** Ms per request queued ahead; NaN until a queued sample. */
  turnMs: number;
  /** The last WINDOW samples: in flight at dispatch, and whether each queued. */
  recentInflight: Float64Array;
  recentQueued: Uint8Array;
  recentNext: number;
}

const clamp = (v: number, lo: number, hi: number): number => (v < lo ? lo : v > hi ? hi : v);

export class LatencyModel {
  private readonly lambda: number;
  private readonly prior: [number, number, number];
  private readonly queueFloorMs: number;
  private readonly defaultTurnMs: number;
  private readonly maxScopes: number;
  private readonly replicas = new Map<number, ReplicaState>();
  private readonly fits = new Map<number, FleetFit>();
  /** What an unseen deployment is predicted with: the prior, never updated. */
  private readonly priorFit: FleetFit;

  constructor(opts: LatencyModelOptions = {}) {
    this.lambda = clamp(opts.forgetting ?? 0.985, 0.5, 1);
    this.prior = [opts.priorBaseMs ?? 50, (opts.priorMsPerToken ?? 0.1) * TOKEN_UNIT, opts.priorMsPerInflight ?? 2];
    this.queueFloorMs = opts.queueFloorMs ?? 25;
    this.defaultTurnMs = opts.defaultQueueTurnMs ?? 250;
    this.maxScopes = Math.max(1, opts.scopes ?? 1024);
    this.priorFit = new FleetFit(this.prior);
  }

  observe(s: LatencySample): void {
    // A negative or non-finite figure is a bug upstream, not a measurement.
    if (!(s.ttftMs >= 0 && s.tokensAhead >= 0 && s.inflight >= 0) || !Number.isFinite(s.ttftMs + s.tokensAhead + s.inflight)) return;
    const ttft = s.ttftMs;
    const tokens = s.tokensAhead;
    const inflight = Math.floor(s.inflight);
    const fit = this.fitFor(s.scope);
    const r = this.replicaFor(s.replicaId, s.scope);
    if (r.member !== fit) this.join(r, fit);

    const limit = Math.floor(r.limit);
    const running = inflight < limit ? inflight : limit;
    const fleet = fit.predict(tokens, running);
    const speed = this.speedOf(r, fit);
    const expected = speed * fleet;
    const excess = ttft - expected;
    const warm = fit.samples >= FIT_WARMUP;
    const newcomer = r.samples < REPLICA_WARMUP;
    // Far slower than expected: a queue, a stall, or a replica that became slower.
    const slow = warm && excess > Math.max(this.queueFloorMs, expected);
    // With nothing in flight ahead of it, it did not queue behind a request there.
    const queued = slow && inflight >= 1;

    if (!warm) {
      fit.update(tokens, running, ttft, this.lambda);
    } else if (newcomer) {
      // A newcomer's samples only set its own speed: the fleet does not learn from a replica
      // whose speed it does not know.
      this.learnSpeed(r, fit, ttft / fleet, 1 / (r.samples + 1), Infinity);
    } else if (!slow) {
      // The speed learns first, the fit then what the speed did not explain — the request as
      // it would have been at the fleet's speed — so one error is not learnt twice.
      this.learnSpeed(r, fit, ttft / fleet, SPEED_ALPHA, Infinity);
      fit.update(tokens, running, ttft / this.speedOf(r, fit), this.lambda);
    } else if (inflight === 0) {
      // Slow with nothing ahead of it: the replica itself is slower (or stalled once — the
      // clipped step keeps a lone stall to a few per cent).
      this.learnSpeed(r, fit, ttft / fleet, SPEED_ALPHA, SLOW_CLIP);
    } else if (inflight < limit) {
      this.learnSpeed(r, fit, ttft / fleet, CREEP_ALPHA, SLOW_CLIP);
    }
    if (warm && ++fit.observed % SETTLE_EVERY === 0) this.settle(fit);

    // A newcomer's queueing says nothing yet: its speed is not known, so neither is its excess.
    const evidence = queued && !newcomer;
    this.remember(r, inflight, evidence);
    if (evidence) {
      if (this.queuedAtOrAbove(r, inflight) >= QUEUED_TO_LOWER && inflight < r.limit) r.limit = inflight;
      // Only a sample the limit explains says how long a turn is; a lone outlier says nothing.
      const lowered = Math.floor(r.limit);
      if (inflight >= lowered) {
        const perTurn = clamp(excess / (inflight - lowered + 1), 1, MAX_TURN_MS);
        r.turnMs = Number.isNaN(r.turnMs) ? perTurn : r.turnMs + (perTurn - r.turnMs) * TURN_ALPHA;
        fit.turnMs = Number.isNaN(fit.turnMs) ? perTurn : fit.turnMs + (perTurn - fit.turnMs) * TURN_ALPHA;
      }
    } else if (warm && !slow && r.limit !== Infinity) {
      // It ran at `inflight` without queueing: at the edge, probe upward; well past it, the
      // limit was too low by at least that much.
      const edge = Math.floor(r.limit);
      if (inflight > edge) r.limit = inflight;
      else if (inflight >= edge - 1) r.limit += 1 / r.limit;
    }
    r.samples++;
    if (warm && !r.learnt) {
      r.learnt = true;
      // Its first learnt speed makes it a candidate for its deployment's fastest.
      fit.speedChanges++;
    }
  }

  /** Predicted ms to first token if a request with tokensAhead were sent now to a replica with `inflight` in flight. */
  predict(replicaId: number, scope: number, tokensAhead: number, inflight: number): number {
    const fit = this.fits.get(scope) ?? this.priorFit;
    const r = this.replicas.get(replicaId);
    const tokens = tokensAhead > 0 ? tokensAhead : 0;
    const n = inflight > 0 ? inflight : 0;
    if (r === undefined) return fit.predict(tokens, n);
    const speed = !r.learnt && r.member === fit ? this.unlearntSpeed(r, fit) : this.speedOf(r, fit);
    const limit = Math.floor(r.limit);
    if (n < limit) return speed * fit.predict(tokens, n);
    return speed * fit.predict(tokens, limit) + (n - limit + 1) * this.turnOf(r, fit);
  }

  /** Requests a new request would wait behind at the replica, as the model sees it: in flight past the limit, itself included. */
  queuePositions(replicaId: number, inflight: number): number {
    const limit = this.limit(replicaId);
    return inflight >= limit ? inflight - limit + 1 : 0;
  }

  /** The learnt concurrency past which the replica queues; Infinity while unknown. */
  limit(replicaId: number): number {
    const r = this.replicas.get(replicaId);
    return r === undefined ? Infinity : Math.floor(r.limit);
  }

  /** inflight >= limit(replicaId). */
  saturated(replicaId: number, inflight: number): boolean {
    return inflight >= this.limit(replicaId);
  }

  /** Ms a request waits per request queued ahead of it at this replica (learnt; a default until then). */
  queueTurnMs(replicaId: number, scope: number): number {
    const r = this.replicas.get(replicaId);
    const fit = this.fits.get(scope);
    if (r !== undefined && !Number.isNaN(r.turnMs)) return r.turnMs;
    if (fit !== undefined && !Number.isNaN(fit.turnMs)) return fit.turnMs;
    return this.defaultTurnMs;
  }

  /**
   * What the engine says of its batch (its scraped running and waiting counts): `running` in
   * the batch with requests waiting is the limit itself; more running than the limit and none
   * waiting, the limit was low. Engine metrics refine the model; it does not need them.
   */
  engineBatch(replicaId: number, scope: number, running: number, waiting: number): void {
    if (!(running >= 1) || !Number.isFinite(running)) return;
    const cap = Math.floor(running);
    if (waiting > 0) {
      const r = this.replicaFor(replicaId, scope);
      if (r.limit !== cap) r.limit = cap;
    } else {
      const r = this.replicas.get(replicaId);
      // More running than the limit, none waiting: the limit was low. Exactly the limit running
      // with none waiting is a full batch, not a bigger one.
      if (r !== undefined && cap > r.limit) r.limit = cap;
    }
  }

  /** Forgets every replica not in `present`; a deployment's fit outlives its replicas (scale to zero). */
  retain(present: ReadonlySet<number>): void {
    for (const [id, r] of this.replicas) {
      if (present.has(id)) continue;
      this.leave(r);
      this.replicas.delete(id);
    }
  }

  /** The replica's learnt ms per prefill token (its speed included); the prior while it has no samples. */
  msPerToken(replicaId: number): number {
    return this.describe(replicaId)?.msPerToken ?? this.prior[1] / TOKEN_UNIT;
  }

  /** For metrics and docs: what it believes of a replica. */
  describe(replicaId: number): ReplicaBelief | null {
    const r = this.replicas.get(replicaId);
    if (r === undefined) return null;
    const fit = this.fits.get(r.scope) ?? this.priorFit;
    const speed = this.speedOf(r, fit);
    return {
      samples: r.samples,
      speed,
      limit: Math.floor(r.limit),
      baseMs: speed * Math.max(0, fit.theta[0]!),
      msPerToken: (speed * Math.max(0, fit.theta[1]!)) / TOKEN_UNIT,
    };
  }

  private turnOf(r: ReplicaState, fit: FleetFit): number {
    if (!Number.isNaN(r.turnMs)) return r.turnMs;
    if (!Number.isNaN(fit.turnMs)) return fit.turnMs;
    return this.defaultTurnMs;
  }

  /**
   * The speed an observed replica with none learnt is predicted at: a little faster than its
   * deployment's fastest, or its own (the fleet's) while none is learnt. A replica never
   * observed stays at the fleet's: that is what a new replica is expected to do; its first
   * sample past the fit's warm-up teaches its speed.
   */
  private unlearntSpeed(r: ReplicaState, fit: FleetFit): number {
    const own = this.speedOf(r, fit);
    const best = fit.bestLogSpeed();
    if (best === Infinity) return own;
    const edge = UNLEARNT_EDGE * Math.exp(best - fit.offset);
    return edge < own ? edge : own;
  }

  /** A step of the replica's speed towards `ratio` (in logs), the innovation clipped to ±clip. */
  private learnSpeed(r: ReplicaState, fit: FleetFit, ratio: number, alpha: number, clip: number): void {
    const relative = r.logSpeed - fit.offset;
    const step = clamp(Math.log(clamp(ratio, SPEED_MIN, SPEED_MAX)) - relative, -clip, clip);
    const delta = clamp(relative + alpha * step, LOG_SPEED_MIN, LOG_SPEED_MAX) - relative;
    r.logSpeed += delta;
    fit.logSum += delta;
    fit.speedChanges++;
    r.speed = Math.exp(r.logSpeed - fit.offset);
    r.speedVersion = fit.version;
  }

  /**
   * Moves a share of what the deployment's replicas' speeds have in common into its fit: a
   * fleet that became slower as a whole is the fit's to learn (its shape, its default for a
   * new replica), while each replica's speed keeps only how it differs. Predictions do not
   * change: θ grows by the factor the speeds lose.
   */
  private settle(fit: FleetFit): void {
    if (fit.replicas.size === 0) return;
    const shift = SETTLE_SHARE * (fit.logSum / fit.replicas.size - fit.offset);
    if (!(Math.abs(shift) > 1e-9)) return;
    const factor = Math.exp(shift);
    for (let i = 0; i < 3; i++) fit.theta[i] = fit.theta[i]! * factor;
    fit.offset += shift;
    fit.version++;
  }

  /** The replica's speed against `fit`; 1 for a replica the fit does not count. */
  private speedOf(r: ReplicaState, fit: FleetFit): number {
    if (r.member !== fit) return 1;
    if (r.speedVersion !== fit.version) {
      r.speed = Math.exp(r.logSpeed - fit.offset);
      r.speedVersion = fit.version;
    }
    return r.speed;
  }

  /** The replica counts in `fit` from now, at the fleet's speed. */
  private join(r: ReplicaState, fit: FleetFit): void {
    this.leave(r);
    r.member = fit;
    r.logSpeed = fit.offset;
    r.speedVersion = -1;
    fit.logSum += r.logSpeed;
    fit.replicas.add(r);
    fit.speedChanges++;
  }

  private leave(r: ReplicaState): void {
    const fit = r.member;
    if (fit === null) return;
    fit.logSum -= r.logSpeed;
    fit.replicas.delete(r);
    fit.speedChanges++;
    r.member = null;
  }

  private remember(r: ReplicaState, inflight: number, queued: boolean): void {
    r.recentInflight[r.recentNext] = inflight;
    r.recentQueued[r.recentNext] = queued ? 1 : 0;
    r.recentNext = (r.recentNext + 1) % WINDOW;
  }

  /** Of the last WINDOW samples, those dispatched at `inflight` or more that queued. */
  private queuedAtOrAbove(r: ReplicaState, inflight: number): number {
    let n = 0;
    for (let i = 0; i < WINDOW; i++) if (r.recentQueued[i] === 1 && r.recentInflight[i]! >= inflight) n++;
    return n;
  }

  private fitFor(scope: number): FleetFit {
    let fit = this.fits.get(scope);
    if (fit !== undefined) {
      // Most recently observed last: the first key is the one to forget.
      this.fits.delete(scope);
      this.fits.set(scope, fit);
      return fit;
    }
    fit = new FleetFit(this.prior);
    this.fits.set(scope, fit);
    if (this.fits.size > this.maxScopes) {
      const oldest = this.fits.keys().next();
      if (!oldest.done) this.fits.delete(oldest.value);
    }
    return fit;
  }

  private replicaFor(replicaId: number, scope: number): ReplicaState {
    let r = this.replicas.get(replicaId);
    if (r === undefined) {
      r = {
        scope,
        samples: 0,
        learnt: false,
        speed: 1,
        speedVersion: -1,
        logSpeed: 0,
        member: null,
        limit: Infinity,
        turnMs: NaN,
        recentInflight: new Float64Array(WINDOW),
        recentQueued: new Uint8Array(WINDOW),
        recentNext: 0,
      };
      this.replicas.set(replicaId, r);
    }
    r.scope = scope;
    return r;
  }
}
