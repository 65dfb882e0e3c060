// Owns the autoscaling decision as a pure function of (spec, windows, observation, state,
// now): no timers, no I/O, so every rule is a table test with a fake clock (docs/autoscaling.md).
//
// Knative's KPA is the model: observed concurrency is averaged over a stable window and a
// short panic window; desired = ceil(average / target) clamped to [min, max]. When the panic
// window wants at least twice the capacity, scale up at once and do not scale down while
// panicking (until a stable window has passed without the condition). A scale-down takes
// effect only after the lower recommendation has held for cooldown_period: the decision is
// the maximum of the recommendations over that window. Replicas still starting count as
// capacity on the way. After a restart, no scale-down for one stable window, nor while
// nothing is ready and replicas are still starting. A deployment
// with min 0 goes to zero only after cooldown_period plus a grace with no traffic at all.

/** One second of time-weighted concurrency: the bucket's start (ms) and its average. */
export interface ConcurrencySample {
  second: number;
  average: number;
}

export interface AutoscaleSpec {
  min: number;
  max: number;
  /** Target in-flight requests per replica; null = no target (a fixed size of min). */
  target: number | null;
  cooldownMs: number;
}

export interface AutoscaleWindows {
  stableMs: number;
  panicMs: number;
  /** Extra idle time, beyond cooldown_period, before a deployment goes to zero. */
  scaleToZeroGraceMs: number;
}

export interface AutoscaleObservation {
  /** Completed one-second buckets of time-weighted concurrency, oldest first. */
  samples: readonly ConcurrencySample[];
  /** Requests the activator holds now (they wait for a replica; they are demand too). */
  held: number;
  ready: number;
  /** Replicas started but not ready yet: capacity on the way. */
  starting: number;
}

export interface AutoscaleState {
  desired: number;
  /** When this autoscaler began deciding for the deployment (the restart hold starts here). */
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
  | 'hold_idle_grace';

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
];

export interface Decision {
  desired: number;
  reason: DecisionReason;
  panic: boolean;
  /** Average concurrency over the stable and panic windows (at least the requests held now). */
  stableConcurrency: number;
  panicConcurrency: number;
  state: AutoscaleState;
}

export function initialState(now: number, current: number): AutoscaleState {
  return { desired: current, since: now, panicUntil: null, recommendations: [], lastTrafficAt: null };
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
  const clamp = (v: number) => Math.min(spec.max, Math.max(spec.min, v));
  // Held requests are in the samples already (they count from arrival); the completed
  // buckets lag by up to a second, so the queue as it is now is a floor, never added twice.
  const stable = Math.max(windowAverage(obs.samples, now, windows.stableMs), obs.held);
  const panicAvg = Math.max(windowAverage(obs.samples, now, windows.panicMs), obs.held);
  const recent = obs.samples.filter((s) => s.second >= now - 2000).some((s) => s.average > 0);
  const lastTrafficAt = obs.held > 0 || recent ? now : state.lastTrafficAt;
  const base = { stableConcurrency: stable, panicConcurrency: panicAvg };
  const result = (desired: number, reason: DecisionReason, next: Partial<AutoscaleState> = {}): Decision => {
    const s: AutoscaleState = { ...state, lastTrafficAt, ...next, desired };
    return { ...base, desired, reason, panic: s.panicUntil !== null && now < s.panicUntil, state: s };
  };

  if (spec.target === null) return result(clamp(spec.min), 'fixed_size');

  const capacity = obs.ready + obs.starting;
  // Scale from zero: requests are waiting and nothing is on the way.
  if (capacity === 0 && obs.held > 0) {
    const desired = clamp(Math.max(1, Math.ceil(obs.held / spec.target), state.desired));
    return result(desired, desired > state.desired ? 'activate' : 'steady');
  }

  const wantStable = Math.ceil(stable / spec.target);
  const wantPanic = Math.ceil(panicAvg / spec.target);
  const triggered = capacity > 0 && wantPanic >= 2 * capacity;
  const panicUntil = triggered ? now + windows.stableMs : state.panicUntil !== null && now < state.panicUntil ? state.panicUntil : null;
  const panicking = panicUntil !== null;
  const raw = clamp(wantStable);
  const recommendations = [...state.recommendations.filter((r) => r.at > now - spec.cooldownMs), { at: now, value: raw }];
  const next = { panicUntil, recommendations };

  if (panicking) {
    // Only up while panicking, on the short window's figure.
    const up = clamp(Math.max(wantPanic, wantStable));
    if (up > state.desired) return result(up, 'panic', next);
    return result(state.desired, raw < state.desired ? 'hold_panic' : 'steady', next);
  }
  if (raw > state.desired) return result(raw, 'scale_up', next);
  if (raw === state.desired) return result(raw, 'steady', next);
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
      const floor = Math.max(1, spec.min);
      return floor < state.desired ? result(floor, 'scale_down', next) : result(state.desired, 'hold_idle_grace', next);
    }
    return result(0, 'scale_to_zero', next);
  }
  return result(cooled, 'scale_down', next);
}
