// Owns what the controller has to reconcile: the set of deployments marked dirty (their record
// changed, one of their replicas changed, the autoscaler's figure for them moved, a timer they
// set came due), the timers themselves ("reconcile me again at T": a rollout deadline, a split's
// drain delay), the deployments to try again at the next tick (their pass failed), and whether
// everything is due (the lease was just taken, the change feed came back after a cut). A
// deployment nobody marks costs nothing: the tick only compares the times of the timers that
// exist with now, so its cost follows the deployments that asked, not the ones that exist.

export interface Work {
  /** Every deployment is due (list them all); the ids below come on top. */
  all: boolean;
  ids: number[];
}

export class ReconcileQueue {
  private readonly dirty = new Set<number>();
  /** Per deployment, when it asked to be reconciled again (one timer each: the earliest it needs). */
  private readonly timers = new Map<number, number>();
  /** Deployments whose pass failed: tried again at the next tick. */
  private readonly retries = new Set<number>();
  private everything = false;

  /** Reconcile this deployment at the next pass. */
  mark(id: number): void {
    this.dirty.add(id);
  }

  /** Reconcile every deployment at the next pass. */
  markAll(): void {
    this.everything = true;
  }

  /** Reconcile this deployment again at `when` (replaces the time it asked before); null: it needs no timer. */
  at(id: number, when: number | null): void {
    if (when === null) this.timers.delete(id);
    else this.timers.set(id, when);
  }

  /** Try this deployment again at the next tick. */
  retry(id: number): void {
    this.retries.add(id);
  }

  /** Everything waiting for the next tick is due now (the store is writable again). */
  retryNow(): void {
    for (const id of this.retries) this.dirty.add(id);
    this.retries.clear();
  }

  /** A deployment gone: its timer and retry with it. */
  forget(id: number): void {
    this.timers.delete(id);
    this.retries.delete(id);
  }

  /** The tick: due timers and retries become dirty. True when a pass has work. */
  tick(now: number): boolean {
    for (const [id, when] of this.timers) {
      if (when > now) continue;
      this.timers.delete(id);
      this.dirty.add(id);
    }
    this.retryNow();
    return this.pending;
  }

  /** Takes what is due for a pass. */
  take(): Work {
    const work = { all: this.everything, ids: [...this.dirty] };
    this.everything = false;
    this.dirty.clear();
    return work;
  }

  /** Whether a pass has work now. */
  get pending(): boolean {
    return this.everything || this.dirty.size > 0;
  }

  /** When the deployment asked to be reconciled again, if it did (for tests and diagnostics). */
  timerOf(id: number): number | undefined {
    return this.timers.get(id);
  }
}
