// Owns the choice of a revision for a request to a deployment whose traffic splits between
// revisions (domain/traffic.ts), made before the placement policy chooses a replica inside it:
//   with X-Session-Id  its hash is a point on the cumulative percents, so a session lands on
//                      the same revision every time while the split is unchanged (whatever
//                      session_affinity says; that one pins the replica inside the revision);
//   without            a smooth weighted round robin (nginx's) per deployment, so the shares are
//                      exact: 10 of every 100 requests on a 90/10 split, evenly interleaved.
// A revision with no ready replica gives its share to the others by their weights (a session
// whose revision has none is spread over the rest by its place in that revision's range; the
// sessions of the others stay where they are); when
// no revision of the split has a ready replica, every ready replica of the deployment is a
// candidate (a revision just moved to 0 % and still running), so moving weights fails nothing.

import { hash32, rehash32 } from '../balancer/hash.js';
import type { ReplicaRef } from '../balancer/selector.js';
import type { RevisionRoute, Route, TrafficSplit } from './routing-table.js';

const TWO_POW_32 = 2 ** 32;

/** A session's point in [0, 1): where it falls on the cumulative percents. */
export function sessionPoint(session: string): number {
  return rehash32(hash32(session)) / TWO_POW_32;
}

/**
 * The index of the revision the point falls in, over the revisions with a share — and, with
 * `readyOnly`, a ready replica — each taking a range as wide as its percent; -1 when none may.
 */
export function revisionAt(revisions: readonly RevisionRoute[], point: number, readyOnly: boolean): number {
  let total = 0;
  for (const r of revisions) if (r.percent > 0 && (!readyOnly || r.replicas.length > 0)) total += r.percent;
  if (total === 0) return -1;
  const target = point * total;
  let cumulative = 0;
  let last = -1;
  for (let i = 0; i < revisions.length; i++) {
    const r = revisions[i]!;
    if (r.percent <= 0 || (readyOnly && r.replicas.length === 0)) continue;
    cumulative += r.percent;
    last = i;
    if (target < cumulative) return i;
  }
  return last;
}

/**
 * Where in its revision's range the point falls, as a new point in [0, 1): the sessions of a
 * revision with nothing ready are spread over the others by their weights with it (the point
 * itself would put them all on the revision next to it).
 */
export function pointWithin(revisions: readonly RevisionRoute[], point: number, index: number): number {
  let total = 0;
  let before = 0;
  for (let i = 0; i < revisions.length; i++) {
    const percent = revisions[i]!.percent;
    if (percent <= 0) continue;
    if (i < index) before += percent;
    total += percent;
  }
  const width = revisions[index]!.percent;
  const within = (point * total - before) / width;
  return Math.min(Math.max(within, 0), 1 - Number.EPSILON);
}

/**
 * nginx's smooth weighted round robin over one split's revisions: each turn every revision
 * that may take requests (a share and a ready replica) adds its percent to its current weight,
 * the largest wins and gives back the total. Over any 100 turns each revision gets its percent
 * to within one, interleaved rather than in runs.
 */
export class SmoothRoundRobin {
  private readonly current: Float64Array;

  constructor(
    /** The split's key (TrafficSplit.key): new shares start a new round. */
    readonly key: string,
    size: number,
  ) {
    this.current = new Float64Array(size);
  }

  /** The index of the next revision; -1 when none has a share and a ready replica. */
  next(revisions: readonly RevisionRoute[]): number {
    const current = this.current;
    let total = 0;
    let best = -1;
    for (let i = 0; i < revisions.length && i < current.length; i++) {
      const r = revisions[i]!;
      if (r.percent <= 0 || r.replicas.length === 0) continue;
      current[i]! += r.percent;
      total += r.percent;
      if (best === -1 || current[i]! > current[best]!) best = i;
    }
    if (best !== -1) current[best]! -= total;
    return best;
  }
}

/** Each split deployment's round robin, kept while its shares are unchanged. */
export class TrafficSplitter {
  private readonly rounds = new Map<number, SmoothRoundRobin>();

  /**
   * The replicas the request is placed among: those of the revision chosen for it, or, when
   * no revision of the split has a ready replica (or there is no split), every ready replica
   * of the deployment.
   */
  choose(route: Pick<Route, 'deploymentId' | 'replicas' | 'split'>, session: string | null): readonly ReplicaRef[] {
    if (route.split === null) return route.replicas;
    const revisions = route.split.revisions;
    let chosen: number;
    if (session !== null) {
      const point = sessionPoint(session);
      chosen = revisionAt(revisions, point, false);
      if (chosen !== -1 && revisions[chosen]!.replicas.length === 0) chosen = revisionAt(revisions, pointWithin(revisions, point, chosen), true);
    } else {
      chosen = this.roundOf(route.deploymentId, route.split).next(revisions);
    }
    return chosen === -1 ? route.replicas : revisions[chosen]!.replicas;
  }

  /** Forgets the rounds of deployments that left the table. */
  retain(deploymentIds: { has(id: number): boolean }): void {
    for (const id of this.rounds.keys()) if (!deploymentIds.has(id)) this.rounds.delete(id);
  }

  private roundOf(deploymentId: number, split: TrafficSplit): SmoothRoundRobin {
    let round = this.rounds.get(deploymentId);
    if (round === undefined || round.key !== split.key) {
      round = new SmoothRoundRobin(split.key, split.revisions.length);
      this.rounds.set(deploymentId, round);
    }
    return round;
  }
}
