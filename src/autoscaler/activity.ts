// Owns the activity history: per deployment, the last 15 minutes of what the autoscaler saw
// and decided, in 5-second buckets of a fixed ring (180 of them) — in-flight requests (mean and
// peak of the gateway's per-second concurrency), requests held for a replica, the desired count
// and the ready replicas of the scaled component (every revision's, when traffic splits), and
// the figure of the signal it scales on. The autoscaler records once per tick; the control API
// reads it for the console's Activity tab. In memory only: it is a view of recent behaviour,
// rebuilt from nothing after a restart. A deployment the autoscaler leaves idle (at zero, no
// load) is not recorded per tick: it is marked idle with what every tick would have recorded
// (nothing in flight or held, nothing ready, the same desired count and signal), and its
// steps since are made from that when read — or written into the ring when it wakes — so
// an idle deployment costs nothing per tick and still shows its 15 minutes.

import type { Clock } from '../core/clock.js';
import { autoscalingMetricOf, autoscalingTargetOf } from '../domain/autoscaling-signal.js';
import type { DeploymentRecord } from '../domain/records.js';
import { scaledComponent } from '../domain/components.js';
import type { ActivityPoint, ActivityView } from '../domain/ports.js';
import type { ConcurrencySample } from './decide.js';

export const ACTIVITY_STEP_MS = 5_000;
export const ACTIVITY_BUCKETS = 180;

/** What every tick records for a deployment while it stays idle. */
export interface IdlePoint {
  desired: number | null;
  signal: number | null;
}

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
  /** Slot (0 to ACTIVITY_BUCKETS - 1) → its bucket; a map, so a deployment that was recorded a few times holds a few buckets, not 180 slots. */
  private readonly ring = new Map<number, Bucket>();
  /** The newest sample second recorded; the gateway's older history predates this record. */
  private lastSecond: number;
  /** Idle since `since` (ms): the steps after that step are `point`, with nothing in flight, held or ready. */
  private idle: { since: number; point: IdlePoint } | null = null;

  constructor(now: number) {
    this.lastSecond = bucketStart(now) - 1;
  }

  /** From now on, until the next record, every tick would record this. */
  sleep(now: number, point: IdlePoint): void {
    this.idle = { since: now, point };
  }

  record(now: number, o: ActivityObservation): void {
    if (this.idle !== null) {
      // The idle ticks' buckets, this one's included (a tick of the idle run may have begun it).
      for (const start of this.idleSteps(bucketStart(now))) this.write(this.idleBucket(start));
      this.idle = null;
    }
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
    const kept = [...this.ring.values()].filter((b) => b.start >= oldest && b.start <= newest);
    const idle = this.idleSteps(newest).filter((start) => this.slot(start, false) === undefined).map((start) => this.idleBucket(start));
    return [...kept, ...idle]
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

  /** The starts of the steps after the idle run began, up to `newest`, within the ring's reach. */
  private idleSteps(newest: number): number[] {
    if (this.idle === null) return [];
    const from = Math.max(bucketStart(this.idle.since) + ACTIVITY_STEP_MS, newest - (ACTIVITY_BUCKETS - 1) * ACTIVITY_STEP_MS);
    const out: number[] = [];
    for (let start = from; start <= newest; start += ACTIVITY_STEP_MS) out.push(start);
    return out;
  }

  private idleBucket(start: number): Bucket {
    const { desired, signal } = this.idle!.point;
    return { start, sum: 0, count: 0, max: 0, held: 0, desired, ready: 0, signal };
  }

  private write(b: Bucket): void {
    this.ring.set(Math.floor(b.start / ACTIVITY_STEP_MS) % ACTIVITY_BUCKETS, b);
  }

  /** The bucket starting at `start`, made (replacing what that slot held 15 minutes ago) when `create`. */
  private slot(start: number, create: boolean): Bucket | undefined {
    const i = Math.floor(start / ACTIVITY_STEP_MS) % ACTIVITY_BUCKETS;
    const found = this.ring.get(i);
    if (found?.start === start) return found;
    if (!create) return undefined;
    const fresh: Bucket = { start, sum: 0, count: 0, max: 0, held: 0, desired: null, ready: 0, signal: null };
    this.ring.set(i, fresh);
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

  /**
   * The deployment is idle from `now`: until it is recorded again, each tick would record no
   * samples, nothing held or ready, and `point` — its steps are made so when read.
   */
  idle(deploymentId: number, point: IdlePoint, now = this.clock.now()): void {
    this.deployments.get(deploymentId)?.sleep(now, point);
  }

  /** Forgets every deployment not in `live` (deleted, or no longer scaled). */
  retain(live: ReadonlySet<number>): void {
    for (const id of [...this.deployments.keys()]) if (!live.has(id)) this.deployments.delete(id);
  }

  /** Forgets one deployment (deleted, or no longer scaled). */
  forget(deploymentId: number): void {
    this.deployments.delete(deploymentId);
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
