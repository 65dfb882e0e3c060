// Unit tests of the per-revision history a gateway keeps: 5-second steps aligned on the epoch
// (requests, 5xx errors, completion tokens, a time-to-first-token histogram of streamed
// answers), five minutes of them, a deployment's sum over its revisions, and revisions and
// deployments forgotten once they have nothing left in the window or left the table.

import { describe, expect, it } from 'vitest';
import { ManualClock } from '../core/clock.js';
import { TTFT_BUCKETS_MS, ttftBucket } from '../domain/revision-stats.js';
import { RevisionHistory } from './revision-history.js';

describe('RevisionHistory', () => {
  it('counts into 5-second steps, keeps five minutes of them and sums a deployment\'s revisions', () => {
    const clock = new ManualClock(1_000_002_000);
    const h = new RevisionHistory(clock);
    h.record(7, 2, 200, 30, 120);
    h.record(7, 2, 502, 0, null);
    clock.advance(2_000); // same step (1_000_000_000 … 1_000_005_000)
    h.record(7, 2, 200, 10, 40);
    h.record(7, 3, 200, 5, null);
    clock.advance(4_000); // the next step
    h.record(7, 2, 429, 0, null);
    const steps = h.steps(7, 2);
    expect(steps.map((s) => [s.start, s.requests, s.errors, s.completion_tokens])).toEqual([
      [1_000_000_000, 3, 1, 40],
      [1_000_005_000, 1, 0, 0],
    ]);
    expect(steps[0]!.ttft).toHaveLength(TTFT_BUCKETS_MS.length + 1);
    expect(steps[0]!.ttft[ttftBucket(120)]).toBe(1);
    expect(steps[0]!.ttft[ttftBucket(40)]).toBe(1);
    expect(steps[0]!.ttft.reduce((a, b) => a + b, 0)).toBe(2);
    expect(h.steps(7, null).map((s) => [s.start, s.requests])).toEqual([
      [1_000_000_000, 4],
      [1_000_005_000, 1],
    ]);
    // Copies: a reader changing them changes nothing here.
    steps[0]!.requests = 99;
    expect(h.steps(7, 2)[0]!.requests).toBe(3);
    expect(h.revisions(7).sort()).toEqual([2, 3]);
    expect(h.deploymentIds()).toEqual([7]);

    // Five minutes on, the first step is out of the window; revision 3 has nothing left.
    clock.advance(297_000);
    expect(h.steps(7, 2).map((s) => s.start)).toEqual([1_000_005_000]);
    expect(h.revisions(7)).toEqual([2]);
    h.record(7, 2, 200, 0, null);
    expect(h.steps(7, 2).map((s) => s.start)).toEqual([1_000_005_000, 1_000_305_000]);
    clock.advance(400_000);
    expect(h.revisions(7)).toEqual([]);
    expect(h.deploymentIds()).toEqual([]);
  });

  it('forgets deployments that left the table', () => {
    const h = new RevisionHistory(new ManualClock(0));
    h.record(1, 1, 200, 0, null);
    h.record(2, 1, 200, 0, null);
    h.retain(new Set([2]));
    expect(h.deploymentIds()).toEqual([2]);
    expect(h.steps(1, null)).toEqual([]);
  });
});
