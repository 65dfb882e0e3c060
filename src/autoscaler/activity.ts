// Owns the activity history: per deployment, the last 15 minutes of what the autoscaler saw
// and decided, in 5-second buckets of a fixed ring (180 of them) — in-flight requests (mean and
// peak of the gateway's per-second concurrency), requests held for a replica, the desired count
// and the ready replicas of the scaled component (every revision's, when traffic splits), and
// the figure of the signal it scales on. The autoscaler records once per tick; the control API
// reads it for the console's Activity tab. In memory only: it is a view of recent behaviour,
// rebuilt from nothing after a restart.

import type { Clock } from '../core/clock.js';
import { autoscalingMetricOf, autoscalingTargetOf } from '../domain/autoscaling-signal.js';
import type { DeploymentRecord } from '../domain/records.js';
import { scaledComponent } from '../domain/components.js';
import type { ActivityPoint, ActivityView } from '../domain/ports.js';
import type { ConcurrencySample } from './decide.js';

export const ACTIVITY_STEP_MS = 5_000;
export const ACTIVITY_BUCKETS = 180;

/** What one autoscaler tick saw and decided for a deployment. */
export interface ActivityObservation {
  /** The gateway's per-second samples (it keeps minutes of them; those already recorded are skipped). */
  samples: readonly ConcurrencySample[];
  held: number;
  desired: number | null;
  ready: number;
  /** The autoscaling metric's figure the tick read (Decision.signal; in a split, the highest of its revisions'); null: none. */
  signal: number | null;
}

interface Bucket {
  start: number;
  sum: number;
  count: number;
  max: number;
  held: number;
  desired: number | null;
  ready: number;
  signal: number | null;
}

const bucketStart = (ms: number) => ms - (((ms % ACTIVITY_STEP_MS) + ACTIVITY_STEP_MS) % ACTIVITY_STEP_MS);
const round2 = (v: number) => Math.round(v * 100) / 100;

class DeploymentActivity {
  private readonly ring: Array<Bucket | undefined> = new Array<Bucket | undefined>(ACTIVITY_BUCKETS);
  /** The newest sample second recorded; the gateway's older history predates this record. */
  private lastSecond: number;

  constructor(now: number) {
    this.lastSecond = bucketStart(now) - 1;
  }

  record(now: number, o: ActivityObservation): void {
    const current = this.slot(bucketStart(now), true) as Bucket;
    current.held = Math.max(current.held, o.held);
    current.desired = o.desired;
    current.ready = o.ready;
    if (o.signal !== null) current.signal = o.signal;
    for (const s of o.samples) {
      if (s.second <= this.lastSecond) continue;
      this.lastSecond = s.second;
      // A bucket no tick reached (the loop stalled) stays a gap rather than a guess.
      const b = this.slot(bucketStart(s.second), false);
      if (!b) continue;
      b.sum += s.average;
      b.count += 1;
      b.max = Math.max(b.max, s.average);
    }
  }

  points(now: number): ActivityPoint[] {
    const newest = bucketStart(now);
    const oldest = newest - (ACTIVITY_BUCKETS - 1) * ACTIVITY_STEP_MS;
    return this.ring
      .filter((b): b is Bucket => b !== undefined && b.start >= oldest && b.start <= newest)
      .sort((a, b) => a.start - b.start)
      .map((b) => ({
        t: new Date(b.start).toISOString(),
        in_flight: b.count > 0 ? round2(b.sum / b.count) : 0,
        in_flight_max: round2(b.max),
        held: b.held,
        desired: b.desired,
        ready: b.ready,
        signal: b.signal === null ? null : round2(b.signal),
      }));
  }

  /** The bucket starting at `start`, made (replacing what that slot held 15 minutes ago) when `create`. */
  private slot(start: number, create: boolean): Bucket | undefined {
    const i = Math.floor(start / ACTIVITY_STEP_MS) % ACTIVITY_BUCKETS;
    const found = this.ring[i];
    if (found?.start === start) return found;
    if (!create) return undefined;
    const fresh: Bucket = { start, sum: 0, count: 0, max: 0, held: 0, desired: null, ready: 0, signal: null };
    this.ring[i] = fresh;
    return fresh;
  }
}

export class ActivityRecorder {
  private readonly deployments = new Map<number, DeploymentActivity>();

  constructor(private readonly clock: Clock) {}

  record(deploymentId: number, observation: ActivityObservation, now = this.clock.now()): void {
    let activity = this.deployments.get(deploymentId);
    if (!activity) {
      activity = new DeploymentActivity(now);
      this.deployments.set(deploymentId, activity);
    }
    activity.record(now, observation);
  }

  /** Forgets every deployment not in `live` (deleted, or no longer scaled). */
  retain(live: ReadonlySet<number>): void {
    for (const id of [...this.deployments.keys()]) if (!live.has(id)) this.deployments.delete(id);
  }

  has(deploymentId: number): boolean {
    return this.deployments.has(deploymentId);
  }

  view(d: DeploymentRecord): ActivityView {
    const component = scaledComponent(d);
    const activity = component === null ? undefined : this.deployments.get(d.id);
    return {
      step_seconds: ACTIVITY_STEP_MS / 1000,
      window_seconds: (ACTIVITY_STEP_MS * ACTIVITY_BUCKETS) / 1000,
      component,
      metric: autoscalingMetricOf(d.scaling),
      target: autoscalingTargetOf(d.scaling),
      points: activity ? activity.points(this.clock.now()) : [],
    };
  }
}
