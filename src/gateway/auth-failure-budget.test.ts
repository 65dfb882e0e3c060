import { describe, expect, it } from 'vitest';
import { ManualClock } from '../core/clock.js';
import { AuthFailureBudget } from './auth-failure-budget.js';

const opts = { ratePerSecond: 2, burst: 3, delayMs: 1000, maxHeld: 2 };

describe('AuthFailureBudget', () => {
  it('answers the first failures at once, then holds them; the rate refills the budget', () => {
    const clock = new ManualClock(0);
    const budget = new AuthFailureBudget(opts, clock);
    expect([budget.delayFor('a'), budget.delayFor('a'), budget.delayFor('a')]).toEqual([0, 0, 0]);
    expect(budget.delayFor('a')).toBe(1000);
    budget.released('a');
    clock.advance(500); // one failure's worth at 2/s
    expect(budget.delayFor('a')).toBe(0);
    expect(budget.delayFor('a')).toBe(1000);
  });

  it('keeps addresses apart', () => {
    const budget = new AuthFailureBudget(opts, new ManualClock(0));
    for (let i = 0; i < 3; i++) budget.delayFor('a');
    expect(budget.delayFor('a')).toBe(1000);
    expect(budget.delayFor('b')).toBe(0);
  });

  it('holds at most maxHeld answers per address; past that they go at once', () => {
    const budget = new AuthFailureBudget(opts, new ManualClock(0));
    for (let i = 0; i < 3; i++) budget.delayFor('a');
    expect([budget.delayFor('a'), budget.delayFor('a'), budget.delayFor('a')]).toEqual([1000, 1000, 0]);
    budget.released('a');
    expect(budget.delayFor('a')).toBe(1000);
  });
});
