// Owns what the controller works towards for a deployment, as pure functions: how many
// replicas of each component, the deployment's status from readiness, and each revision's
// status. No I/O and no clock, so every rule is a table test.

import { COMPONENT } from '../domain/components.js';
import type { DeploymentRecord, DeploymentStatus } from '../domain/records.js';

/** The one component of a general deployment. */
export const GENERAL_COMPONENT = COMPONENT.Replica;

/**
 * Replicas per component. Paused: none. General: the autoscaler's figure clamped to
 * [min, max], else min. Zero only where something brings the deployment back on the next
 * request (`zeroAllowed`: the activator and autoscaler run with this controller); otherwise
 * a min-0 deployment keeps one replica so its endpoint answers.
 */
export function desiredReplicas(d: DeploymentRecord, autoscaled?: number, zeroAllowed = false): Record<string, number> {
  if (d.spec.family !== 'general') return {};
  if (d.paused) return { [GENERAL_COMPONENT]: 0 };
  const { min_replicas: min, max_replicas: max } = d.scaling;
  const wanted = Math.min(max, Math.max(min, autoscaled ?? min));
  return { [GENERAL_COMPONENT]: zeroAllowed ? wanted : Math.max(wanted, Math.min(1, max)) };
}

/**
 * Status from readiness: paused wins; any ready replica makes the deployment ready; a
 * deployment scaled to zero on purpose (desired 0) stays ready, since the activator answers
 * for it; having been ready and now having none is not_ready; never ready yet is pending.
 */
export function deploymentStatus(d: DeploymentRecord, readyReplicas: number, desired = 1): DeploymentStatus {
  if (d.paused) return 'paused';
  if (readyReplicas > 0) return 'ready';
  if (d.status === 'ready' || d.status === 'not_ready') return desired === 0 ? 'ready' : 'not_ready';
  return d.status === 'failed' ? 'failed' : 'pending';
}
