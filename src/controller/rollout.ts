// Owns the bookkeeping of a deployment's revisions as pure functions: which revision serves,
// the rolling update's state, and each revision's status, from what the controller counted
// this pass.
//
// One revision (advanceRollout): a rollout to the revision traffic sends everything to (T,
// normally the newest) from the serving revision S completes when T has every desired
// replica ready and no replica of another revision is left; it fails when T has not got
// there within the deadline, and S keeps serving (rolloutDeadlineAt says when that is due, so
// the controller sets a timer for it). The first revision of a deployment has no
// deadline: it stays pending until it is ready (spec: a vendor-packaged container "stays
// pending until its readiness probe passes"). A newer revision traffic does not send to
// stays pending: it never ran.
//
// A traffic split (splitRollout): the rolling update's state is left as it was (the split
// ends it or not); a revision of the split turns ready with its first ready replica, one that
// left the split and runs nothing any more is retired, and the ready revision with the largest
// share serves.

import type { DeploymentRecord, RevisionRecord, RolloutState } from '../domain/records.js';
import { soleRevisionOf, type RevisionShare } from '../domain/traffic.js';

export interface RolloutCounts {
  desired: number;
  /** Ready and total (not retiring) replicas of the target revision. */
  targetReady: number;
  /** Replicas of other revisions still running (not retiring) after this pass's actions. */
  others: number;
  /** Restarts of the target's replicas, for the failure reason. */
  targetRestarts: number;
  /**
   * Revisions with a replica still running, draining ones included: a ready revision other
   * than the target that runs none any more (it left a split) is retired. Absent: none is.
   */
  running?: readonly number[];
}

export interface RolloutResult {
  serving: number | null;
  rollout: RolloutState | null;
  revisions: RevisionRecord[];
}

const setStatus = (revisions: RevisionRecord[], n: number, status: RevisionRecord['status'], reason?: string): RevisionRecord[] =>
  revisions.map((r) => (r.revision === n ? { ...r, status, ...(reason !== undefined ? { failure_reason: reason } : {}) } : r));

/** Ready revisions but `keep` that run no replica any more are retired. */
const retireIdle = (revisions: RevisionRecord[], keep: ReadonlySet<number>, running: readonly number[] | undefined): RevisionRecord[] =>
  running === undefined ? revisions : revisions.map((r) => (r.status === 'ready' && !keep.has(r.revision) && !running.includes(r.revision) ? { ...r, status: 'retired' as const } : r));

export function advanceRollout(d: DeploymentRecord, counts: RolloutCounts, now: number, deadlineMs: number): RolloutResult {
  const target = soleRevisionOf(d);
  const serving = d.serving_revision ?? null;
  const current = d.rollout ?? null;
  const status = d.revisions.find((r) => r.revision === target)?.status;
  if (status === 'failed') return { serving, rollout: current, revisions: d.revisions };
  const iso = new Date(now).toISOString();

  if (serving === target) {
    const revisions = status !== 'ready' && counts.targetReady > 0 ? setStatus(d.revisions, target, 'ready') : d.revisions;
    // Traffic went back to the serving revision while a rollout to another was under way: it
    // stops there (that revision keeps its status, pending, and may take traffic later).
    const stopped =
      current !== null && current.state === 'in_progress' && current.revision !== target
        ? { ...current, state: 'failed' as const, reason: `the rollout of revision ${current.revision} stopped: traffic sends every request to revision ${target}`, finished_at: iso }
        : current;
    return { serving, rollout: stopped, revisions: retireIdle(revisions, new Set([target]), counts.running) };
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

/**
 * When advanceRollout's deadline fails the rollout in `result` if nothing changes meanwhile
 * (the first moment past it); null when no deadline runs (no rollout in progress, the first
 * revision, nothing desired).
 */
export function rolloutDeadlineAt(d: Pick<DeploymentRecord, 'updated_at'>, result: RolloutResult, desired: number, deadlineMs: number): number | null {
  const rollout = result.rollout;
  if (rollout === null || rollout.state !== 'in_progress' || result.serving === null || result.serving === rollout.revision || desired <= 0) return null;
  return Math.max(Date.parse(rollout.started_at), Date.parse(d.updated_at)) + deadlineMs + 1;
}

/** What the controller counted of a split this pass. */
export interface SplitCounts {
  /** Revisions with a ready replica of the routed component. */
  serving: readonly number[];
  /** Revisions with a replica still running, draining ones included. */
  running: readonly number[];
}

/**
 * The bookkeeping while traffic splits between revisions (`split`: domain/traffic.ts
 * splitOf): the rollout is left as it was; a revision of the split with a ready replica is
 * ready (a failed one stays failed); a ready revision outside the split that runs nothing any
 * more is retired; the serving revision is the ready one with the largest share — the one
 * serving already on a tie, else the newest — and stays what it was while none is ready.
 */
export function splitRollout(d: DeploymentRecord, split: readonly RevisionShare[], counts: SplitCounts): RolloutResult {
  const inSplit = new Set(split.map((s) => s.revision));
  const ready = new Set(counts.serving);
  const marked = d.revisions.map((r) => (inSplit.has(r.revision) && ready.has(r.revision) && r.status !== 'failed' && r.status !== 'ready' ? { ...r, status: 'ready' as const } : r));
  const revisions = retireIdle(marked, inSplit, counts.running);
  const failed = new Set(d.revisions.filter((r) => r.status === 'failed').map((r) => r.revision));
  const candidates = split.filter((s) => ready.has(s.revision) && !failed.has(s.revision));
  const before = d.serving_revision ?? null;
  let serving = before;
  if (candidates.length > 0) {
    const top = Math.max(...candidates.map((s) => s.percent));
    const best = candidates.filter((s) => s.percent === top).map((s) => s.revision);
    serving = before !== null && best.includes(before) ? before : Math.max(...best);
  }
  return { serving, rollout: d.rollout ?? null, revisions };
}
