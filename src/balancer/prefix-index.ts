// Owns the gateway's guess of what each replica holds in its prefix cache: per replica, the
// chained block hashes of the prompts recently sent to it, in least-recently-used order and
// bounded like the replica's own KV cache. It is approximate by design — the replica may
// have evicted earlier, or a request may have failed — and it never asks the replica: the
// cost of a wrong guess is one prefill, the cost of asking would be on every request.

/**
 * One replica's blocks in two generations: recent ones, and the generation before. Recording
 * a block only adds it to the recent one — no reordering, no per-block eviction; when the
 * recent generation fills half the capacity it becomes the old one and the old one is
 * dropped, so the index holds between half and all of the capacity, least recently used
 * blocks going first (approximately, a generation at a time). Measured on 200 KB prompts
 * (3,000 blocks), this is several times cheaper than keeping a strict LRU order in one Map.
 */
interface Generations {
  recent: Set<number>;
  old: Set<number>;
  /** Prompt blocks the recent generation stands for (a strided entry stands for STRIDE). */
  recentBlocks: number;
}

/**
 * A prompt's first DENSE blocks are recorded and looked up one by one; beyond them, one block
 * in STRIDE. Block names are chained (each covers the whole prompt before it), so one present
 * name says its whole prefix was sent there: a 200 KB prompt (3,000 blocks) costs about 250
 * set operations instead of 3,000 — the largest cost of the policy, measured — and its match
 * is exact to STRIDE blocks (1 KB of prompt). Positions are absolute, so a conversation's next
 * turn probes the same ones its last turn recorded.
 */
const DENSE = 64;
const STRIDE = 16;

/** The next block position that is recorded and probed after `k`. */
function nextPosition(k: number): number {
  return k + 1 < DENSE ? k + 1 : k + 1 === DENSE ? DENSE + STRIDE - 1 : k + STRIDE;
}

export class PrefixIndex {
  private readonly replicas = new Map<number, Generations>();
  private readonly capacities = new Map<number, number>();

  /** @param defaultCapacity blocks kept per replica unless setCapacity says otherwise */
  constructor(private readonly defaultCapacity = 16_384) {
    if (!(defaultCapacity >= 1)) throw new RangeError(`an index needs room for at least one block, not ${defaultCapacity}`);
  }

  /** How many leading blocks of `hashes` the replica is thought to hold (exact to STRIDE blocks past DENSE). */
  match(replicaId: number, hashes: readonly number[]): number {
    const g = this.replicas.get(replicaId);
    if (!g) return 0;
    const { recent, old } = g;
    let held = 0;
    for (let k = 0; k < hashes.length; k = nextPosition(k)) {
      const h = hashes[k]!;
      if (!recent.has(h) && !old.has(h)) break;
      held = k + 1;
    }
    return held;
  }

  /** The prompt went to the replica: its blocks become the most recently used there. */
  record(replicaId: number, hashes: readonly number[]): void {
    if (hashes.length === 0) return;
    let g = this.replicas.get(replicaId);
    if (!g) this.replicas.set(replicaId, (g = { recent: new Set(), old: new Set(), recentBlocks: 0 }));
    const half = Math.max(1, Math.floor(this.capacityOf(replicaId) / 2));
    for (let k = 0; k < hashes.length; k = nextPosition(k)) {
      const before = g.recent.size;
      g.recent.add(hashes[k]!);
      if (g.recent.size === before) continue;
      g.recentBlocks += k < DENSE ? 1 : STRIDE;
      if (g.recentBlocks >= half) {
        g.old = g.recent;
        g.recent = new Set();
        g.recentBlocks = 0;
      }
    }
  }

  /** The replica's cache size in blocks, when it is known (its metrics) rather than assumed. */
  setCapacity(replicaId: number, blocks: number): void {
    if (blocks >= 1) this.capacities.set(replicaId, Math.floor(blocks));
  }

  /** Forgets every replica not in `present`: a replica that left takes its cache with it. */
  retain(present: ReadonlySet<number>): void {
    for (const id of this.replicas.keys()) if (!present.has(id)) this.replicas.delete(id);
    for (const id of this.capacities.keys()) if (!present.has(id)) this.capacities.delete(id);
  }

  /** Names held for a replica (tests and metrics); one in both generations counts once. */
  size(replicaId: number): number {
    const g = this.replicas.get(replicaId);
    if (!g) return 0;
    let n = g.old.size;
    for (const h of g.recent) if (!g.old.has(h)) n++;
    return n;
  }

  knows(replicaId: number): boolean {
    return this.replicas.has(replicaId);
  }

  private capacityOf(replicaId: number): number {
    return this.capacities.get(replicaId) ?? this.defaultCapacity;
  }
}
