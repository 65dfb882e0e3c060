// Table tests of the rolling update's bookkeeping (advanceRollout): first revision, a rollout
// completing only when the target has every desired replica and no other revision is left, a
// failure past the deadline with the serving revision kept, and a failed revision staying failed.

import { describe, expect, it } from 'vitest';
import type { DeploymentRecord, RevisionRecord } from '../domain/records.js';
import { advanceRollout, type RolloutCounts } from './rollout.js';

const T0 = Date.parse('2026-11-23T10:00:00.000Z');
const DEADLINE = 60_000;

function revision(n: number, status: RevisionRecord['status']): RevisionRecord {
  return { revision: n, created_at: new Date(T0).toISOString(), reason: n === 1 ? 'create' : 'update', source_revision: null, status, failure_reason: null } as RevisionRecord;
}

/** Only the fields advanceRollout reads. */
function deployment(o: { revision: number; serving: number | null; revisions: RevisionRecord[]; rollout?: DeploymentRecord['rollout']; updatedAt?: number }): DeploymentRecord {
  return {
    revision: o.revision,
    serving_revision: o.serving,
    revisions: o.revisions,
    rollout: o.rollout ?? null,
    updated_at: new Date(o.updatedAt ?? T0).toISOString(),
  } as unknown as DeploymentRecord;
}

const counts = (c: Partial<RolloutCounts>): RolloutCounts => ({ desired: 2, targetReady: 0, others: 0, targetRestarts: 0, ...c });

describe('advanceRollout', () => {
  it('first revision: pending until one replica is ready, never failed by the deadline', () => {
    const d = deployment({ revision: 1, serving: null, revisions: [revision(1, 'pending')] });
    const waiting = advanceRollout(d, counts({ targetReady: 0 }), T0 + 10 * DEADLINE, DEADLINE);
    expect(waiting.serving).toBeNull();
    expect(waiting.rollout?.state).toBe('in_progress');
    expect(waiting.revisions[0]?.status).toBe('pending');
    const ready = advanceRollout(d, counts({ targetReady: 1 }), T0 + 1000, DEADLINE);
    expect(ready.serving).toBe(1);
    expect(ready.rollout?.state).toBe('complete');
    expect(ready.revisions[0]?.status).toBe('ready');
  });

  const rolling = deployment({ revision: 2, serving: 1, revisions: [revision(1, 'ready'), revision(2, 'pending')] });

  it.each([
    ['target not all ready', counts({ targetReady: 1 }), 1, 'in_progress'],
    ['target ready but the old revision still runs', counts({ targetReady: 2, others: 1 }), 1, 'in_progress'],
    ['target ready and the old revision gone', counts({ targetReady: 2, others: 0 }), 2, 'complete'],
  ])('a rollout: %s', (_what, c, serving, state) => {
    const r = advanceRollout(rolling, c, T0 + 1000, DEADLINE);
    expect(r.serving).toBe(serving);
    expect(r.rollout?.state).toBe(state);
    if (state === 'complete') expect(r.revisions.map((x) => x.status)).toEqual(['retired', 'ready']);
  });

  it('fails past the deadline, naming why, and the serving revision keeps serving', () => {
    const started = advanceRollout(rolling, counts({ targetReady: 1 }), T0, DEADLINE).rollout;
    const d = deployment({ revision: 2, serving: 1, revisions: rolling.revisions, rollout: started });
    const r = advanceRollout(d, counts({ targetReady: 1, targetRestarts: 3 }), T0 + DEADLINE + 1, DEADLINE);
    expect(r.serving).toBe(1);
    expect(r.rollout?.state).toBe('failed');
    expect(r.rollout?.reason).toMatch(/revision 2 did not get 2 ready replicas within 60 s \(1 ready; its replicas restarted 3 times\); revision 1 keeps serving/);
    expect(r.revisions.find((x) => x.revision === 2)).toMatchObject({ status: 'failed', failure_reason: r.rollout?.reason });
    // A failed revision stays failed, whatever is counted later.
    const after = advanceRollout({ ...d, rollout: r.rollout, revisions: r.revisions }, counts({ targetReady: 2 }), T0 + 2 * DEADLINE, DEADLINE);
    expect(after.serving).toBe(1);
    expect(after.rollout?.state).toBe('failed');
  });

  it('the deadline restarts from the last edit (a resume after a pause)', () => {
    const started = advanceRollout(rolling, counts({}), T0, DEADLINE).rollout;
    const resumed = deployment({ revision: 2, serving: 1, revisions: rolling.revisions, rollout: started, updatedAt: T0 + DEADLINE });
    expect(advanceRollout(resumed, counts({ targetReady: 1 }), T0 + DEADLINE + 1000, DEADLINE).rollout?.state).toBe('in_progress');
  });
});
