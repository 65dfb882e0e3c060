// Unit test of which activity point the console calls "now" (the Overview's autoscaler line,
// the Activity tab's line and its charts' last point): the newest finished 5-second step, not
// the one in progress, whose in-flight figure restarts at 0 every step; and how it reads. It
// sits here because the test runner looks in src/ and test/ only.

import { describe, expect, it } from 'vitest';
import type { ActivityAnswer, ActivityPoint } from '../../console/src/api/types.js';
import { autoscalerNow, settledPoints } from '../../console/src/components/autoscaler-now.js';

const point = (t: string, o: Partial<ActivityPoint>): ActivityPoint => ({ t, in_flight: 0, in_flight_max: 0, held: 0, desired: 1, ready: 1, signal: null, ...o });
const answer = (points: ActivityPoint[], component: string | null = 'Replica'): ActivityAnswer => ({ step_seconds: 5, window_seconds: 900, component, metric: 'concurrency', target: null, points });

describe('console autoscaler now', () => {
  const finished = point('2026-03-01T12:00:00.000Z', { in_flight: 3.2, in_flight_max: 4, desired: 3, ready: 2, held: 1 });
  const inProgress = point('2026-03-01T12:00:05.000Z', { in_flight: 0, in_flight_max: 0, desired: 3, ready: 3 });

  it('is the newest finished step: the charts end there too', () => {
    const a = answer([finished, inProgress]);
    expect(settledPoints(a)).toEqual([finished]);
    expect(autoscalerNow(a)).toBe('wants 3 replicas; 2 ready; 3.2 in flight (peak 4), 1 held');
  });

  it('is the only step while there is just one, names Worker replicas, and says nothing before a decision', () => {
    expect(autoscalerNow(answer([finished]))).toBe('wants 3 replicas; 2 ready; 3.2 in flight (peak 4), 1 held');
    expect(autoscalerNow(answer([point('2026-03-01T12:00:00.000Z', { desired: 1 }), inProgress], 'Worker'))).toBe('wants 1 Worker replica; 1 ready; 0 in flight (peak 0), 0 held');
    expect(autoscalerNow(answer([point('2026-03-01T12:00:00.000Z', { desired: null }), inProgress]))).toBeNull();
    expect(autoscalerNow(answer([]))).toBeNull();
  });
});
