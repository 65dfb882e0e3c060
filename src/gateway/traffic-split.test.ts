// Unit tests of the revision choice of a split deployment: without a session the shares are
// exact (a smooth weighted round robin, interleaved, restarted when the shares change); with
// one, the same session lands on the same revision every time, and 1,000 sessions spread by
// the percents; a revision with no ready replica gives its share to the others by their
// weights (sessions on the others stay put); none ready → every ready replica of the deployment.

import { describe, expect, it } from 'vitest';
import type { ReplicaRef } from '../balancer/selector.js';
import type { RevisionRoute, Route, TrafficSplit } from './routing-table.js';
import { revisionAt, sessionPoint, SmoothRoundRobin, TrafficSplitter } from './traffic-split.js';

const replicas = (revision: number, ...ids: number[]): ReplicaRef[] => ids.map((id) => ({ id, address: `127.0.0.1:${4000 + id}`, revision }));

function route(shares: Array<[revision: number, percent: number, ready: ReplicaRef[]]>, extra: ReplicaRef[] = []): Pick<Route, 'deploymentId' | 'replicas' | 'split'> {
  const revisions: RevisionRoute[] = shares.map(([revision, percent, ready]) => ({ revision, percent, replicas: ready }));
  const split: TrafficSplit = { key: shares.map(([r, p]) => `${r}:${p}`).join(','), revisions };
  return { deploymentId: 7, replicas: [...revisions.flatMap((r) => r.replicas), ...extra], split };
}

/** The revision of the replicas chosen: every replica of a revision's set runs it. */
const revisionOf = (chosen: readonly ReplicaRef[]): number => {
  const revisions = new Set(chosen.map((r) => r.revision));
  return revisions.size === 1 ? [...revisions][0]! : -1;
};

describe('TrafficSplitter without a session', () => {
  it('gives a 90/10 split exactly 100 of 1,000 requests on the canary, interleaved', () => {
    const split = new TrafficSplitter();
    const r = route([
      [1, 90, replicas(1, 1, 2)],
      [2, 10, replicas(2, 3)],
    ]);
    const picks = Array.from({ length: 1000 }, () => revisionOf(split.choose(r, null)));
    expect(picks.filter((p) => p === 2)).toHaveLength(100);
    expect(picks.filter((p) => p === 1)).toHaveLength(900);
    // Smooth: never two canary requests in a row on a 90/10 split, and one in every ten.
    for (let i = 0; i < 1000; i += 10) expect(picks.slice(i, i + 10).filter((p) => p === 2)).toHaveLength(1);
  });

  it('keeps exact shares for three revisions and restarts its round when the shares change', () => {
    const split = new TrafficSplitter();
    const three = route([
      [1, 50, replicas(1, 1)],
      [2, 30, replicas(2, 2)],
      [3, 20, replicas(3, 3)],
    ]);
    const counts = new Map<number, number>();
    for (let i = 0; i < 100; i++) {
      const p = revisionOf(split.choose(three, null));
      counts.set(p, (counts.get(p) ?? 0) + 1);
    }
    expect(Object.fromEntries(counts)).toEqual({ 1: 50, 2: 30, 3: 20 });
    const moved = route([
      [1, 50, replicas(1, 1)],
      [2, 50, replicas(2, 2)],
    ]);
    const picks = Array.from({ length: 100 }, () => revisionOf(split.choose(moved, null)));
    expect(picks.filter((p) => p === 2)).toHaveLength(50);
  });

  it('SmoothRoundRobin is the nginx sequence', () => {
    const rr = new SmoothRoundRobin('a', 3);
    const revisions: RevisionRoute[] = [
      { revision: 1, percent: 5, replicas: replicas(1, 1) },
      { revision: 2, percent: 1, replicas: replicas(2, 2) },
      { revision: 3, percent: 1, replicas: replicas(3, 3) },
    ];
    // nginx's documented order for weights {a=5, b=1, c=1}: a a b a c a a.
    expect(Array.from({ length: 7 }, () => rr.next(revisions))).toEqual([0, 0, 1, 0, 2, 0, 0]);
  });
});

describe('TrafficSplitter with X-Session-Id', () => {
  const r = route([
    [1, 90, replicas(1, 1, 2, 3)],
    [2, 10, replicas(2, 4)],
  ]);

  it('puts 10 % ± 3 % of 1,000 sessions on the canary, and each on the same revision every time', () => {
    const split = new TrafficSplitter();
    const first = Array.from({ length: 1000 }, (_, i) => revisionOf(split.choose(r, `session-${i}`)));
    const canary = first.filter((p) => p === 2).length;
    expect(canary).toBeGreaterThanOrEqual(70);
    expect(canary).toBeLessThanOrEqual(130);
    // Interleaved with requests without a session, in another order: nothing moves.
    for (let i = 999; i >= 0; i--) {
      split.choose(r, null);
      expect(revisionOf(split.choose(r, `session-${i}`))).toBe(first[i]);
    }
  });

  it('hashes onto the cumulative percents, skipping revisions at 0 %', () => {
    const revisions: RevisionRoute[] = [
      { revision: 1, percent: 90, replicas: replicas(1, 1) },
      { revision: 5, percent: 0, replicas: replicas(5, 5) },
      { revision: 2, percent: 10, replicas: replicas(2, 2) },
    ];
    expect(revisionAt(revisions, 0, false)).toBe(0);
    expect(revisionAt(revisions, 0.8999, false)).toBe(0);
    expect(revisionAt(revisions, 0.9, false)).toBe(2);
    expect(revisionAt(revisions, 0.9999, false)).toBe(2);
    expect(sessionPoint('x')).toBe(sessionPoint('x'));
    expect(sessionPoint('x')).toBeGreaterThanOrEqual(0);
    expect(sessionPoint('x')).toBeLessThan(1);
  });
});

describe('TrafficSplitter when a revision has no ready replica', () => {
  it('gives its share to the others by their weights; sessions on the others stay where they were', () => {
    const split = new TrafficSplitter();
    const all = route([
      [1, 60, replicas(1, 1)],
      [2, 30, replicas(2, 2)],
      [3, 10, replicas(3, 3)],
    ]);
    const before = Array.from({ length: 1000 }, (_, i) => revisionOf(split.choose(all, `s${i}`)));
    const starting = route([
      [1, 60, replicas(1, 1)],
      [2, 30, replicas(2, 2)],
      [3, 10, []],
    ]);
    const picks = Array.from({ length: 900 }, () => revisionOf(split.choose(starting, null)));
    expect(picks.filter((p) => p === 1)).toHaveLength(600);
    expect(picks.filter((p) => p === 2)).toHaveLength(300);
    const after = Array.from({ length: 1000 }, (_, i) => revisionOf(split.choose(starting, `s${i}`)));
    for (let i = 0; i < 1000; i++) {
      if (before[i] === 3) expect([1, 2]).toContain(after[i]);
      else expect(after[i]).toBe(before[i]);
    }
    // The sessions of revision 3 spread over 1 and 2 by their weights (2 : 1).
    const moved = after.filter((_, i) => before[i] === 3);
    const toOne = moved.filter((p) => p === 1).length / moved.length;
    expect(toOne).toBeGreaterThan(0.45);
    expect(toOne).toBeLessThan(0.85);
  });

  it('falls back to every ready replica of the deployment when no revision of the split has one', () => {
    const split = new TrafficSplitter();
    // Revision 1 was just moved to 0 % and still runs; 2 and 3 are starting.
    const leftover = replicas(1, 9);
    const r = route(
      [
        [2, 50, []],
        [3, 50, []],
      ],
      leftover,
    );
    expect(split.choose(r, null)).toBe(r.replicas);
    expect(split.choose(r, 'session')).toBe(r.replicas);
    expect(r.replicas.map((x) => x.id)).toEqual([9]);
  });

  it('returns the deployment\'s replicas unchanged without a split', () => {
    const split = new TrafficSplitter();
    const all = replicas(4, 1, 2);
    expect(split.choose({ deploymentId: 1, replicas: all, split: null }, 'x')).toBe(all);
  });
});
