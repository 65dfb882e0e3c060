// Owns the bookkeeping of a rolling update as a pure function: which revision serves, the
// rollout's state, and each revision's status, from what the controller counted this pass.
// A rollout to revision T from the serving revision S completes when T has every desired
// replica ready and no replica of another revision is left; it fails when T has not got
// there within the deadline, and S keeps serving. The first revision of a deployment has no
// deadline: it stays pending until it is ready (spec: a vendor-packaged container "stays
// pending until its readiness probe passes").

import type { DeploymentRecord, RevisionRecord, RolloutState } from '../domain/records.js';

export interface RolloutCounts {
  desired: number;
  /** Ready and total (not retiring) replicas of the target revision. */
  targetReady: number;
  /** Replicas of other revisions still running (not retiring) after this pass's actions. */
  others: number;
  /** Restarts of the target's replicas, for the failure reason. */
  targetRestarts: number;
}

export interface RolloutResult {
  serving: number | null;
  rollout: RolloutState | null;
  revisions: RevisionRecord[];
}

const setStatus = (revisions: RevisionRecord[], n: number, status: RevisionRecord['status'], reason?: string): RevisionRecord[] =>
  revisions.map((r) => (r.revision === n ? { ...r, status, ...(reason !== undefined ? { failure_reason: reason } : {}) } : r));

export function advanceRollout(d: DeploymentRecord, counts: RolloutCounts, now: number, deadlineMs: number): RolloutResult {
  const target = d.revision;
  const serving = d.serving_revision ?? null;
  const current = d.rollout ?? null;
  const status = d.revisions.find((r) => r.revision === target)?.status;
  if (status === 'failed') return { serving, rollout: current, revisions: d.revisions };
  const iso = new Date(now).toISOString();

  if (serving === target) {
    const revisions = status === 'pending' && counts.targetReady > 0 ? setStatus(d.revisions, target, 'ready') : d.revisions;
    return { serving, rollout: current, revisions };
  }
  const rollout: RolloutState =
    current?.revision === target && current.state === 'in_progress'
      ? current
      : { revision: target, from_revision: serving, state: 'in_progress', reason: null, started_at: iso, finished_at: null };

  const done = serving === null ? counts.targetReady > 0 : counts.desired > 0 && counts.targetReady >= counts.desired && counts.others === 0;
  if (done) {
    // The superseded revisions that served are retired; failed ones keep their status.
    const revisions = setStatus(d.revisions, target, 'ready').map((r) => (r.revision !== target && r.status === 'ready' ? { ...r, status: 'retired' as const } : r));
    return { serving: target, rollout: { ...rollout, state: 'complete', finished_at: iso }, revisions };
  }
  // The deadline runs from the rollout's start, or from the last edit of the deployment (a
  // resume after a pause, a new replica count) if later: paused, no replica may run.
  const since = Math.max(Date.parse(rollout.started_at), Date.parse(d.updated_at));
  if (serving !== null && counts.desired > 0 && now - since > deadlineMs) {
    const restarts = counts.targetRestarts > 0 ? `; its replicas restarted ${counts.targetRestarts} times` : '';
    const reason = `revision ${target} did not get ${counts.desired} ready replica${counts.desired === 1 ? '' : 's'} within ${Math.round(deadlineMs / 1000)} s (${counts.targetReady} ready${restarts}); revision ${serving} keeps serving — see its logs with ?revision=${target}`;
    return { serving, rollout: { ...rollout, state: 'failed', reason, finished_at: iso }, revisions: setStatus(d.revisions, target, 'failed', reason) };
  }
  return { serving, rollout, revisions: d.revisions };
}
