import { describe, expect, it } from 'vitest';
import { ManualClock } from '../core/clock.js';
import { InflightTracker } from './inflight.js';

describe('InflightTracker', () => {
  it('integrates the in-flight count over each second', () => {
    const clock = new ManualClock(10_000);
    const t = new InflightTracker(clock);
    t.deploymentStart(1); // 1 in flight from 10.000
    clock.advance(500);
    t.deploymentStart(1); // 2 from 10.500
    clock.advance(750);
    t.deploymentEnd(1); // 1 from 11.250
    clock.advance(1750); // now 13.000
    expect(t.concurrency(1)).toEqual([
      { second: 10_000, average: 1.5 }, // 0.5 s × 1 + 0.5 s × 2
      { second: 11_000, average: 1.25 }, // 0.25 s × 2 + 0.75 s × 1
      { second: 12_000, average: 1 },
    ]);
    expect(t.deploymentInflight(1)).toBe(1);
  });

  it('does not miss a burst of short requests between two readings', () => {
    const clock = new ManualClock(0);
    const t = new InflightTracker(clock);
    for (let i = 0; i < 100; i++) {
      t.deploymentStart(7);
      clock.advance(10); // each request lasts 10 ms, back to back
      t.deploymentEnd(7);
    }
    expect(t.concurrency(7)).toEqual([{ second: 0, average: 1 }]);
  });

  it('keeps three minutes of history through a long idle period', () => {
    const clock = new ManualClock(0);
    const t = new InflightTracker(clock);
    t.deploymentStart(1);
    t.deploymentEnd(1);
    clock.advance(3_600_000);
    const samples = t.concurrency(1);
    expect(samples.length).toBe(180);
    expect(samples.every((s) => s.average === 0)).toBe(true);
    expect(samples.at(-1)!.second).toBe(3_599_000);
  });

  it('counts per replica for the balancer and never goes below zero', () => {
    const t = new InflightTracker(new ManualClock());
    t.replicaStart(3);
    t.replicaStart(3);
    t.replicaEnd(3);
    expect(t.inflight(3)).toBe(1);
    t.replicaEnd(3);
    t.replicaEnd(3);
    expect(t.inflight(3)).toBe(0);
    t.deploymentEnd(99);
    expect(t.deploymentInflight(99)).toBe(0);
  });

  it('forgets a deployment at once when idle, else when its last request ends', () => {
    const clock = new ManualClock(0);
    const t = new InflightTracker(clock);
    t.deploymentStart(1);
    t.deploymentEnd(1);
    t.deploymentStart(2);
    t.deploymentStart(2);
    t.forget(1);
    t.forget(2);
    t.forget(3); // never seen: nothing to do
    expect(t.deploymentIds()).toEqual([2]);
    expect(t.deploymentInflight(2)).toBe(2); // its requests still count
    t.deploymentEnd(2);
    expect(t.deploymentIds()).toEqual([2]);
    t.deploymentEnd(2);
    expect(t.deploymentIds()).toEqual([]);
    expect(t.concurrency(2)).toEqual([]);
  });

  it('integrates each revision of a deployment apart, and forgets revisions that left the table once idle', () => {
    const clock = new ManualClock(10_000);
    const t = new InflightTracker(clock);
    t.revisionStart(1, 3); // revision 3: 1 in flight from 10.000
    t.revisionStart(1, 4);
    t.revisionStart(1, 4); // revision 4: 2 from 10.000
    clock.advance(500);
    t.revisionEnd(1, 4); // 1 from 10.500
    clock.advance(500);
    t.revisionEnd(1, 3);
    clock.advance(1000); // now 12.000
    expect(t.revisionConcurrency(1, 3)).toEqual([
      { second: 10_000, average: 1 },
      { second: 11_000, average: 0 },
    ]);
    expect(t.revisionConcurrency(1, 4)).toEqual([
      { second: 10_000, average: 1.5 },
      { second: 11_000, average: 1 },
    ]);
    expect(t.revisionConcurrency(1, 5)).toEqual([]);
    expect(t.revisionIds(1).sort()).toEqual([3, 4]);
    // Revision 3 left (idle): gone at once; 4 left while a request runs: gone when it ends.
    t.retainRevisions(1, new Set());
    expect(t.revisionIds(1)).toEqual([4]);
    t.revisionEnd(1, 4);
    expect(t.revisionIds(1)).toEqual([]);
    t.revisionEnd(1, 4); // never below zero, nothing to end
    // A deleted deployment's revisions go with it.
    t.revisionStart(2, 1);
    t.forget(2);
    expect(t.revisionIds(2)).toEqual([]);
  });
});
