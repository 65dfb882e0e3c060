// Owns the autoscaling decision as a pure function of (spec, windows, observation, state,
// now): no timers, no I/O, so every rule is a table test with a fake clock (docs/autoscaling.md).
//
// Knative's KPA is the model: the signal is averaged over a stable window and a short panic
// window; when the panic window wants at least twice the capacity, scale up at once and do not
// scale down while panicking (until a stable window has passed without the condition). A
// scale-down takes effect only after the lower recommendation has held for cooldown_period:
// the decision is the maximum of the recommendations over that window. Replicas still starting
// count as capacity on the way. After a restart, no scale-down for one stable window, nor while
// nothing is ready and replicas are still starting. A unit whose metric allows it goes to zero
// only after cooldown_period plus a grace with no traffic at all.
//
// The signal is the unit's autoscaling_metric. `concurrency` recommends ceil(average / target)
// as the KPA does. The others (queue_depth, kv_cache, ttft) follow Kubernetes' HPA rule,
// ceil(replicas × value / target) with a 10 % tolerance band that keeps the current figure,
// where `replicas` is the mean count of ready replicas the value was measured over (not the
// count now): a windowed value lags, and multiplying a stale per-replica figure by replicas
// that were added since would order more on every tick. No figure at all is no evidence:
// the count stays, and drops to the floor only once there has been no load at all.

import { metricScalesToZero, type AutoscalingMetric } from '../domain/autoscaling-signal.js';

/** One second of time-weighted concurrency: the bucket's start (ms) and its average. */
export interface ConcurrencySample {
  second: number;
  average: number;
}

export interface AutoscaleSpec {
  min: number;
  max: number;
  /** The signal scaled on (domain/autoscaling-signal.ts). */
  metric: AutoscalingMetric;
  /**
   * The metric's target: in-flight requests per replica (concurrency), waiting requests per
   * replica (queue_depth), percent of KV cache (kv_cache), p90 ms (ttft); null = no target
   * (a fixed size of min).
   */
  target: number | null;
  cooldownMs: number;
}

export interface AutoscaleWindows {
  stableMs: number;
  panicMs: number;
  /** Extra idle time, beyond cooldown_period, before a deployment goes to zero. */
  scaleToZeroGraceMs: number;
}

/** A metric other than concurrency over one window: its value and the ready replicas it was measured over. */
export interface SignalWindow {
  /** Per replica (queue_depth), percent (kv_cache), p90 ms (ttft); null: no reading in the window. */
  value: number | null;
  /** Mean ready replicas over the window's readings (the HPA rule's multiplier). */
  replicas: number;
}

export interface SignalFigures {
  stable: SignalWindow;
  panic: SignalWindow;
}

export interface AutoscaleObservation {
  /** Completed one-second buckets of time-weighted concurrency, oldest first (every metric: they say whether there is traffic). */
  samples: readonly ConcurrencySample[];
  /** Requests the activator holds now (they wait for a replica; they are demand too). */
  held: number;
  ready: number;
  /** Replicas started but not ready yet: capacity on the way. */
  starting: number;
  /** The metric's figures over the windows (signals.ts), for a metric other than concurrency; absent: no reading. */
  signal?: SignalFigures;
}

export interface AutoscaleState {
  desired: number;
  /** When this autoscaler began deciding for the unit (the restart hold starts here). */
  since: number;
  /** Panic mode lasts until then; null when not panicking. */
  panicUntil: number | null;
  /** Recommendations of the last cooldown_period, for the scale-down hold. */
  recommendations: { at: number; value: number }[];
  /** Last time any traffic was seen (null: none since `since`). */
  lastTrafficAt: number | null;
}

/** Bounded set: every decision names one, and metrics count them by it. */
export type DecisionReason =
  | 'fixed_size'
  | 'activate'
  | 'panic'
  | 'scale_up'
  | 'steady'
  | 'scale_down'
  | 'scale_to_zero'
  | 'hold_cooldown'
  | 'hold_panic'
  | 'hold_restart'
  | 'hold_starting'
  | 'hold_idle_grace'
  | 'hold_no_signal';

export const DECISION_REASONS: readonly DecisionReason[] = [
  'fixed_size',
  'activate',
  'panic',
  'scale_up',
  'steady',
  'scale_down',
  'scale_to_zero',
  'hold_cooldown',
  'hold_panic',
  'hold_restart',
  'hold_starting',
  'hold_idle_grace',
  'hold_no_signal',
];

/** Within this fraction of the target (at the current count), a metric other than concurrency keeps the current figure (HPA's tolerance). */
export const TOLERANCE = 0.1;

export interface Decision {
  desired: number;
  reason: DecisionReason;
  panic: boolean;
  /** Average concurrency over the stable and panic windows (at least the requests held now). */
  stableConcurrency: number;
  panicConcurrency: number;
  metric: AutoscalingMetric;
  target: number | null;
  /** The metric over the stable and the panic window (concurrency: the averages above); null: no reading. */
  stableValue: number | null;
  panicValue: number | null;
  /** What the deciding window asked for before [min, max] (the panic one in panic mode); null: nothing (no target, no reading). */
  wanted: number | null;
  /**
   * The metric over the stable window in the target's unit, for gauges and charts: in-flight
   * requests per ready replica for concurrency, else stableValue.
   */
  signal: number | null;
  state: AutoscaleState;
}

export function initialState(now: number, current: number): AutoscaleState {
  return { desired: current, since: now, panicUntil: null, recommendations: [], lastTrafficAt: null };
}

/** The lowest count a spec may decide: min, or at least one for a metric that cannot see demand at zero. */
export function floorOf(spec: Pick<AutoscaleSpec, 'min' | 'metric'>): number {
  return metricScalesToZero(spec.metric) ? spec.min : Math.max(1, spec.min);
}

/** Mean of the buckets that started within the window before `now`. */
function windowAverage(samples: readonly ConcurrencySample[], now: number, windowMs: number): number {
  const from = now - windowMs;
  let sum = 0;
  let n = 0;
  for (const s of samples) {
    if (s.second < from) continue;
    sum += s.average;
    n++;
  }
  return n === 0 ? 0 : sum / n;
}

export function decide(spec: AutoscaleSpec, windows: AutoscaleWindows, obs: AutoscaleObservation, state: AutoscaleState, now: number): Decision {
  const floor = floorOf(spec);
  const clamp = (v: number) => Math.min(spec.max, Math.max(floor, v));
  // Held requests are in the samples already (they count from arrival); the completed
  // buckets lag by up to a second, so the queue as it is now is a floor, never added twice.
  const stable = Math.max(windowAverage(obs.samples, now, windows.stableMs), obs.held);
  const panicAvg = Math.max(windowAverage(obs.samples, now, windows.panicMs), obs.held);
  const recent = obs.samples.filter((s) => s.second >= now - 2000).some((s) => s.average > 0);
  const lastTrafficAt = obs.held > 0 || recent ? now : state.lastTrafficAt;
  const byConcurrency = spec.metric === 'concurrency';
  const stableWindow: SignalWindow = byConcurrency ? { value: stable, replicas: obs.ready } : (obs.signal?.stable ?? { value: null, replicas: 0 });
  const panicWindow: SignalWindow = byConcurrency ? { value: panicAvg, replicas: obs.ready } : (obs.signal?.panic ?? { value: null, replicas: 0 });
  const base = {
    stableConcurrency: stable,
    panicConcurrency: panicAvg,
    metric: spec.metric,
    target: spec.target,
    stableValue: stableWindow.value,
    panicValue: panicWindow.value,
    signal: byConcurrency ? stable / Math.max(1, obs.ready) : stableWindow.value,
  };
  let wanted: number | null = null;
  const result = (desired: number, reason: DecisionReason, next: Partial<AutoscaleState> = {}): Decision => {
    const s: AutoscaleState = { ...state, lastTrafficAt, ...next, desired };
    return { ...base, wanted, desired, reason, panic: s.panicUntil !== null && now < s.panicUntil, state: s };
  };

  if (spec.target === null) return result(clamp(spec.min), 'fixed_size');
  const target = spec.target;

  const capacity = obs.ready + obs.starting;
  // Scale from zero: requests are waiting and nothing is on the way. Held requests are counted
  // against a target only where it counts requests; otherwise one replica to begin with.
  if (capacity === 0 && obs.held > 0) {
    wanted = byConcurrency || spec.metric === 'queue_depth' ? Math.ceil(obs.held / target) : 1;
    const desired = clamp(Math.max(1, wanted, state.desired));
    return result(desired, desired > state.desired ? 'activate' : 'steady');
  }

  const recommend = (w: SignalWindow): number | null => {
    if (w.value === null) return null;
    if (byConcurrency) return Math.ceil(w.value / target);
    if (w.replicas <= 0) return null;
    const replicas = (w.replicas * w.value) / target;
    // HPA's band, on the figure the current count would see (the same as HPA's while the
    // replicas measured are the current ones); and no replica ordered for a rounding error.
    if (state.desired > 0 && Math.abs(replicas / state.desired - 1) <= TOLERANCE) return state.desired;
    return Math.ceil(replicas - 1e-9);
  };
  const wantPanic = recommend(panicWindow);
  const stableWant = recommend(stableWindow);
  const noSignal = stableWant === null;
  // No reading: never up on nothing; with no load at all, the floor (the cooldown still holds it).
  const wantStable = stableWant ?? (stable > 0 ? state.desired : 0);
  wanted = stableWant;
  const triggered = capacity > 0 && wantPanic !== null && wantPanic >= 2 * capacity;
  const panicUntil = triggered ? now + windows.stableMs : state.panicUntil !== null && now < state.panicUntil ? state.panicUntil : null;
  const panicking = panicUntil !== null;
  const raw = clamp(wantStable);
  const recommendations = [...state.recommendations.filter((r) => r.at > now - spec.cooldownMs), { at: now, value: raw }];
  const next = { panicUntil, recommendations };

  if (panicking) {
    // Only up while panicking, on the short window's figure.
    const up = clamp(Math.max(wantPanic ?? 0, wantStable));
    if (up > state.desired) {
      wanted = Math.max(wantPanic ?? 0, wantStable);
      return result(up, 'panic', next);
    }
    return result(state.desired, raw < state.desired ? 'hold_panic' : 'steady', next);
  }
  if (raw > state.desired) return result(raw, 'scale_up', next);
  if (raw === state.desired) return result(raw, noSignal && stable > 0 ? 'hold_no_signal' : 'steady', next);
  // Lower from here on: every hold keeps the current figure.
  if (now < state.since + windows.stableMs) return result(state.desired, 'hold_restart', next);
  // Nothing ready yet and replicas on the way: let them prove the revision ready first
  // (Knative's initial scale), so a deployment never goes to zero without having served.
  if (obs.ready === 0 && obs.starting > 0) return result(state.desired, 'hold_starting', next);
  const cooled = Math.max(...recommendations.map((r) => r.value));
  if (cooled >= state.desired) return result(state.desired, 'hold_cooldown', next);
  if (cooled === 0) {
    const idleFor = lastTrafficAt === null ? now - state.since : now - lastTrafficAt;
    if (idleFor < spec.cooldownMs + windows.scaleToZeroGraceMs) {
      const atLeastOne = Math.max(1, spec.min);
      return atLeastOne < state.desired ? result(atLeastOne, 'scale_down', next) : result(state.desired, 'hold_idle_grace', next);
    }
    return result(0, 'scale_to_zero', next);
  }
  return result(cooled, 'scale_down', next);
}
