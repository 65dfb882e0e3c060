// Owns the local runtime's checks of what its replicas on the host's network listen on: each
// replica is checked when it becomes ready and then every `everyMs`, and every check due at the
// same moment shares one read of the process table and one read of each network namespace's
// socket table (listening-sockets.ts). Checking each replica on its own read the whole process
// table once per replica, a cost that grew with replicas × processes.

import type { ListeningAddress } from './listening-sockets.js';
import { listeningAddressesOf } from './listening-sockets.js';
import { ProcessTable } from './process-tree.js';

/** One replica as the checks see it. */
export interface ListenTarget {
  /** Its processes, found in the table read for this check; empty when nothing runs now. */
  pids(table: ProcessTable): number[];
  /** What they listen on, as this check found. */
  found(addresses: ListeningAddress[]): void;
}

export class ListenChecks {
  private readonly targets = new Set<ListenTarget>();
  /** Asked for a check now (just ready): done together in the next turn of the event loop. */
  private readonly asked = new Set<ListenTarget>();
  private timer: NodeJS.Timeout | null = null;
  private immediate: NodeJS.Immediate | null = null;

  constructor(private readonly everyMs: number) {}

  /** Checks `target` soon (with every other asking now), then every `everyMs` until removed. */
  add(target: ListenTarget): void {
    this.targets.add(target);
    this.asked.add(target);
    this.immediate ??= setImmediate(() => {
      this.immediate = null;
      const due = [...this.asked];
      this.asked.clear();
      this.check(due);
    });
    if (this.timer === null) {
      this.timer = setInterval(() => this.check([...this.targets]), this.everyMs);
      this.timer.unref();
    }
  }

  remove(target: ListenTarget): void {
    this.targets.delete(target);
    this.asked.delete(target);
    if (this.targets.size === 0 && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  private check(due: readonly ListenTarget[]): void {
    const live = due.filter((t) => this.targets.has(t));
    if (live.length === 0) return;
    const table = ProcessTable.read();
    const groups = new Map<ListenTarget, number[]>();
    for (const t of live) {
      const pids = t.pids(table);
      if (pids.length > 0) groups.set(t, pids);
    }
    for (const [t, addresses] of listeningAddressesOf(groups)) t.found(addresses);
  }
}
