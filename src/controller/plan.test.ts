// Table tests of the controller's plan: starts and retirements (with their reasons and in
// their order) for scaling up and down, retire order, zero and paused, a failed revision
// falling back to the serving one, rolling updates within the surge, and a component that
// left the deployment. Traffic splits: each revision at its own count, tag-only revisions
// running, failed ones running nothing, revisions outside the split drained only once the
// split serves or a minute has passed, and the transitions single → split → single.

import { describe, expect, it } from 'vitest';
import type { TrafficTarget } from '../domain/traffic.js';
import { planReplicas, planSplit, runRevisionOf, type Action, type LiveReplica, type PlanInput, type RevisionTarget, type SplitPlanInput } from './plan.js';

const replica = (recordId: number, revision: number, ready = true, inflight = 0, component = 'Replica'): LiveReplica => ({ recordId, component, revision, ready, inflight });
const input = (over: Partial<PlanInput>): PlanInput => ({
  revision: 2,
  runRevision: 2,
  runnable: true,
  paused: false,
  components: [{ component: 'Replica', desired: 2 }],
  replicas: [],
  surge: 1,
  ...over,
});
const start = (n: number, revision = 2, component = 'Replica'): Action[] => Array.from({ length: n }, () => ({ kind: 'start', component, revision }));
const retire = (recordId: number, reason: string): Action => ({ kind: 'retire', recordId, reason });

describe('planReplicas', () => {
  const cases: { name: string; input: PlanInput; actions: Action[] }[] = [
    { name: 'starts every desired replica of a new deployment', input: input({}), actions: start(2) },
    { name: 'does nothing when the count is met', input: input({ replicas: [replica(1, 2), replica(2, 2)] }), actions: [] },
    { name: 'scales up by the missing ones', input: input({ components: [{ component: 'Replica', desired: 4 }], replicas: [replica(1, 2)] }), actions: start(3) },
    {
      name: 'scales down: not ready first, then least loaded, then newest',
      input: input({ components: [{ component: 'Replica', desired: 1 }], replicas: [replica(1, 2, true, 3), replica(2, 2, true, 1), replica(3, 2, true, 1), replica(4, 2, false, 9)] }),
      actions: [retire(4, 'scaled to 1'), retire(3, 'scaled to 1'), retire(2, 'scaled to 1')],
    },
    {
      name: 'scales to zero',
      input: input({ components: [{ component: 'Replica', desired: 0 }], replicas: [replica(1, 2), replica(2, 1)] }),
      actions: [retire(1, 'scaled to 0'), retire(2, 'scaled to 0')],
    },
    {
      name: 'retires everything of a paused deployment, saying so',
      input: input({ paused: true, components: [{ component: 'Replica', desired: 0 }], replicas: [replica(1, 2)] }),
      actions: [retire(1, 'the deployment is paused')],
    },
    {
      name: 'retires everything when no revision can run',
      input: input({ runRevision: null, replicas: [replica(1, 2)] }),
      actions: [retire(1, 'revision 2 failed')],
    },
    {
      name: 'retires everything when the revision to run has no spec here',
      input: input({ runnable: false, replicas: [replica(1, 1)] }),
      actions: [retire(1, 'revision 2 failed')],
    },
    {
      name: 'rolling update, surge 1, nothing new ready: one new replica, every old one kept',
      input: input({ replicas: [replica(1, 1), replica(2, 1)] }),
      actions: start(1),
    },
    {
      name: 'rolling update, surge 2: two new at once',
      input: input({ surge: 2, replicas: [replica(1, 1), replica(2, 1)] }),
      actions: start(2),
    },
    {
      name: 'rolling update, one new ready: one old retired (the least loaded), no start beyond the surge',
      input: input({ replicas: [replica(1, 1, true, 5), replica(2, 1, true, 0), replica(3, 2, true)] }),
      actions: [retire(2, 'replaced by revision 2')],
    },
    {
      name: 'rolling update, one new not yet ready: within the surge, nothing more',
      input: input({ replicas: [replica(1, 1), replica(2, 1), replica(3, 2, false)] }),
      actions: [],
    },
    {
      name: 'rolling update, all new ready: every old one retired',
      input: input({ replicas: [replica(1, 1), replica(2, 1), replica(3, 2), replica(4, 2)] }),
      actions: [retire(2, 'replaced by revision 2'), retire(1, 'replaced by revision 2')],
    },
    {
      name: 'a component that left the deployment is retired whole, first',
      input: input({ components: [{ component: 'Worker', desired: 1 }], replicas: [replica(1, 2, true, 0, 'Replica'), replica(2, 2, true, 0, 'Worker')] }),
      actions: [retire(1, 'component Replica is not part of the deployment any more')],
    },
    {
      name: 'components are planned in their order',
      input: input({
        components: [
          { component: 'Frontend', desired: 1 },
          { component: 'Worker', desired: 2 },
        ],
      }),
      actions: [...start(1, 2, 'Frontend'), ...start(2, 2, 'Worker')],
    },
  ];
  for (const c of cases) it(c.name, () => expect(planReplicas(c.input)).toEqual(c.actions));

  it('after a rolling update step with one old replica left and the new ones ready, it goes', () => {
    // desired 2, surge 1: 2 new ready + 1 old → the old one is retired, nothing started.
    expect(planReplicas(input({ replicas: [replica(1, 1), replica(3, 2), replica(4, 2)] }))).toEqual([retire(1, 'replaced by revision 2')]);
  });
});

describe('runRevisionOf', () => {
  const revisions = (status2: 'ready' | 'pending' | 'failed') => [
    { revision: 1, status: 'ready' as const },
    { revision: 2, status: status2 },
  ];
  it('runs the current revision unless it failed', () => {
    expect(runRevisionOf({ revision: 2, serving_revision: 1, revisions: revisions('pending') } as never)).toBe(2);
    expect(runRevisionOf({ revision: 2, serving_revision: 1, revisions: revisions('failed') } as never)).toBe(1);
    expect(runRevisionOf({ revision: 2, serving_revision: null, revisions: revisions('failed') } as never)).toBeNull();
  });
});

describe('runRevisionOf with traffic', () => {
  const revisions = [
    { revision: 1, status: 'retired' as const },
    { revision: 2, status: 'ready' as const },
    { revision: 3, status: 'pending' as const },
  ];
  const pinned = (revision: number): TrafficTarget[] => [{ revision, latest: false, percent: 100, tag: null }];
  it('runs the revision traffic sends everything to: an older one (a rollback), not the newest left at 0 %', () => {
    expect(runRevisionOf({ revision: 3, serving_revision: 2, revisions, traffic: pinned(2) } as never)).toBe(2);
    expect(runRevisionOf({ revision: 3, serving_revision: 2, revisions, traffic: pinned(1) } as never)).toBe(1);
    expect(runRevisionOf({ revision: 3, serving_revision: 2, revisions, traffic: null } as never)).toBe(3);
  });
  it('falls back to the serving revision when the one traffic names failed', () => {
    const failed = [...revisions.slice(0, 2), { revision: 3, status: 'failed' as const }];
    expect(runRevisionOf({ revision: 3, serving_revision: 2, revisions: failed, traffic: [{ revision: null, latest: true, percent: 100, tag: null }] } as never)).toBe(2);
  });
});

describe('planSplit', () => {
  const revision = (n: number, desired: number, blocked: string | null = null, component = 'Replica'): RevisionTarget => ({ revision: n, blocked, components: [{ component, desired }] });
  const split = (over: Partial<SplitPlanInput>): SplitPlanInput => ({
    split: [revision(3, 2), revision(4, 1)],
    paused: false,
    routed: 'Replica',
    drainDue: false,
    replicas: [],
    ...over,
  });
  const startOf = (n: number, revision: number, component = 'Replica'): Action[] => start(n, revision, component);
  const cases: { name: string; input: SplitPlanInput; actions: Action[] }[] = [
    { name: 'starts each revision of the split at its own count', input: split({}), actions: [...startOf(2, 3), ...startOf(1, 4)] },
    {
      name: 'single → split: the revision that served keeps its replicas, the new one starts',
      input: split({ replicas: [replica(1, 3), replica(2, 3)] }),
      actions: startOf(1, 4),
    },
    {
      name: 'each revision scales on its own: surplus retired in retire order, the other grows',
      input: split({ split: [revision(3, 1), revision(4, 3)], replicas: [replica(1, 3, true, 4), replica(2, 3, true, 1), replica(3, 4)] }),
      actions: [retire(2, 'revision 3 scaled to 1'), ...startOf(2, 4)],
    },
    {
      name: 'a tag-only revision (0 %) runs like the others',
      input: split({ split: [revision(3, 2), revision(5, 1)], replicas: [replica(1, 3), replica(2, 3)] }),
      actions: startOf(1, 5),
    },
    {
      name: 'a failed revision of the split runs nothing',
      input: split({ split: [revision(3, 2), revision(4, 1, 'revision 4 failed')], replicas: [replica(1, 3), replica(2, 3), replica(3, 4, false)] }),
      actions: [retire(3, 'revision 4 failed')],
    },
    {
      name: 'a revision left at 0 % keeps its replicas while a revision of the split has no ready one',
      input: split({ replicas: [replica(1, 2), replica(2, 3), replica(3, 3), replica(4, 4, false)] }),
      actions: [],
    },
    {
      name: 'it goes once every revision of the split has a ready replica',
      input: split({ replicas: [replica(1, 2, true, 3), replica(2, 2, true, 0), replica(3, 3), replica(4, 3, false), replica(5, 4)] }),
      actions: [retire(2, 'revision 2 takes no traffic any more'), retire(1, 'revision 2 takes no traffic any more')],
    },
    {
      name: 'or once a minute has passed since the edit, ready or not',
      input: split({ drainDue: true, replicas: [replica(1, 2), replica(2, 3, false), replica(3, 3, false), replica(4, 4, false)] }),
      actions: [retire(1, 'revision 2 takes no traffic any more')],
    },
    {
      name: 'a failed revision of the split does not hold the others back',
      input: split({ split: [revision(3, 1), revision(4, 1, 'revision 4 failed')], replicas: [replica(1, 2), replica(2, 3)] }),
      actions: [retire(1, 'revision 2 takes no traffic any more')],
    },
    {
      name: 'readiness is told from the routed component (a ready worker behind no ready Frontend does not serve)',
      input: split({
        routed: 'Frontend',
        split: [
          { revision: 3, blocked: null, components: [{ component: 'Frontend', desired: 1 }, { component: 'Worker', desired: 1 }] },
          { revision: 4, blocked: null, components: [{ component: 'Frontend', desired: 1 }, { component: 'Worker', desired: 1 }] },
        ],
        replicas: [replica(1, 2, true, 0, 'Frontend'), replica(2, 3, true, 0, 'Frontend'), replica(3, 3, true, 0, 'Worker'), replica(4, 4, false, 0, 'Frontend'), replica(5, 4, true, 0, 'Worker')],
      }),
      actions: [],
    },
    {
      name: 'paused: everything goes at once',
      input: split({ paused: true, split: [revision(3, 0), revision(4, 0)], replicas: [replica(1, 2), replica(2, 3), replica(3, 4)] }),
      actions: [retire(2, 'the deployment is paused'), retire(3, 'the deployment is paused'), retire(1, 'the deployment is paused')],
    },
    {
      name: "a component not in the revision's spec is retired",
      input: split({ split: [revision(3, 1, null, 'Worker')], replicas: [replica(1, 3, true, 0, 'Replica'), replica(2, 3, true, 0, 'Worker')] }),
      actions: [retire(1, 'component Replica is not part of revision 3')],
    },
  ];
  for (const c of cases) it(c.name, () => expect(planSplit(c.input)).toEqual(c.actions));

  it('split → single is a rolling update: the other revisions go only once the target has its desired count ready', () => {
    // Revision 4 takes 100 % after a 50/50 split; desired 2, surge 1.
    const base = input({ revision: 4, runRevision: 4, components: [{ component: 'Replica', desired: 2 }] });
    expect(planReplicas({ ...base, replicas: [replica(1, 3), replica(2, 3), replica(3, 4)] })).toEqual([retire(2, 'replaced by revision 4')]);
    expect(planReplicas({ ...base, replicas: [replica(1, 3), replica(3, 4), replica(4, 4, false)] })).toEqual([]);
    expect(planReplicas({ ...base, replicas: [replica(1, 3), replica(3, 4), replica(4, 4)] })).toEqual([retire(1, 'replaced by revision 4')]);
    // A tagged revision that left with the split goes by the same rule.
    expect(planReplicas({ ...base, replicas: [replica(1, 5), replica(3, 4), replica(4, 4, false)] })).toEqual([]);
  });
});
