// Owns cutting long work into slices: a loop over many items calls `yield()` after each one,
// and once a slice has run `sliceMs` the loop gives the event loop back (setImmediate) before
// it goes on, so timers due meanwhile fire on time — the controller's lease renewal above all.
// A store whose reads resolve at once (the file store's) never gives the loop back on its own.
// The slice is measured on the process's monotonic clock, not an injected Clock: it is about
// how long the thread was held, never about what time it is for a rule.

import { setImmediate as nextTurn } from 'node:timers/promises';

export class TimeSlices {
  private since = performance.now();

  constructor(private readonly sliceMs = 10) {}

  /** Gives the event loop back if this slice has run long enough; else resolves at once. */
  async yield(): Promise<void> {
    if (performance.now() - this.since < this.sliceMs) return;
    await nextTurn();
    this.since = performance.now();
  }
}
