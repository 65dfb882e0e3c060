// Owns what one pass works towards for a deployment: without a split, the one revision traffic
// names (its failed rollout falling back to the serving revision), replaced by a rolling
// update; with a split, every revision of it side by side, each at its own count — the actions
// (plan.ts), the desired counts to write, and the revisions whose Frontends get a workers file.

import { routedComponent } from '../domain/components.js';
import type { DeploymentRecord, DeploymentSpec } from '../domain/records.js';
import { soleRevisionOf, splitOf, type RevisionShare } from '../domain/traffic.js';
import { planReplicas, planSplit, runRevisionOf, splitDrainAt, SPLIT_DRAIN_MS, type Action, type LiveReplica } from './plan.js';
import type { ComponentPlan } from './replica-requests.js';

/** One revision a pass runs replicas of. */
export interface RevisionRun {
  revision: number;
  spec: DeploymentSpec;
  /** Why it runs nothing (a failed revision of a split); null: it runs. */
  blocked: string | null;
  plans: ComponentPlan[];
}

/** What one pass works towards for a deployment. */
export interface PassPlan {
  /** The traffic split; null: one revision runs (a rolling update replaces the others). */
  split: RevisionShare[] | null;
  /** Without a split, the revision traffic names (the rolling update's target). */
  target: number | null;
  /** The revisions that run. */
  runs: RevisionRun[];
  actions: Action[];
  /** Per component, summed over the revisions that run. */
  desired: Record<string, number>;
  /** Per revision of a split, per component; null without one. */
  revisionDesired: Record<string, Record<string, number>> | null;
  /** Revisions whose Frontends get a workers file even with no replica running (a paused one comes back to it). */
  files: number[];
}

/**
 * What a pass runs for a deployment: without a split, the one revision traffic names (its
 * failed rollout falling back to the serving revision), replaced by a rolling update; with a
 * split, every revision of it side by side, each at its own count.
 */
export function passPlan(
  d: DeploymentRecord,
  replicas: LiveReplica[],
  componentPlans: (d: DeploymentRecord, spec: DeploymentSpec, split: number | null) => ComponentPlan[],
  now: number,
  surge: number,
): PassPlan & { drainAt: number | null } {
  const specOf = (n: number | null) => (n === null ? undefined : d.revisions.find((r) => r.revision === n)?.spec);
  const split = splitOf(d);
  if (split === null) {
    const target = soleRevisionOf(d);
    const runRevision = runRevisionOf(d);
    const runSpec = specOf(runRevision);
    const plans = componentPlans(d, runSpec ?? specOf(target) ?? d.spec, null);
    const actions = planReplicas({
      revision: target,
      runRevision,
      runnable: runSpec !== undefined,
      paused: d.paused,
      components: plans,
      replicas,
      surge,
    });
    const runs = runRevision !== null && runSpec !== undefined ? [{ revision: runRevision, spec: runSpec, blocked: null, plans }] : [];
    return {
      split,
      target,
      runs,
      actions,
      desired: Object.fromEntries(plans.map((p) => [p.component, p.desired])),
      revisionDesired: null,
      files: [runRevision ?? target],
      drainAt: null,
    };
  }
  const runs: RevisionRun[] = split.map(({ revision }) => {
    const spec = specOf(revision);
    const failed = d.revisions.find((r) => r.revision === revision)?.status === 'failed';
    const blocked = failed ? `revision ${revision} failed` : spec === undefined ? `revision ${revision} has no spec to run` : null;
    return { revision, spec: spec ?? d.spec, blocked, plans: componentPlans(d, spec ?? d.spec, revision) };
  });
  const actions = planSplit({
    split: runs.map((r) => ({ revision: r.revision, blocked: r.blocked, components: r.plans })),
    paused: d.paused,
    routed: routedComponent(d),
    drainDue: now - Date.parse(d.updated_at) >= SPLIT_DRAIN_MS,
    replicas,
  });
  const desired: Record<string, number> = {};
  const revisionDesired: Record<string, Record<string, number>> = {};
  for (const r of runs) {
    const counts = Object.fromEntries(r.plans.map((p) => [p.component, r.blocked === null ? p.desired : 0]));
    revisionDesired[String(r.revision)] = counts;
    for (const [component, n] of Object.entries(counts)) desired[component] = (desired[component] ?? 0) + n;
  }
  const running = runs.filter((r) => r.blocked === null);
  // Revisions outside the split that wait for it to serve go at the drain delay anyway: a timer, whatever else happens.
  const drainAt = splitDrainAt(d.updated_at, split, replicas, now);
  return { split, target: null, runs: running, actions, desired, revisionDesired, files: running.map((r) => r.revision), drainAt };
}
