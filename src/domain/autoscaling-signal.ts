// Owns the autoscaling signals a deployment may scale on, as names, units and target rules:
// `concurrency` (in-flight requests per replica, the target being max_concurrency /
// concurrency), `queue_depth` (requests waiting per replica: the engine's queue plus the
// gateway's), `kv_cache` (percent of the replicas' KV cache in use) and `ttft` (a p90 time to
// first token objective, in ms). Pure: the API validates with it, the autoscaler decides with
// it, the CLI and the console print it (docs/autoscaling.md).

export type AutoscalingMetric = 'concurrency' | 'queue_depth' | 'kv_cache' | 'ttft';
export const AUTOSCALING_METRICS: readonly AutoscalingMetric[] = ['concurrency', 'queue_depth', 'kv_cache', 'ttft'];

export interface MetricRule {
  /** What the target counts, for messages and the console. */
  unit: string;
  /** The target's bounds (inclusive) and whether it must be a whole number. */
  min: number;
  max: number;
  integer: boolean;
  /** Whether a deployment scaled on it may go to zero (only signals that see demand at zero can bring it back). */
  scalesToZero: boolean;
}

export const METRIC_RULES: Readonly<Record<Exclude<AutoscalingMetric, 'concurrency'>, MetricRule>> = Object.freeze({
  queue_depth: { unit: 'waiting requests per replica', min: 0.1, max: 10_000, integer: false, scalesToZero: true },
  kv_cache: { unit: 'percent of KV cache in use', min: 1, max: 100, integer: false, scalesToZero: false },
  ttft: { unit: 'ms p90 time to first token', min: 1, max: 600_000, integer: true, scalesToZero: false },
});

/** The metric of a scaling spec; records written before the field existed mean `concurrency`. */
export function autoscalingMetricOf(s: { autoscaling_metric?: AutoscalingMetric }): AutoscalingMetric {
  return s.autoscaling_metric ?? 'concurrency';
}

/** The target a spec scales to on its metric: target_concurrency for concurrency, else autoscaling_target; null: none (fixed size). */
export function autoscalingTargetOf(s: { autoscaling_metric?: AutoscalingMetric; autoscaling_target?: number | null; target_concurrency: number | null }): number | null {
  return autoscalingMetricOf(s) === 'concurrency' ? s.target_concurrency : (s.autoscaling_target ?? null);
}

/** Whether a metric lets a deployment go to zero replicas. */
export function metricScalesToZero(metric: AutoscalingMetric): boolean {
  return metric === 'concurrency' || METRIC_RULES[metric].scalesToZero;
}

/** "queue_depth 5 waiting requests per replica", as describe and events say it. */
export function describeTarget(metric: AutoscalingMetric, target: number | null): string {
  if (target === null) return `${metric}: no target (fixed size)`;
  if (metric === 'concurrency') return `concurrency ${target} in-flight requests per replica`;
  return `${metric} ${target} ${METRIC_RULES[metric].unit}`;
}
