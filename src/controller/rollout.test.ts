// Table tests of the revisions' bookkeeping. advanceRollout: first revision, a rollout
// completing only when the target has every desired replica and no other revision is left, a
// failure past the deadline with the serving revision kept, a failed revision staying failed,
// and the target traffic names (an older revision: a rollback; a newer one left at 0 % stays
// pending). splitRollout: statuses and the serving revision while traffic splits.

import { describe, expect, it } from 'vitest';
import type { DeploymentRecord, RevisionRecord } from '../domain/records.js';
import type { RevisionShare, TrafficTarget } from '../domain/traffic.js';
import { advanceRollout, splitRollout, type RolloutCounts } from './rollout.js';

const T0 = Date.parse('2026-11-23T10:00:00.000Z');
const DEADLINE = 60_000;

function revision(n: number, status: RevisionRecord['status']): RevisionRecord {
  return { revision: n, created_at: new Date(T0).toISOString(), reason: n === 1 ? 'create' : 'update', source_revision: null, status, failure_reason: null } as RevisionRecord;
}

/** Only the fields advanceRollout reads. */
function deployment(o: {
  revision: number;
  serving: number | null;
  revisions: RevisionRecord[];
  rollout?: DeploymentRecord['rollout'];
  updatedAt?: number;
  traffic?: TrafficTarget[] | null;
}): DeploymentRecord {
  return {
    traffic: o.traffic ?? null,
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

const pin = (revision: number): TrafficTarget[] => [{ revision, latest: false, percent: 100, tag: null }];

describe('advanceRollout towards the revision traffic names', () => {
  it('pinning an older revision rolls back to it: a rollout from the serving one, completing as any other', () => {
    const d = deployment({ revision: 3, serving: 3, revisions: [revision(1, 'retired'), revision(2, 'retired'), revision(3, 'ready')], traffic: pin(2) });
    const started = advanceRollout(d, counts({ targetReady: 1, others: 2 }), T0, DEADLINE);
    expect(started.rollout).toMatchObject({ revision: 2, from_revision: 3, state: 'in_progress' });
    expect(started.serving).toBe(3);
    const done = advanceRollout({ ...d, rollout: started.rollout }, counts({ targetReady: 2, others: 0 }), T0 + 1000, DEADLINE);
    expect(done.serving).toBe(2);
    expect(done.revisions.map((r) => r.status)).toEqual(['retired', 'ready', 'retired']);
  });

  it('a newer revision left at 0 % (manual rollout) stays pending: it never ran', () => {
    const d = deployment({ revision: 3, serving: 2, revisions: [revision(1, 'retired'), revision(2, 'ready'), revision(3, 'pending')], traffic: pin(2) });
    const r = advanceRollout(d, counts({ targetReady: 2 }), T0 + 10 * DEADLINE, DEADLINE);
    expect(r.serving).toBe(2);
    expect(r.revisions.map((x) => x.status)).toEqual(['retired', 'ready', 'pending']);
    expect(r.rollout).toBeNull();
  });

  it('traffic back on the serving revision stops a rollout under way, leaving its revision pending', () => {
    const inProgress = { revision: 3, from_revision: 2, state: 'in_progress' as const, reason: null, started_at: new Date(T0).toISOString(), finished_at: null };
    const d = deployment({ revision: 3, serving: 2, revisions: [revision(1, 'retired'), revision(2, 'ready'), revision(3, 'pending')], traffic: pin(2), rollout: inProgress });
    const r = advanceRollout(d, counts({ targetReady: 2, others: 1 }), T0 + 1000, DEADLINE);
    expect(r.rollout).toMatchObject({ revision: 3, state: 'failed', reason: 'the rollout of revision 3 stopped: traffic sends every request to revision 2' });
    expect(r.revisions.map((x) => x.status)).toEqual(['retired', 'ready', 'pending']);
  });

  it('after a split, a ready revision other than the target is retired once it runs no replica', () => {
    const d = deployment({ revision: 4, serving: 4, revisions: [revision(3, 'ready'), revision(4, 'ready')], traffic: pin(4) });
    expect(advanceRollout(d, counts({ targetReady: 2, others: 1, running: [3, 4] }), T0, DEADLINE).revisions.map((r) => r.status)).toEqual(['ready', 'ready']);
    expect(advanceRollout(d, counts({ targetReady: 2, others: 0, running: [4] }), T0, DEADLINE).revisions.map((r) => r.status)).toEqual(['retired', 'ready']);
  });
});

describe('splitRollout', () => {
  const share = (revision: number, percent: number, tags: string[] = []): RevisionShare => ({ revision, percent, tags });
  const rollout = { revision: 3, from_revision: 2, state: 'complete' as const, reason: null, started_at: new Date(T0).toISOString(), finished_at: new Date(T0).toISOString() };
  const d = deployment({ revision: 4, serving: 3, revisions: [revision(2, 'retired'), revision(3, 'ready'), revision(4, 'pending')], rollout });

  it('a revision of the split turns ready with its first ready replica; the rollout is left as it was', () => {
    const waiting = splitRollout(d, [share(3, 90), share(4, 10)], { serving: [3], running: [3, 4] });
    expect(waiting.revisions.map((r) => r.status)).toEqual(['retired', 'ready', 'pending']);
    expect(waiting.rollout).toBe(rollout);
    expect(waiting.serving).toBe(3);
    const both = splitRollout(d, [share(3, 90), share(4, 10)], { serving: [3, 4], running: [3, 4] });
    expect(both.revisions.map((r) => r.status)).toEqual(['retired', 'ready', 'ready']);
    expect(both.serving).toBe(3);
  });

  it('serves from the ready revision with the largest share; a tie keeps the one serving; none ready keeps it too', () => {
    expect(splitRollout(d, [share(3, 10), share(4, 90)], { serving: [3, 4], running: [3, 4] }).serving).toBe(4);
    expect(splitRollout(d, [share(3, 10), share(4, 90)], { serving: [3], running: [3, 4] }).serving).toBe(3);
    expect(splitRollout(d, [share(3, 50), share(4, 50)], { serving: [3, 4], running: [3, 4] }).serving).toBe(3);
    const other = deployment({ revision: 5, serving: 2, revisions: [revision(2, 'ready'), revision(4, 'ready'), revision(5, 'ready')] });
    expect(splitRollout(other, [share(4, 50), share(5, 50)], { serving: [4, 5], running: [2, 4, 5] }).serving).toBe(5);
    expect(splitRollout(other, [share(4, 50), share(5, 50)], { serving: [], running: [2, 4, 5] }).serving).toBe(2);
  });

  it('a revision that left the split is retired once it runs no replica, not before', () => {
    const split = deployment({ revision: 4, serving: 4, revisions: [revision(3, 'ready'), revision(4, 'ready'), revision(5, 'ready')] });
    const shares = [share(4, 90), share(5, 10)];
    const drained = (running: number[]) => splitRollout({ ...split, revisions: [revision(2, 'ready'), ...split.revisions] }, shares, { serving: [4, 5], running }).revisions.map((r) => r.status);
    expect(drained([2, 3, 4, 5])).toEqual(['ready', 'ready', 'ready', 'ready']);
    expect(drained([2, 4, 5])).toEqual(['ready', 'retired', 'ready', 'ready']);
    expect(drained([4, 5])).toEqual(['retired', 'retired', 'ready', 'ready']);
  });

  it('a failed revision named by the split stays failed and never serves', () => {
    const failed = deployment({ revision: 4, serving: 3, revisions: [revision(3, 'ready'), revision(4, 'failed')] });
    const r = splitRollout(failed, [share(3, 10), share(4, 90)], { serving: [3, 4], running: [3, 4] });
    expect(r.revisions.map((x) => x.status)).toEqual(['ready', 'failed']);
    expect(r.serving).toBe(3);
  });
});
