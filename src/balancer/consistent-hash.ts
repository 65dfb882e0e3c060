// Owns session affinity: consistent hashing with bounded loads (Mirrokni, Thorup and
// Zadimoghaddam, "Consistent Hashing with Bounded Loads", SODA 2018). A key walks a ring of
// virtual nodes clockwise; it goes to the first replica whose in-flight count stays within
// capacity = ceil(c × (total in flight + 1) / n). With no load a key always lands on the
// same replica, adding an (n+1)th replica moves about 1/(n+1) of keys, and no replica ever
// holds more than ceil(c × mean). The remaining replicas follow in walk order, so a retry
// after a refused connection goes where the key would go if its replica were gone.

import { hash32 } from './hash.js';
import { PowerOfTwoSelector } from './power-of-two.js';
import type { LoadView, ReplicaRef, Selector } from './selector.js';

export interface ConsistentHashOptions {
  /** c > 1: how far above the mean load one replica may go (the gateway's --affinity-load-factor). */
  loadFactor: number;
  /** Points per replica on the ring; more smooths the split (default 160). */
  virtualNodes?: number;
}

interface Ring {
  points: Uint32Array;
  /** Index into `replicas` of each point's owner. */
  owners: Uint16Array;
  replicas: readonly ReplicaRef[];
  signature: string;
}

export class ConsistentHashSelector implements Selector {
  private readonly c: number;
  private readonly vnodes: number;
  private readonly rings = new WeakMap<readonly ReplicaRef[], Ring>();
  private last: Ring | null = null;
  /** Without a key there is nothing to be sticky about: spread by load instead. */
  private readonly fallback = new PowerOfTwoSelector();

  constructor(opts: ConsistentHashOptions) {
    this.c = opts.loadFactor;
    this.vnodes = opts.virtualNodes ?? 160;
    if (!(this.c > 1)) throw new RangeError(`loadFactor must be above 1, not ${this.c}`);
  }

  select(replicas: readonly ReplicaRef[], load: LoadView, key: string | null): ReplicaRef[] {
    const n = replicas.length;
    if (n <= 1) return replicas.slice();
    if (key === null) return this.fallback.select(replicas, load);
    const ring = this.ringFor(replicas);
    let total = 0;
    for (const r of replicas) total += load.inflight(r.id);
    const capacity = Math.ceil((this.c * (total + 1)) / n);

    const order: ReplicaRef[] = [];
    const seen = new Uint8Array(n);
    let chosen = -1;
    const { points, owners } = ring;
    let p = lowerBound(points, hash32(key));
    for (let step = 0; step < points.length && order.length < n; step++, p++) {
      if (p === points.length) p = 0;
      const owner = owners[p]!;
      if (seen[owner]) continue;
      seen[owner] = 1;
      const replica = ring.replicas[owner]!;
      if (chosen === -1 && load.inflight(replica.id) + 1 <= capacity) chosen = order.length;
      order.push(replica);
    }
    // Capacity is at least the mean + 1, so some replica always fits; guard anyway.
    if (chosen > 0) order.unshift(...order.splice(chosen, 1));
    return order;
  }

  private ringFor(replicas: readonly ReplicaRef[]): Ring {
    const cached = this.rings.get(replicas);
    if (cached) return cached;
    // A new array with the same replicas (a table rebuild) reuses the last ring.
    const signature = replicas.map((r) => r.id).sort((a, b) => a - b).join(',');
    let ring = this.last !== null && this.last.signature === signature ? this.last : null;
    if (ring === null || ring.replicas.length !== replicas.length || !ring.replicas.every((r, i) => r === replicas[i])) {
      ring = buildRing(replicas, this.vnodes, signature);
    }
    this.rings.set(replicas, ring);
    this.last = ring;
    return ring;
  }
}

/** Points hashed from replica ids only, so the ring depends on the set, not order or address. */
function buildRing(replicas: readonly ReplicaRef[], vnodes: number, signature: string): Ring {
  const entries: Array<[number, number]> = [];
  replicas.forEach((r, index) => {
    for (let v = 0; v < vnodes; v++) entries.push([hash32(`${r.id}#${v}`), index]);
  });
  entries.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const points = new Uint32Array(entries.length);
  const owners = new Uint16Array(entries.length);
  entries.forEach(([point, owner], i) => {
    points[i] = point;
    owners[i] = owner;
  });
  return { points, owners, replicas, signature };
}

/** First index whose point is >= h (points.length when none). */
function lowerBound(points: Uint32Array, h: number): number {
  let lo = 0;
  let hi = points.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (points[mid]! < h) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
