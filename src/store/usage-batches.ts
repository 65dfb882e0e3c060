// Owns the usage ledger's bookkeeping between "counted" and "written": deltas are summed per
// key until a flush takes them as a numbered batch, and a batch whose write failed is written
// again as it is — same number, same figures — before anything newer for its key. The write
// records the last batch number it added per writer, so a batch whose first write was applied
// though its answer was lost (the store went away mid-command) is recognised and not added
// twice, and later deltas are never folded into a batch that may already be counted.

export interface Batch<D> {
  key: string;
  /** Increasing per buffer; a key's batches are written in this order. */
  seq: number;
  delta: D;
}

/** `D` is a batch's sum, `A` what is added to it (by default the same). */
export class UsageBatches<D, A = D> {
  private readonly pending = new Map<string, D>();
  private readonly unconfirmed = new Map<string, Batch<D>>();
  private seq = 0;

  constructor(
    private readonly empty: () => D,
    private readonly merge: (into: D, delta: A) => void,
  ) {}

  /** Counts `delta` under `key` (summed with what is not yet taken). */
  add(key: string, delta: A): void {
    let into = this.pending.get(key);
    if (into === undefined) {
      into = this.empty();
      this.pending.set(key, into);
    }
    this.merge(into, delta);
  }

  /**
   * The batches to write now: every unconfirmed one, and a new one for each key that has
   * deltas and no unconfirmed batch (a key with one waits until it is confirmed).
   */
  take(): Batch<D>[] {
    for (const [key, delta] of this.pending) {
      if (this.unconfirmed.has(key)) continue;
      this.unconfirmed.set(key, { key, seq: ++this.seq, delta });
      this.pending.delete(key);
    }
    return [...this.unconfirmed.values()];
  }

  /** The batch is in the store: it is not written again. */
  confirm(batch: Batch<D>): void {
    if (this.unconfirmed.get(batch.key) === batch) this.unconfirmed.delete(batch.key);
  }

  /** Batches taken and not confirmed, plus keys with deltas not yet taken. */
  get size(): number {
    return new Set([...this.pending.keys(), ...this.unconfirmed.keys()]).size;
  }
}
