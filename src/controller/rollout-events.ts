// Owns the events of a rollout as a pure function of how it stood before a reconcile pass and
// after it (rollout.ts): started (or a rollback started), each step of a rolling update — the
// new revision's ready replicas, the old ones left — completed, failed.

import type { DeploymentRecord } from '../domain/records.js';
import type { EventNote } from '../store/event-writer.js';
import type { RolloutResult } from './rollout.js';

/** Where a rollout stood at the end of a pass: what its steps are told from. */
export interface RolloutProgress {
  revision: number;
  targetReady: number;
  desired: number;
  /** Replicas of other revisions still running. */
  others: number;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * `d` as it was read at the start of the pass, `result` what the pass recorded, `progress`
 * this pass's counts and `last` the counts of the step last told (null: none yet).
 */
export function rolloutEvents(d: DeploymentRecord, result: RolloutResult, progress: RolloutProgress, last: RolloutProgress | null): EventNote[] {
  const before = d.rollout ?? null;
  const after = result.rollout;
  if (after === null) return [];
  const same = before !== null && before.revision === after.revision;
  const from = after.from_revision;
  if (after.state === 'in_progress') {
    if (!same || before.state !== 'in_progress') {
      const revision = d.revisions.find((r) => r.revision === after.revision);
      const replacing = from !== null ? `, replacing revision ${from}` : '';
      if (revision?.reason === 'rollback' && revision.source_revision !== null) {
        return [{ type: 'normal', reason: 'RolledBack', message: `rolling back to revision ${revision.source_revision} (as revision ${after.revision})${replacing}` }];
      }
      return [{ type: 'normal', reason: 'RolloutStarted', message: `rolling out revision ${after.revision}${replacing}` }];
    }
    const moved = last !== null && last.revision === progress.revision && (last.targetReady !== progress.targetReady || last.others !== progress.others);
    if (from !== null && moved) {
      const message = `revision ${after.revision}: ${progress.targetReady} of ${progress.desired} ready, ${plural(progress.others, 'replica')} of earlier revisions left`;
      return [{ type: 'normal', reason: 'RolloutStep', message }];
    }
    return [];
  }
  if (same && before.state === after.state) return [];
  if (after.state === 'complete') {
    const seconds = after.finished_at !== null ? Math.max(0, Math.round((Date.parse(after.finished_at) - Date.parse(after.started_at)) / 1000)) : null;
    const took = seconds !== null ? ` after ${seconds} s` : '';
    return [{ type: 'normal', reason: 'RolloutCompleted', message: `revision ${after.revision} serves${from !== null ? ` in place of revision ${from}` : ''}${took}` }];
  }
  return [{ type: 'warning', reason: 'RolloutFailed', message: after.reason ?? `revision ${after.revision} failed` }];
}
