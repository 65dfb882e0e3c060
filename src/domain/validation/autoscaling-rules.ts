// Owns the rules of the signal a deployment autoscales on: `autoscaling_metric`
// (concurrency, queue_depth, kv_cache, ttft) and its `autoscaling_target` within the metric's
// bounds (domain/autoscaling-signal.ts). Concurrency keeps its own target field
// (max_concurrency / concurrency), so autoscaling_target is refused with it; a metric read from
// running replicas cannot bring a deployment back from zero; a disaggregated deployment's pools
// have fixed sizes, so only concurrency (which moves nothing there) is accepted for it.

import { AUTOSCALING_METRICS, METRIC_RULES, metricScalesToZero, type AutoscalingMetric } from '../autoscaling-signal.js';
import type { ScalingSpec } from '../records.js';
import type { Req } from './shape.js';

/** The metric fields of a ScalingSpec: none for concurrency, so records from before the fields compare equal. */
export type AutoscalingFields = Pick<ScalingSpec, 'autoscaling_metric' | 'autoscaling_target'>;

/** The metric a request names (its default when it names none); undefined when it names an unknown one. */
export function requestedMetric(req: Req): AutoscalingMetric | undefined {
  if (req.isBad('autoscaling_metric')) return undefined;
  const metric = req.str('autoscaling_metric') ?? 'concurrency';
  return (AUTOSCALING_METRICS as readonly string[]).includes(metric) ? (metric as AutoscalingMetric) : undefined;
}

const describeRange = (metric: Exclude<AutoscalingMetric, 'concurrency'>): string => {
  const rule = METRIC_RULES[metric];
  return `${rule.integer ? 'a whole number' : 'a number'} from ${rule.min} to ${rule.max} (${rule.unit})`;
};

/**
 * The metric and target of a request. `where.targetField` is the family's concurrency target
 * (max_concurrency or concurrency); `where.min` the minimum replicas already checked;
 * `where.disaggregated` a deployment whose pools never autoscale. Undefined after a problem.
 */
export function checkAutoscaling(req: Req, where: { targetField: string; min: number | undefined; disaggregated: boolean }): AutoscalingFields | undefined {
  if (req.isBad('autoscaling_metric') || req.isBad('autoscaling_target')) return undefined;
  const named = req.str('autoscaling_metric') ?? 'concurrency';
  const metric = requestedMetric(req);
  if (metric === undefined) {
    req.add('autoscaling_metric', `autoscaling_metric must be one of ${AUTOSCALING_METRICS.join(', ')}, not "${named}" (leave it out for concurrency)`);
    return undefined;
  }
  const target = req.num('autoscaling_target');
  if (where.disaggregated && (metric !== 'concurrency' || target !== undefined)) {
    const field = metric !== 'concurrency' ? 'autoscaling_metric' : 'autoscaling_target';
    req.add(
      field,
      `${field} ${metric !== 'concurrency' ? metric : target} needs a pool the autoscaler moves; a disaggregated deployment's prefill and decode pools have fixed sizes (worker_pools.<pool>.replicas): leave autoscaling_metric and autoscaling_target out`,
    );
    return undefined;
  }
  if (metric === 'concurrency') {
    if (target !== undefined) {
      req.add(
        'autoscaling_target',
        `autoscaling_target is the target of queue_depth, kv_cache or ttft; with autoscaling_metric concurrency the target is ${where.targetField} (in-flight requests per replica): set that instead, and autoscaling_target to null`,
      );
      return undefined;
    }
    return {};
  }
  const rule = METRIC_RULES[metric];
  if (target === undefined) {
    req.add('autoscaling_target', `autoscaling_target is required with autoscaling_metric ${metric}: ${describeRange(metric)}`);
    return undefined;
  }
  if (target < rule.min || target > rule.max || (rule.integer && !Number.isInteger(target))) {
    req.add('autoscaling_target', `autoscaling_target of ${metric} must be ${describeRange(metric)}, got ${target}`);
    return undefined;
  }
  if (where.min === 0 && !metricScalesToZero(metric)) {
    req.add(
      'min_replicas',
      `min_replicas 0 (scale to zero) needs a signal that sees demand while no replica runs — concurrency or queue_depth; ${metric} is read from running replicas: set min_replicas to 1 or more, or choose another autoscaling_metric`,
    );
    return undefined;
  }
  return { autoscaling_metric: metric, autoscaling_target: target };
}
