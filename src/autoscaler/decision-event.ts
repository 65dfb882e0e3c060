// Owns how an autoscaler decision that changes the desired count reads as a deployment event,
// as a pure function: ScaledUp, ScaledDown or ScaledToZero, with the figures it was decided
// on — the signal (concurrency, queue_depth, kv_cache, ttft) and its value, over which window
// (stable, or panic), the target, the desired count from → to, the revision when traffic
// splits, and a bound (min or max) or a cooldown when one decided it.

import { METRIC_RULES } from '../domain/autoscaling-signal.js';
import type { EventNote } from '../store/event-writer.js';
import { floorOf, type AutoscaleSpec, type AutoscaleWindows, type Decision } from './decide.js';

const figure = (v: number) => String(Math.round(v * 100) / 100);
const seconds = (ms: number) => `${Math.round(ms / 1000)} s`;

/**
 * The event of a decision taking the desired count of `component` from `from` to
 * `decision.desired`, with `held` requests waiting for a replica; `revision` names the
 * revision of a split the decision is for (null: the deployment's one revision). Null when the
 * count stays.
 */
export function decisionEvent(
  from: number,
  decision: Decision,
  spec: AutoscaleSpec,
  windows: AutoscaleWindows,
  held: number,
  component: string,
  revision: number | null = null,
): EventNote | null {
  const to = decision.desired;
  if (to === from) return null;
  const reason = to === 0 ? 'ScaledToZero' : to > from ? 'ScaledUp' : 'ScaledDown';
  const what = component === 'Replica' ? 'replicas' : `${component} replicas`;
  const head = `desired ${what} ${from} → ${to}${revision === null ? '' : ` for revision ${revision}`}`;
  return { type: 'normal', reason, message: `${head}: ${why(decision, spec, windows, held, to)}` };
}

function why(decision: Decision, spec: AutoscaleSpec, windows: AutoscaleWindows, held: number, to: number): string {
  const metric = spec.metric;
  if (decision.reason === 'fixed_size' || spec.target === null) return `no ${metric} target, so min_replicas (${spec.min})`;
  if (decision.reason === 'activate') {
    const waiting = `${held} request${held === 1 ? '' : 's'} held with no replica to serve ${held === 1 ? 'it' : 'them'}`;
    if (metric === 'concurrency') return `${waiting}, target ${figure(spec.target)} per replica (scale from zero)`;
    if (metric === 'queue_depth') return `${waiting}, target ${figure(spec.target)} ${METRIC_RULES.queue_depth.unit} (scale from zero)`;
    return `${waiting} (scale from zero)`;
  }
  if (decision.reason === 'scale_to_zero') {
    return `no request for ${seconds(spec.cooldownMs + windows.scaleToZeroGraceMs)} (cooldown_period ${seconds(spec.cooldownMs)} and a ${seconds(windows.scaleToZeroGraceMs)} grace); the next request wakes it`;
  }
  const panic = decision.reason === 'panic';
  const window = panic ? `the ${seconds(windows.panicMs)} panic window` : `the ${seconds(windows.stableMs)} stable window`;
  const floor = floorOf(spec);
  let text: string;
  if (metric === 'concurrency') {
    const concurrency = panic ? decision.panicConcurrency : decision.stableConcurrency;
    text = `concurrency ${figure(concurrency)} over ${window}, target ${figure(spec.target)} per replica`;
  } else {
    const value = panic ? decision.panicValue : decision.stableValue;
    text =
      value === null
        ? `no ${metric} reading${decision.stableConcurrency === 0 ? ' and no request' : ''} over ${window}`
        : `${metric} ${figure(value)} ${METRIC_RULES[metric].unit} over ${window}, target ${figure(spec.target)}`;
  }
  const wanted = decision.wanted;
  if (to === floor && (wanted === null || wanted < floor)) text += floor === spec.min ? `, at least min_replicas (${spec.min})` : `, at least 1 (${metric} never scales to zero)`;
  else if (to === spec.max && wanted !== null && wanted > spec.max) text += `, at most max_replicas (${spec.max})`;
  else if (decision.reason === 'scale_down' && wanted !== null && wanted < to) text += `, ${to} kept until idle for cooldown_period and the grace (then zero)`;
  if (panic) text += ' (panic mode: up at once, no scale-down while it lasts)';
  if (decision.reason === 'scale_down') text += `, lower for the whole cooldown_period (${seconds(spec.cooldownMs)})`;
  return text;
}
