// Owns how an autoscaler decision that changes the desired count reads as a deployment event,
// as a pure function: ScaledUp, ScaledDown or ScaledToZero, with the figures it was decided
// on — the concurrency observed, over which window (stable, or panic), the target per replica,
// the desired count from → to, and a bound (min or max) or a cooldown when one decided it.

import type { EventNote } from '../store/event-writer.js';
import type { AutoscaleSpec, AutoscaleWindows, Decision } from './decide.js';

const figure = (v: number) => String(Math.round(v * 100) / 100);
const seconds = (ms: number) => `${Math.round(ms / 1000)} s`;

/**
 * The event of a decision taking the desired count of `component` from `from` to
 * `decision.desired`, with `held` requests waiting for a replica; null when the count stays.
 */
export function decisionEvent(from: number, decision: Decision, spec: AutoscaleSpec, windows: AutoscaleWindows, held: number, component: string): EventNote | null {
  const to = decision.desired;
  if (to === from) return null;
  const reason = to === 0 ? 'ScaledToZero' : to > from ? 'ScaledUp' : 'ScaledDown';
  const what = component === 'Replica' ? 'replicas' : `${component} replicas`;
  const head = `desired ${what} ${from} → ${to}`;
  return { type: 'normal', reason, message: `${head}: ${why(decision, spec, windows, held, to)}` };
}

function why(decision: Decision, spec: AutoscaleSpec, windows: AutoscaleWindows, held: number, to: number): string {
  if (decision.reason === 'fixed_size' || spec.target === null) return `no concurrency target, so min_replicas (${spec.min})`;
  if (decision.reason === 'activate') return `${held} request${held === 1 ? '' : 's'} held with no replica to serve ${held === 1 ? 'it' : 'them'}, target ${figure(spec.target)} per replica (scale from zero)`;
  if (decision.reason === 'scale_to_zero') {
    return `no request for ${seconds(spec.cooldownMs + windows.scaleToZeroGraceMs)} (cooldown_period ${seconds(spec.cooldownMs)} and a ${seconds(windows.scaleToZeroGraceMs)} grace); the next request wakes it`;
  }
  const panic = decision.reason === 'panic';
  const concurrency = panic ? decision.panicConcurrency : decision.stableConcurrency;
  const window = panic ? `the ${seconds(windows.panicMs)} panic window` : `the ${seconds(windows.stableMs)} stable window`;
  let text = `concurrency ${figure(concurrency)} over ${window}, target ${figure(spec.target)} per replica`;
  const wanted = Math.ceil(concurrency / spec.target);
  if (to === spec.min && wanted < spec.min) text += `, at least min_replicas (${spec.min})`;
  else if (to === spec.max && wanted > spec.max) text += `, at most max_replicas (${spec.max})`;
  else if (decision.reason === 'scale_down' && wanted < to) text += `, ${to} kept until idle for cooldown_period and the grace (then zero)`;
  if (panic) text += ' (panic mode: up at once, no scale-down while it lasts)';
  if (decision.reason === 'scale_down') text += `, lower for the whole cooldown_period (${seconds(spec.cooldownMs)})`;
  return text;
}
