// Owns what the controller works towards for a deployment, as pure functions: how many
// replicas of each component (of each revision, while traffic splits between revisions), the
// deployment's status from readiness — `failing` when none is
// ready and one keeps crashing (the crash-loop rule and its reason in words are here too) —
// and each revision's status. No I/O and no clock, so every rule is a table test.

import { autoscalingMetricOf, metricScalesToZero } from '../domain/autoscaling-signal.js';
import { COMPONENT } from '../domain/components.js';
import type { DeploymentRecord, DeploymentStatus } from '../domain/records.js';
import type { ReplicaExit, ReplicaPull } from '../runtime/runtime.js';

/** The one component of a general deployment. */
export const GENERAL_COMPONENT = COMPONENT.Replica;

/**
 * Replicas per component. Paused: none. General: the autoscaler's figure clamped to
 * [min, max], else min. Zero only where something brings the deployment back on the next
 * request (`zeroAllowed`: the activator and autoscaler run with this controller) and the
 * deployment scales on a signal that sees demand at zero (concurrency, queue depth);
 * otherwise a min-0 deployment keeps one replica so its endpoint answers.
 */
export function desiredReplicas(d: DeploymentRecord, autoscaled?: number, zeroAllowed = false): Record<string, number> {
  if (d.spec.family !== 'general') return {};
  if (d.paused) return { [GENERAL_COMPONENT]: 0 };
  const { min_replicas: min, max_replicas: max } = d.scaling;
  const wanted = Math.min(max, Math.max(min, autoscaled ?? min));
  const zero = zeroAllowed && metricScalesToZero(autoscalingMetricOf(d.scaling));
  return { [GENERAL_COMPONENT]: zero ? wanted : Math.max(wanted, Math.min(1, max)) };
}

/**
 * The figure a revision of a traffic split scales from, for its scaled `component`: the
 * autoscaler's for that revision; else the last count written for it; else, for the revision
 * that served alone until the split began, the deployment's own count (so a split starts
 * without shrinking what serves); else none (splitReplicas makes it the floor).
 */
export function splitFigure(
  d: Pick<DeploymentRecord, 'revision_desired' | 'desired_replicas' | 'serving_revision'>,
  revision: number,
  component: string,
  autoscaled: number | undefined,
): number | undefined {
  if (autoscaled !== undefined) return autoscaled;
  const written = d.revision_desired?.[String(revision)]?.[component];
  if (written !== undefined) return written;
  const enteringSplit = (d.revision_desired ?? null) === null && (d.serving_revision ?? null) === revision;
  return enteringSplit ? d.desired_replicas?.[component] : undefined;
}

/**
 * Replicas of a revision inside a split: its figure clamped to [max(1, min), max] — a
 * revision that takes a share never goes to zero (the activator wakes a deployment, not a
 * revision) — and none while paused.
 */
export function splitReplicas(d: Pick<DeploymentRecord, 'paused' | 'scaling'>, figure: number | undefined): number {
  if (d.paused) return 0;
  const { min_replicas: min, max_replicas: max } = d.scaling;
  const floor = Math.max(1, min);
  return Math.min(max, Math.max(floor, figure ?? floor));
}

/**
 * Status from readiness: paused wins; any ready replica makes the deployment ready; with none
 * ready, a crash-looping replica (`failing`, see crashLooping) makes it failing; a deployment
 * scaled to zero on purpose (desired 0) stays ready, since the activator answers for it;
 * having been ready (or failing after a revision served) and now having none is not_ready;
 * never ready yet is pending.
 */
export function deploymentStatus(d: DeploymentRecord, readyReplicas: number, desired = 1, failing = false): DeploymentStatus {
  if (d.paused) return 'paused';
  if (readyReplicas > 0) return 'ready';
  return withoutReady(d, desired === 0, failing);
}

/** The status of a deployment that does not serve now; `atZero`: scaled to zero on purpose. */
export function withoutReady(d: DeploymentRecord, atZero: boolean, failing: boolean): DeploymentStatus {
  if (failing && !atZero) return 'failing';
  const served = d.status === 'ready' || d.status === 'not_ready' || (d.status === 'failing' && (d.serving_revision ?? null) !== null);
  if (served) return atZero ? 'ready' : 'not_ready';
  return d.status === 'failed' ? 'failed' : 'pending';
}

/** Restarts without becoming ready in between that make a replica crash-looping. */
export const CRASH_LOOP_RESTARTS = 2;

/** One replica of the revision being run, as the failing rule sees it. */
export interface ReplicaHealth {
  name: string;
  ready: boolean;
  /** Restarts since it was last ready (since it started, when it never was). */
  restartsSinceReady: number;
  lastExit: ReplicaExit | null;
  /** How its last image pull ended (pulled, or failed), kept while a retry runs; null before any ended. */
  pull: ReplicaPull | null;
  /** What the runtime says it waits on now (a failed pull: the failure and its retry). */
  detail: string | null;
}

/**
 * Crash-looping: not ready, and it has restarted CRASH_LOOP_RESTARTS times without becoming
 * ready in between, or its image pull failed in a way retrying will not mend (no such image
 * or tag, refused credentials). A replica still loading, or restarted once, is not.
 */
export function crashLooping(r: ReplicaHealth): boolean {
  if (r.ready) return false;
  return r.restartsSinceReady >= CRASH_LOOP_RESTARTS || (r.pull?.state === 'failed' && r.pull.permanent);
}

/** How a replica last ended, in words. */
export function exitText(exit: ReplicaExit | null): string {
  if (exit?.code !== null && exit?.code !== undefined) return `exited with code ${exit.code}`;
  if (exit?.signal) return `was killed by ${exit.signal}`;
  return 'could not start';
}

/** The status reason of a failing deployment: which replica, how often and how it ended, and what it said last. */
export function failingReason(r: ReplicaHealth, lastLogLine: string | null): string {
  if (r.pull?.state === 'failed' && r.pull.permanent) {
    // The runtime's words carry the retry ("…; retrying in 10 s") while they are the failure's.
    const why = r.pull.reason !== null && r.detail?.startsWith(r.pull.reason) ? r.detail : (r.pull.reason ?? r.pull.image);
    return `replica ${r.name} cannot pull its image: ${why}`;
  }
  const times = `${r.restartsSinceReady} time${r.restartsSinceReady === 1 ? '' : 's'}`;
  const said = lastLogLine !== null ? `; last log line: ${JSON.stringify(lastLogLine)}` : '';
  return `replica ${r.name} keeps crashing: restarted ${times} without becoming ready, last ${exitText(r.lastExit)}${said}`;
}
