// Owns in-flight accounting: how many requests each deployment and each replica holds right
// now, and, per deployment, the time-weighted concurrency of every one-second bucket — the
// signal the autoscaler (M4) reads. A request counts from admission until its last byte. The
// same per revision of a deployment, for requests sent to that revision's replicas (from the
// forward to the end): revisions that split traffic are autoscaled apart.
//
// Time-weighted, not sampled: a bucket's value is the integral of the in-flight count over
// that second, so a burst of short requests between two scrapes is never missed (Knative's
// activator reports the same average-concurrency signal).

import type { Clock } from '../core/clock.js';
import { systemClock } from '../core/clock.js';

/** One second of history: its start (ms since the epoch, a multiple of 1000) and average. */
export interface ConcurrencySample {
  second: number;
  average: number;
}

const HISTORY_SECONDS = 180;

class DeploymentConcurrency {
  count = 0;
  /** When the count last fell to zero (ms); -Infinity: it never has. */
  quietSince = -Infinity;
  /** A revision that left the table while requests ran: dropped when its last one ends. */
  leaving = false;
  /** Start of the bucket being filled, in ms. */
  private bucket: number;
  /** Integral of the count over the current bucket so far, in request·ms. */
  private area = 0;
  private lastChange: number;
  private readonly history: ConcurrencySample[] = [];

  constructor(now: number) {
    this.bucket = now - (now % 1000);
    this.lastChange = now;
  }

  /** Moves the integral up to `now`, closing every bucket passed on the way. */
  advance(now: number): void {
    if (now < this.lastChange) now = this.lastChange; // a clock step back never un-counts time
    while (now >= this.bucket + 1000) {
      const end = this.bucket + 1000;
      this.area += this.count * (end - this.lastChange);
      this.history.push({ second: this.bucket, average: this.area / 1000 });
      if (this.history.length > HISTORY_SECONDS) this.history.shift();
      this.bucket = end;
      this.lastChange = end;
      this.area = 0;
      // Idle for longer than the history holds: the skipped seconds were all at `count`.
      if (now - end > HISTORY_SECONDS * 1000) {
        const skip = Math.floor((now - end) / 1000) - HISTORY_SECONDS;
        this.bucket += skip * 1000;
        this.lastChange = this.bucket;
      }
    }
    this.area += this.count * (now - this.lastChange);
    this.lastChange = now;
  }

  samples(now: number): ConcurrencySample[] {
    this.advance(now);
    return this.history.slice();
  }
}

export class InflightTracker {
  private readonly deployments = new Map<number, DeploymentConcurrency>();
  /** Per deployment, per revision. */
  private readonly revisions = new Map<number, Map<number, DeploymentConcurrency>>();
  private readonly replicas = new Map<number, number>();
  /** Forgotten while requests were in flight: dropped when the last of them ends. */
  private readonly leaving = new Set<number>();

  constructor(private readonly clock: Clock = systemClock) {}

  /** A request was admitted for this deployment. Pair with `deploymentEnd`. */
  deploymentStart(deploymentId: number): void {
    const now = this.clock.now();
    let d = this.deployments.get(deploymentId);
    if (!d) {
      d = new DeploymentConcurrency(now);
      this.deployments.set(deploymentId, d);
    }
    d.advance(now);
    d.count += 1;
  }

  deploymentEnd(deploymentId: number): void {
    const d = this.deployments.get(deploymentId);
    if (!d || d.count === 0) return;
    const now = this.clock.now();
    d.advance(now);
    d.count -= 1;
    if (d.count === 0) d.quietSince = now;
    if (d.count === 0 && this.leaving.delete(deploymentId)) this.deployments.delete(deploymentId);
  }

  /** A request was sent to a replica of this revision. Pair with `revisionEnd`. */
  revisionStart(deploymentId: number, revision: number): void {
    const now = this.clock.now();
    let byRevision = this.revisions.get(deploymentId);
    if (!byRevision) {
      byRevision = new Map();
      this.revisions.set(deploymentId, byRevision);
    }
    let r = byRevision.get(revision);
    if (!r) {
      r = new DeploymentConcurrency(now);
      byRevision.set(revision, r);
    }
    r.advance(now);
    r.count += 1;
  }

  revisionEnd(deploymentId: number, revision: number): void {
    const byRevision = this.revisions.get(deploymentId);
    const r = byRevision?.get(revision);
    if (!byRevision || !r || r.count === 0) return;
    r.advance(this.clock.now());
    r.count -= 1;
    if (r.count === 0 && r.leaving) byRevision.delete(revision);
  }

  /** Completed one-second buckets of one revision's requests, oldest first, up to the last three minutes. */
  revisionConcurrency(deploymentId: number, revision: number): ConcurrencySample[] {
    return this.revisions.get(deploymentId)?.get(revision)?.samples(this.clock.now()) ?? [];
  }

  /** Revisions of a deployment with an entry (history or requests in flight). */
  revisionIds(deploymentId: number): number[] {
    const byRevision = this.revisions.get(deploymentId);
    return byRevision ? [...byRevision.keys()] : [];
  }

  /** Forgets the revisions of a deployment not in `present` (they left the table): at once, or when their last request ends. */
  retainRevisions(deploymentId: number, present: ReadonlySet<number>): void {
    const byRevision = this.revisions.get(deploymentId);
    if (!byRevision) return;
    for (const [revision, r] of byRevision) {
      if (present.has(revision)) r.leaving = false;
      else if (r.count === 0) byRevision.delete(revision);
      else r.leaving = true;
    }
    if (byRevision.size === 0) this.revisions.delete(deploymentId);
  }

  replicaStart(replicaId: number): void {
    this.replicas.set(replicaId, (this.replicas.get(replicaId) ?? 0) + 1);
  }

  replicaEnd(replicaId: number): void {
    const n = (this.replicas.get(replicaId) ?? 0) - 1;
    if (n > 0) this.replicas.set(replicaId, n);
    else this.replicas.delete(replicaId);
  }

  /** In-flight requests at one replica now (the balancer's load view). */
  inflight(replicaId: number): number {
    return this.replicas.get(replicaId) ?? 0;
  }

  /** Replicas holding requests now, with their counts — routed or already dropped (draining). */
  busyReplicas(): [number, number][] {
    return [...this.replicas.entries()];
  }

  deploymentInflight(deploymentId: number): number {
    return this.deployments.get(deploymentId)?.count ?? 0;
  }

  /** Completed one-second buckets, oldest first, up to the last three minutes. */
  concurrency(deploymentId: number): ConcurrencySample[] {
    return this.deployments.get(deploymentId)?.samples(this.clock.now()) ?? [];
  }

  /**
   * Deployments with requests in flight or a second above zero still in their history (the
   * last three minutes): for every other one, every figure here is zero — what the autoscaler
   * may skip. One comparison per deployment with an entry.
   */
  busyDeploymentIds(): number[] {
    const since = this.clock.now() - (HISTORY_SECONDS + 1) * 1000;
    const out: number[] = [];
    for (const [id, d] of this.deployments) if (d.count > 0 || d.quietSince >= since) out.push(id);
    return out;
  }

  /** Deployments with an entry: those with history or requests in flight. */
  deploymentIds(): number[] {
    return [...this.deployments.keys()];
  }

  /**
   * Forgets a deployment that left the routing table (deleted: ids are never reused), at once
   * when it holds no request, else when its last request ends — so its count stays exact.
   */
  forget(deploymentId: number): void {
    // Ids are never reused: a request of it still running ends against nothing, which is a no-op.
    this.revisions.delete(deploymentId);
    if (!this.deployments.has(deploymentId)) return;
    if (this.deploymentInflight(deploymentId) === 0) this.deployments.delete(deploymentId);
    else this.leaving.add(deploymentId);
  }
}
