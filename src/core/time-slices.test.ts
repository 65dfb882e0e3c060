// TimeSlices gives the event loop back once a slice has run long enough: a timer due while a
// loop of synchronous work runs fires between two slices, not after the loop.

import { describe, expect, it } from 'vitest';
import { TimeSlices } from './time-slices.js';

/** Holds the thread for `ms` (the work a slice is made of). */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('TimeSlices', () => {
  it('lets a timer due during a long loop fire before the loop ends', async () => {
    let fired = -1;
    let done = 0;
    const timer = setInterval(() => {
      if (fired < 0) fired = done;
    }, 5);
    try {
      const slices = new TimeSlices(10);
      for (let i = 0; i < 100; i++) {
        busy(1);
        done++;
        await slices.yield();
      }
    } finally {
      clearInterval(timer);
    }
    expect(fired).toBeGreaterThan(0);
    expect(fired).toBeLessThan(100);
  });

  it('does not give the loop back within a slice', async () => {
    let ran = false;
    const immediate = setImmediate(() => (ran = true));
    const slices = new TimeSlices(60_000);
    for (let i = 0; i < 10; i++) await slices.yield();
    expect(ran).toBe(false);
    clearImmediate(immediate);
  });
});
