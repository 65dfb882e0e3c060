// Owns "power of two choices" (Mitzenmacher, "The Power of Two Choices in Randomized Load
// Balancing", 2001): two distinct replicas drawn at random, the one with fewer requests in
// flight first. Nearly as good as always picking the least loaded, without herding every
// request onto the one replica that looked idle a moment ago.

import type { LoadView, ReplicaRef, Selector } from './selector.js';

export class PowerOfTwoSelector implements Selector {
  constructor(private readonly random: () => number = Math.random) {}

  select(replicas: readonly ReplicaRef[], load: LoadView): ReplicaRef[] {
    const n = replicas.length;
    if (n <= 1) return replicas.slice();
    const i = Math.floor(this.random() * n);
    let j = Math.floor(this.random() * (n - 1));
    if (j >= i) j += 1; // distinct from i, still uniform
    const a = replicas[i]!;
    const b = replicas[j]!;
    const [first, second] = load.inflight(b.id) < load.inflight(a.id) ? [b, a] : [a, b];
    if (n === 2) return [first, second];
    const out = [first, second];
    for (let k = 0; k < n; k++) if (k !== i && k !== j) out.push(replicas[k]!);
    return out;
  }
}
