// Owns the answer to "can this replica take one more request now?" that flow control asks
// (flow-control.ts): no, once the gateway's own count of its in-flight requests reaches either
//   the limit the latency model learnt (balancer/latency-model.ts: the concurrency past which
//   its first tokens started to queue), or
//   the batch the engine said it runs when it last said it queued (vllm:num_requests_running
//   at a scrape where vllm:num_requests_waiting was above zero).
// Whichever says saturated first wins. The engine's number is remembered, not read fresh: a
// scrape is up to a second old, while the in-flight count moves with every request, so a
// replica whose requests end has room again at once rather than at the next scrape. A replica
// that exports no metrics is judged by the model alone; one the model knows nothing of yet,
// and whose engine never said it queued, always has room.

import type { ReplicaSignals } from '../balancer/prefix-aware.js';
import type { CapacityView } from './flow-control.js';

export interface ReplicaCapacityDeps {
  /** The gateway's in-flight count of a replica. */
  inflight(replicaId: number): number;
  /** The learnt concurrency limit; Infinity while unknown. */
  limit(replicaId: number): number;
  /** The replica's fresh scraped signals; null: none. */
  signals(replicaId: number): ReplicaSignals | null;
  /** Predicted ms of prefill it owes for requests already sent (prefix_aware's books and the latency model). */
  prefillAheadMs(replicaId: number): number;
}

export class ReplicaCapacity implements CapacityView {
  /** Running sequences at which each replica was last seen queueing. */
  private readonly engineCap = new Map<number, number>();

  constructor(private readonly deps: ReplicaCapacityDeps) {}

  prefillAheadMs(replicaId: number): number {
    return this.deps.prefillAheadMs(replicaId);
  }

  room(replicaId: number): number {
    return this.limit(replicaId) - this.deps.inflight(replicaId);
  }

  /** The in-flight count at which the replica is saturated; Infinity while nothing says. */
  limit(replicaId: number): number {
    return Math.min(this.deps.limit(replicaId), this.engineLimit(replicaId));
  }

  /** The engine's own batch cap as last seen; Infinity when it never said it queued. */
  engineLimit(replicaId: number): number {
    const s = this.deps.signals(replicaId);
    if (s !== null && s.waiting !== null && s.running !== null && s.running > 0) {
      // Queueing: its batch is full at `running`. Running more than the cap remembered, with
      // none waiting: the cap was low (the batch grew) — but running exactly the cap with none
      // waiting is a full batch, not a bigger one.
      const known = this.engineCap.get(replicaId);
      if (s.waiting > 0) this.engineCap.set(replicaId, s.running);
      else if (known !== undefined && s.running > known) this.engineCap.set(replicaId, s.running);
    }
    return this.engineCap.get(replicaId) ?? Infinity;
  }

  /** Forgets replicas that left. */
  retain(present: ReadonlySet<number>): void {
    for (const id of this.engineCap.keys()) if (!present.has(id)) this.engineCap.delete(id);
  }
}
