// Owns the gateway's guess of what each replica holds in its prefix cache: per replica, the
// chained block hashes of the prompts recently sent to it, in least-recently-used order and
// bounded like the replica's own KV cache. It is approximate by design — the replica may
// have evicted earlier, or a request may have failed — and it never asks the replica: the
// cost of a wrong guess is one prefill, the cost of asking would be on every request.

export class PrefixIndex {
  /** Per replica: block hash → true, in use order (a Map iterates in insertion order). */
  private readonly replicas = new Map<number, Map<number, true>>();
  private readonly capacities = new Map<number, number>();

  /** @param defaultCapacity blocks kept per replica unless setCapacity says otherwise */
  constructor(private readonly defaultCapacity = 16_384) {
    if (!(defaultCapacity >= 1)) throw new RangeError(`an index needs room for at least one block, not ${defaultCapacity}`);
  }

  /** How many leading blocks of `hashes` the replica is thought to hold. */
  match(replicaId: number, hashes: readonly number[]): number {
    const blocks = this.replicas.get(replicaId);
    if (!blocks) return 0;
    let n = 0;
    while (n < hashes.length && blocks.has(hashes[n]!)) n++;
    return n;
  }

  /** The prompt went to the replica: its blocks become the most recently used there. */
  record(replicaId: number, hashes: readonly number[]): void {
    if (hashes.length === 0) return;
    let blocks = this.replicas.get(replicaId);
    if (!blocks) this.replicas.set(replicaId, (blocks = new Map()));
    for (const h of hashes) {
      blocks.delete(h);
      blocks.set(h, true);
    }
    const capacity = this.capacityOf(replicaId);
    if (blocks.size <= capacity) return;
    // Oldest first; a prompt's own first blocks were just refreshed, so they stay.
    let excess = blocks.size - capacity;
    for (const h of blocks.keys()) {
      if (excess-- <= 0) break;
      blocks.delete(h);
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

  /** Blocks held for a replica (tests and metrics). */
  size(replicaId: number): number {
    return this.replicas.get(replicaId)?.size ?? 0;
  }

  knows(replicaId: number): boolean {
    return this.replicas.has(replicaId);
  }

  private capacityOf(replicaId: number): number {
    return this.capacities.get(replicaId) ?? this.defaultCapacity;
  }
}
