// The manual clock's sleepers wake when the clock is stepped past their time, never before.

import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.js';

describe('ManualClock.sleep', () => {
  it('wakes each sleeper once the clock passes its time, in any number of steps', async () => {
    const clock = new ManualClock(1000);
    const woke: string[] = [];
    void clock.sleep(100).then(() => woke.push('100'));
    void clock.sleep(250).then(() => woke.push('250'));
    await clock.sleep(0);
    clock.advance(99);
    await Promise.resolve();
    expect(woke).toEqual([]);
    clock.advance(1);
    await Promise.resolve();
    expect(woke).toEqual(['100']);
    clock.set(2000);
    await Promise.resolve();
    expect(woke).toEqual(['100', '250']);
  });
});
