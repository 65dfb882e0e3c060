// Owns which of the activity's points the console calls "now", and how it reads: the newest
// finished 5-second step — the step in progress has only some of its seconds (its in-flight
// figure restarts at 0 every step) — so the Overview's autoscaler line, the Activity tab's
// line and the charts' last point are one and the same point.

import type { ActivityAnswer, ActivityPoint } from '../api/types.js';

/** The points to show: every one but the step still in progress (unless it is the only one). */
export function settledPoints(a: ActivityAnswer): ActivityPoint[] {
  return a.points.length > 1 ? a.points.slice(0, -1) : a.points;
}

/** "replica" or "Worker replica": what the autoscaler moves. */
export function scaledWhat(a: ActivityAnswer): string {
  return a.component === null || a.component === 'Replica' ? 'replica' : `${a.component} replica`;
}

/** The autoscaler's figures at the newest settled step, in words; null before it has decided. */
export function autoscalerNow(a: ActivityAnswer): string | null {
  const p = settledPoints(a).at(-1);
  if (p === undefined || p.desired === null) return null;
  const what = scaledWhat(a);
  return `wants ${p.desired} ${what}${p.desired === 1 ? '' : 's'}; ${p.ready} ready; ${p.in_flight} in flight (peak ${p.in_flight_max}), ${p.held} held`;
}
