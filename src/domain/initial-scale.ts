// Owns a general deployment's initial scale (Knative's `initial-scale`): how many replicas a
// new deployment runs before the autoscaler has decided for it. By default one when it may
// scale to zero (min 0), so its revision proves itself ready before it goes to zero, else
// min_replicas; `initial_replicas: 0` keeps a new deployment at zero until its first request,
// which the activator holds while the autoscaler brings one up. It never runs below
// min_replicas nor above max_replicas: those bounds are applied where the count is used.

import type { ScalingSpec } from './records.js';

/** The replicas a new deployment starts with, before any decision of the autoscaler. */
export function initialReplicasOf(scaling: Pick<ScalingSpec, 'min_replicas' | 'initial_replicas'>): number {
  return scaling.initial_replicas ?? (scaling.min_replicas === 0 ? 1 : scaling.min_replicas);
}

/** Why an initial_replicas value cannot be taken, or null: a whole number from 0 up to max_replicas. */
export function initialReplicasProblem(initial: number, max: number | undefined): string | null {
  if (!Number.isInteger(initial) || initial < 0) return `initial_replicas must be a whole number, 0 or more (0: no replica until the first request), got ${initial}`;
  if (max !== undefined && initial > max) return `initial_replicas (${initial}) must be at most max_replicas (${max})`;
  return null;
}
