// Owns the autoscaling signal as the forms show and check it: the choices of
// `autoscaling_metric` in words, the unit and bounds of `autoscaling_target` for each, and the
// browser's copy of the API's rules for the pair — all read from the platform's own table
// (domain/autoscaling-signal.ts METRIC_RULES), never copied.

import {
  AUTOSCALING_METRICS,
  METRIC_RULES,
  metricScalesToZero,
  type AutoscalingMetric,
  type MetricRule,
} from '../../../src/domain/autoscaling-signal';
import type { Problems } from '../components/form';

export { AUTOSCALING_METRICS, metricScalesToZero, type AutoscalingMetric };

/** The select's words for each metric. */
export const METRIC_NAMES: Readonly<Record<AutoscalingMetric, string>> = {
  concurrency: 'Concurrency (requests in flight per replica)',
  queue_depth: 'Queue depth (requests waiting per replica)',
  kv_cache: 'KV cache (percent in use)',
  ttft: 'Time to first token (p90 objective)',
};

/** A short name for legends and facts. */
export const METRIC_SHORT: Readonly<Record<AutoscalingMetric, string>> = {
  concurrency: 'Concurrency',
  queue_depth: 'Queue depth',
  kv_cache: 'KV cache',
  ttft: 'TTFT p90',
};

/** The rule of a metric that takes `autoscaling_target`; null for concurrency (its target is the concurrency field). */
export function ruleOf(metric: AutoscalingMetric): MetricRule | null {
  return metric === 'concurrency' ? null : METRIC_RULES[metric];
}

/** What the signal counts, for a legend or a hint: "waiting requests per replica". */
export function unitOf(metric: AutoscalingMetric): string {
  return ruleOf(metric)?.unit ?? 'in-flight requests per replica';
}

export const isMetric = (v: unknown): v is AutoscalingMetric => typeof v === 'string' && (AUTOSCALING_METRICS as readonly string[]).includes(v);

/** The hint under the target: its unit and bounds. */
export function targetHint(metric: AutoscalingMetric): string {
  const rule = ruleOf(metric);
  if (!rule) return '';
  const whole = rule.integer ? ', a whole number' : '';
  const zero = rule.scalesToZero ? '' : ` ${METRIC_SHORT[metric]} never scales to zero: Min Replicas is at least 1.`;
  return `In ${rule.unit}: ${rule.min} to ${rule.max}${whole}. The autoscaler adds replicas while the signal is above it.${zero}`;
}

/**
 * The pair's rules, in the API's field names: a target within the metric's bounds for every
 * metric but concurrency, and no scale to zero for a metric that cannot see demand at zero.
 */
export function signalProblems(metric: AutoscalingMetric, target: number | null, minReplicas: number | null): Problems {
  const out: Problems = {};
  const rule = ruleOf(metric);
  if (rule) {
    const range = `${rule.integer ? 'a whole number' : 'a number'} from ${rule.min} to ${rule.max} (${rule.unit})`;
    if (target === null) out.autoscaling_target = `autoscaling_target is required with autoscaling_metric ${metric}: ${range}`;
    else if (target < rule.min || target > rule.max || (rule.integer && !Number.isInteger(target))) {
      out.autoscaling_target = `autoscaling_target of ${metric} must be ${range}, got ${target}`;
    }
  }
  if (minReplicas === 0 && !metricScalesToZero(metric)) {
    out.min_replicas = `min_replicas 0 (scale to zero) needs a signal that sees demand while no replica runs — concurrency or queue_depth; ${metric} is read from running replicas: set min_replicas to 1 or more, or choose another autoscaling_metric`;
  }
  return out;
}

/** signalProblems over a request body the forms built. */
export function bodySignalProblems(body: { autoscaling_metric?: AutoscalingMetric; autoscaling_target?: number | null; min_replicas?: number }): Problems {
  return signalProblems(body.autoscaling_metric ?? 'concurrency', body.autoscaling_target ?? null, body.min_replicas ?? null);
}
