// GET …/activity through the control app with a real activity recorder: the response carries
// the metric and target the deployment scales on and each point's signal (the response schema
// drops what it does not list, so this guards the route and the schema together).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControl, type TestControl } from '../../../test/helpers/control.js';
import { ActivityRecorder } from '../../autoscaler/activity.js';
import { ManualClock } from '../../core/clock.js';
import { deploymentRecord } from '../../store/store.contract.js';

const T0 = Date.parse('2026-03-01T12:00:01.000Z');

let api: TestControl;
let id: number;
const clock = new ManualClock(T0);
const activity = new ActivityRecorder(clock);

beforeAll(async () => {
  api = await startControl({ activity });
  const base = deploymentRecord(0, 'x');
  id = (
    await api.store.create('deployment', (n) => ({
      ...base,
      id: n,
      name: 'queued',
      scaling: { ...base.scaling, min_replicas: 1, max_replicas: 4, target_concurrency: 8, autoscaling_metric: 'queue_depth', autoscaling_target: 5 },
    }))
  ).value.id;
  activity.record(id, { samples: [{ second: T0, average: 2 }], held: 0, desired: 3, ready: 2, signal: 12.4 });
  clock.advance(1000);
});

afterAll(async () => {
  await api?.close();
});

describe('GET /deployments/general/{id}/activity', () => {
  it('says the metric, its target and the signal of each step', async () => {
    const res = await api.call('GET', `/deployments/general/${id}/activity`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({
      step_seconds: 5,
      window_seconds: 900,
      component: 'Replica',
      metric: 'queue_depth',
      target: 5,
      points: [{ t: '2026-03-01T12:00:00.000Z', in_flight: 2, in_flight_max: 2, held: 0, desired: 3, ready: 2, signal: 12.4 }],
    });
  });
});
