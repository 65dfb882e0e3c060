// Table tests of the controller's plan: starts and retirements (with their reasons and in
// their order) for scaling up and down, retire order, zero and paused, a failed revision
// falling back to the serving one, rolling updates within the surge, and a component that
// left the deployment.

import { describe, expect, it } from 'vitest';
import { planReplicas, runRevisionOf, type Action, type LiveReplica, type PlanInput } from './plan.js';

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
