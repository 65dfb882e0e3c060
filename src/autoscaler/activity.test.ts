// The activity history over a fake clock: 5-second buckets from one-second ticks, the mean and
// peak of the gateway's samples (each counted once, none from before the record began), held
// and desired and ready as the bucket ends, the signal's last figure, the metric and target
// the deployment scales on, a 15-minute ring that never grows, gaps left as gaps, deployments
// forgotten, and no points for pools of fixed size.

import { describe, expect, it } from 'vitest';
import { ManualClock } from '../core/clock.js';
import { deploymentRecord } from '../store/store.contract.js';
import { orchestratedSpec } from '../../test/helpers/spec-fixtures.js';
import { ACTIVITY_BUCKETS, ActivityRecorder, type ActivityObservation } from './activity.js';
import type { ConcurrencySample } from './decide.js';

const T0 = Date.parse('2026-03-01T12:00:00.000Z');

/**
 * Drives a recorder as the autoscaler does: one tick a second, after the gateway closed the
 * second just passed (concurrency `c`), with the gateway's whole history each time — which
 * starts with a second from before the record began.
 */
function harness(start = T0) {
  const clock = new ManualClock(start);
  const recorder = new ActivityRecorder(clock);
  const history: ConcurrencySample[] = [{ second: start - 1000, average: 9 }];
  const tick = (c = 0, o: Partial<Omit<ActivityObservation, 'samples'>> = {}) => {
    history.push({ second: clock.now(), average: c });
    if (history.length > 180) history.shift();
    clock.advance(1000);
    recorder.record(1, { samples: history.slice(), held: o.held ?? 0, desired: o.desired === undefined ? 1 : o.desired, ready: o.ready ?? 1, signal: o.signal ?? null });
  };
  return { clock, recorder, tick, view: () => recorder.view(deploymentRecord(1, 'd1')) };
}

describe('ActivityRecorder', () => {
  it('makes 5-second buckets: mean and peak in flight, most held, desired and ready at the bucket end', () => {
    const h = harness();
    // Ticks at :01–:04 fall in the first bucket, :05–:09 in the second, :10–:11 in the third.
    [1, 2, 3, 4].forEach((c, i) => h.tick(c, { held: c === 2 ? 3 : 0, desired: i + 1, ready: i }));
    for (const c of [0.5, 0.25, 0, 0, 0]) h.tick(c, { desired: 2, ready: 2 });
    h.tick(7, { desired: 2, ready: 2 });
    h.tick(0, { desired: null, ready: 0 });
    const v = h.view();
    expect(v).toMatchObject({ step_seconds: 5, window_seconds: 900, component: 'Replica', metric: 'concurrency', target: null });
    expect(v.points).toEqual([
      // Seconds :00–:04 (1, 2, 3, 4, 0.5); the 9 of 11:59:59 predates the record.
      { t: '2026-03-01T12:00:00.000Z', in_flight: 2.1, in_flight_max: 4, held: 3, desired: 4, ready: 3, signal: null },
      // Seconds :05–:09 (0.25, 0, 0, 0, 7).
      { t: '2026-03-01T12:00:05.000Z', in_flight: 1.45, in_flight_max: 7, held: 0, desired: 2, ready: 2, signal: null },
      // Second :10 so far; the autoscaler has not decided (null) at its last tick.
      { t: '2026-03-01T12:00:10.000Z', in_flight: 0, in_flight_max: 0, held: 0, desired: null, ready: 0, signal: null },
    ]);
  });

  it("keeps the signal's last figure in each step, and says the metric and target the deployment scales on", () => {
    const h = harness();
    // :01–:04 in the first step: read 3.456, then 7, then nothing (a tick without a reading keeps the last).
    h.tick(1, { signal: 3.456 });
    h.tick(1, { signal: 7 });
    h.tick(1, { signal: null });
    h.tick(1);
    h.tick(1, { signal: null }); // :05, the next step: nothing read in it yet
    expect(h.view().points.map((p) => p.signal)).toEqual([7, null]);
    const d = { ...deploymentRecord(1, 'd1') };
    d.scaling = { ...d.scaling, autoscaling_metric: 'queue_depth', autoscaling_target: 5 };
    expect(h.recorder.view(d)).toMatchObject({ metric: 'queue_depth', target: 5 });
    d.scaling = { ...d.scaling, autoscaling_metric: 'concurrency', autoscaling_target: null, target_concurrency: 4 };
    expect(h.recorder.view(d)).toMatchObject({ metric: 'concurrency', target: 4 });
    h.tick(1, { signal: 1 / 3 });
    expect(h.view().points.at(-1)?.signal).toBe(0.33);
  });

  it('counts each sample once, however often it is handed in', () => {
    const h = harness();
    const samples = [
      { second: T0, average: 2 },
      { second: T0 + 1000, average: 4 },
    ];
    h.clock.advance(2000);
    for (let i = 0; i < 5; i++) h.recorder.record(1, { samples, held: 0, desired: 1, ready: 1, signal: null });
    expect(h.view().points).toEqual([{ t: new Date(T0).toISOString(), in_flight: 3, in_flight_max: 4, held: 0, desired: 1, ready: 1, signal: null }]);
  });

  it('keeps 15 minutes in a fixed ring and leaves a bucket no tick reached as a gap', () => {
    const h = harness();
    for (let i = 0; i < 20 * 60; i++) h.tick(1);
    const points = h.view().points;
    expect(points).toHaveLength(ACTIVITY_BUCKETS);
    const first = Date.parse(points[0]!.t);
    const last = Date.parse(points.at(-1)!.t);
    expect(last - first).toBe((ACTIVITY_BUCKETS - 1) * 5000);
    expect(h.clock.now() - first).toBeLessThanOrEqual(900_000);
    // The newest bucket has had a tick but no closed second yet.
    expect(points.slice(0, -1).every((p) => p.in_flight === 1 && p.in_flight_max === 1)).toBe(true);

    h.clock.advance(9_000); // the loop stalled through a whole bucket
    h.tick(1);
    const after = h.view().points.map((p) => Date.parse(p.t));
    const steps = after.slice(1).map((t, i) => t - after[i]!);
    expect(steps.filter((s) => s !== 5000)).toEqual([10_000]);
  });

  it('shows nothing older than the window, even when no tick came since', () => {
    const h = harness();
    for (let i = 0; i < 9; i++) h.tick(1);
    expect(h.view().points).toHaveLength(2);
    h.clock.advance(16 * 60_000);
    expect(h.view().points).toEqual([]);
  });

  it('forgets deployments that are gone, and has no points for pools of fixed size', () => {
    const h = harness();
    h.tick();
    expect(h.recorder.has(1)).toBe(true);
    h.recorder.retain(new Set([2]));
    expect(h.recorder.has(1)).toBe(false);
    expect(h.view().points).toEqual([]);

    h.tick();
    const disaggregated = {
      ...deploymentRecord(1, 'd1'),
      family: 'orchestrated' as const,
      spec: orchestratedSpec({ serving_mode: 'disaggregated', worker_pools: { prefill: { hardware_instance_id: 1 }, decode: { hardware_instance_id: 1 } } }),
    };
    expect(h.recorder.view(disaggregated)).toMatchObject({ component: null, points: [] });
    const aggregated = { ...disaggregated, spec: orchestratedSpec({ hardware_instance_id: 1 }) };
    expect(h.recorder.view(aggregated).component).toBe('Worker');
  });
});
