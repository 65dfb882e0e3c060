// A rollout's events from how it stood before a pass and after: started (a rollback says so),
// a step only when its counts moved, completed with how long it took, failed with its reason.

import { describe, expect, it } from 'vitest';
import type { DeploymentRecord, RevisionRecord, RolloutState } from '../domain/records.js';
import { deploymentRecord } from '../store/store.contract.js';
import { rolloutEvents, type RolloutProgress } from './rollout-events.js';

const T0 = '2026-03-01T12:00:00.000Z';
const rollout = (o: Partial<RolloutState>): RolloutState => ({ revision: 3, from_revision: 2, state: 'in_progress', reason: null, started_at: T0, finished_at: null, ...o });
const record = (before: RolloutState | null, reason: RevisionRecord['reason'] = 'update'): DeploymentRecord => {
  const d = deploymentRecord(1, 'web');
  const revisions = [1, 2, 3].map((n) => ({ ...d.revisions[0]!, revision: n, reason: n === 3 ? reason : ('update' as const), source_revision: n === 3 && reason === 'rollback' ? 1 : null }));
  return { ...d, revision: 3, revisions, rollout: before };
};
const progress = (targetReady: number, others: number): RolloutProgress => ({ revision: 3, targetReady, desired: 2, others });
const told = (d: DeploymentRecord, after: RolloutState, now: RolloutProgress, last: RolloutProgress | null) =>
  rolloutEvents(d, { serving: 2, rollout: after, revisions: d.revisions }, now, last).map((e) => `${e.type} ${e.reason}: ${e.message}`);

describe('rolloutEvents', () => {
  it.each([
    ['started', record(rollout({ revision: 2, state: 'complete' })), rollout({}), progress(0, 2), null, ['normal RolloutStarted: rolling out revision 3, replacing revision 2']],
    ['a rollback started', record(null, 'rollback'), rollout({}), progress(0, 2), null, ['normal RolledBack: rolling back to revision 1 (as revision 3), replacing revision 2']],
    ['a step', record(rollout({})), rollout({}), progress(1, 1), progress(0, 2), ['normal RolloutStep: revision 3: 1 of 2 ready, 1 replica of earlier revisions left']],
    ['no step when nothing moved', record(rollout({})), rollout({}), progress(1, 1), progress(1, 1), []],
    ['completed', record(rollout({})), rollout({ state: 'complete', finished_at: '2026-03-01T12:00:42.000Z' }), progress(2, 0), progress(2, 1), ['normal RolloutCompleted: revision 3 serves in place of revision 2 after 42 s']],
    ['completed stays told once', record(rollout({ state: 'complete', finished_at: T0 })), rollout({ state: 'complete', finished_at: T0 }), progress(2, 0), null, []],
    ['failed', record(rollout({})), rollout({ state: 'failed', reason: 'revision 3 did not get 2 ready replicas within 600 s', finished_at: T0 }), progress(0, 2), progress(0, 2), ['warning RolloutFailed: revision 3 did not get 2 ready replicas within 600 s']],
  ] as const)('%s', (_name, d, after, now, last, expected) => {
    expect(told(d, after, now, last)).toEqual(expected);
  });
});
