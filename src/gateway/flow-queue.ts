// Owns the order in which a deployment's waiting requests leave its flow-control queue: one
// band per priority class, strictly by class (every critical request before any standard one),
// and inside a band fairly between credentials. Fairness is a virtual token counter per
// credential (AIBrix's VTC is the model): the waiting credential that has been served the
// fewest tokens goes next, so a credential that floods gets its share and no more while others
// wait; a credential that (re)joins a band starts at the lowest count among those waiting, so
// an idle one cannot bank credit and then take the replicas over. A full queue makes room by
// shedding the newest request of the lowest class below the newcomer's (sheddable first).
// Pure data structure: no timers, no I/O; flow-control.ts drives it.

import { PRIORITIES, priorityRank, type Priority } from '../domain/priority.js';

/** One waiting request as the queue links it; flow-control.ts adds what it needs to answer it. */
export interface QueueEntry {
  readonly priority: Priority;
  /** The credential's public identity (authenticate phase): the unit of fairness. */
  readonly credential: string;
  /** Tokens it is estimated to cost, charged to its credential when it leaves the queue. */
  readonly cost: number;
  /** Links inside its credential's FIFO; owned by the queue. */
  prev: QueueEntry | null;
  next: QueueEntry | null;
  /** Whether the queue holds it now. */
  queued: boolean;
}

class CredentialFifo {
  head: QueueEntry | null = null;
  tail: QueueEntry | null = null;
  count = 0;
  constructor(public served: number) {}
}

class Band {
  readonly fifos = new Map<string, CredentialFifo>();
  count = 0;

  /**
   * The credential served least, among those waiting; ties go to the one that joined last — a
   * credential that rejoins level with a flooding one goes before it, not after.
   */
  fairest(): CredentialFifo | null {
    let best: CredentialFifo | null = null;
    for (const fifo of this.fifos.values()) if (best === null || fifo.served <= best.served) best = fifo;
    return best;
  }

  /** Whoever joins starts level with the least served of those already waiting. */
  fifoFor(credential: string): CredentialFifo {
    let fifo = this.fifos.get(credential);
    if (fifo === undefined) {
      const least = this.fairest();
      fifo = new CredentialFifo(least === null ? 0 : least.served);
      this.fifos.set(credential, fifo);
    }
    return fifo;
  }
}

export class FlowQueue {
  private readonly bands: readonly Band[] = PRIORITIES.map(() => new Band());
  private total = 0;

  get size(): number {
    return this.total;
  }

  sizeOf(priority: Priority): number {
    return this.bands[priorityRank(priority)]!.count;
  }

  push(entry: QueueEntry): void {
    const band = this.bands[priorityRank(entry.priority)]!;
    const fifo = band.fifoFor(entry.credential);
    entry.prev = fifo.tail;
    entry.next = null;
    if (fifo.tail) fifo.tail.next = entry;
    else fifo.head = entry;
    fifo.tail = entry;
    fifo.count++;
    band.count++;
    this.total++;
    entry.queued = true;
  }

  /** The class of the request pop() would take; null: empty. */
  peek(): Priority | null {
    for (let rank = 0; rank < this.bands.length; rank++) if (this.bands[rank]!.count > 0) return PRIORITIES[rank]!;
    return null;
  }

  /** The next request to dispatch, taken out and its cost charged to its credential; null: empty. */
  pop(): QueueEntry | null {
    for (const band of this.bands) {
      if (band.count === 0) continue;
      const fifo = band.fairest()!;
      const entry = fifo.head!;
      fifo.served += entry.cost;
      this.unlink(band, fifo, entry);
      return entry;
    }
    return null;
  }

  /** Takes a request out (its client left, or its wait ran out); false when it was not queued. */
  remove(entry: QueueEntry): boolean {
    if (!entry.queued) return false;
    const band = this.bands[priorityRank(entry.priority)]!;
    this.unlink(band, band.fifos.get(entry.credential)!, entry);
    return true;
  }

  /**
   * Room for a request of class `priority` in a full queue: the newest request of the lowest
   * class below it — of the credential served most in that band — taken out to be shed; null
   * when every waiting request is of its class or higher.
   */
  displaceFor(priority: Priority): QueueEntry | null {
    for (let rank = this.bands.length - 1; rank > priorityRank(priority); rank--) {
      const band = this.bands[rank]!;
      if (band.count === 0) continue;
      let most: CredentialFifo | null = null;
      for (const fifo of band.fifos.values()) if (most === null || fifo.served + fifo.count > most.served + most.count) most = fifo;
      const entry = most!.tail!;
      this.unlink(band, most!, entry);
      return entry;
    }
    return null;
  }

  /** Every waiting request, taken out (the deployment can no longer serve them). */
  drain(): QueueEntry[] {
    const out: QueueEntry[] = [];
    for (let e = this.pop(); e !== null; e = this.pop()) out.push(e);
    return out;
  }

  private unlink(band: Band, fifo: CredentialFifo, entry: QueueEntry): void {
    if (entry.prev) entry.prev.next = entry.next;
    else fifo.head = entry.next;
    if (entry.next) entry.next.prev = entry.prev;
    else fifo.tail = entry.prev;
    entry.prev = entry.next = null;
    entry.queued = false;
    fifo.count--;
    band.count--;
    this.total--;
    // An emptied credential leaves the band: its count would otherwise be credit it could bank.
    if (fifo.count === 0) band.fifos.delete(entry.credential);
  }
}
