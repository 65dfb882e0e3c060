// The manual clock's sleepers wake when the clock is stepped past their time, never before, and it says how many still wait.

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

describe('ManualClock.waiting', () => {
  it('counts the sleepers not yet woken, so a test sees a loop on this clock back at its wait', async () => {
    const clock = new ManualClock(0);
    let rounds = 0;
    const loop = (async () => {
      while (rounds < 3) {
        await clock.sleep(100);
        rounds++;
      }
    })();
    expect(clock.waiting()).toBe(1);
    clock.advance(100);
    expect(clock.waiting()).toBe(0);
    await expect.poll(() => clock.waiting()).toBe(1);
    expect(rounds).toBe(1);
    clock.advance(250);
    await expect.poll(() => clock.waiting()).toBe(1);
    expect(rounds).toBe(2);
    clock.advance(100);
    await loop;
    expect(clock.waiting()).toBe(0);
  });
});
