import { describe, expect, it } from 'vitest';
import { CoalescingRunner } from './coalescing-runner.js';

describe('CoalescingRunner', () => {
  it('runs one at a time and folds triggers during a run into one more run', async () => {
    let runs = 0;
    let active = 0;
    let most = 0;
    const runner = new CoalescingRunner(async () => {
      runs++;
      active++;
      most = Math.max(most, active);
      await new Promise((r) => setTimeout(r, 20));
      active--;
    }, () => {});
    runner.trigger();
    runner.trigger();
    runner.trigger();
    await runner.current();
    await new Promise((r) => setTimeout(r, 5));
    await runner.current();
    expect(runs).toBe(2);
    expect(most).toBe(1);
  });

  it('reports a failed run and keeps working', async () => {
    const errors: string[] = [];
    let calls = 0;
    const runner = new CoalescingRunner(async () => {
      calls++;
      if (calls === 1) throw new Error('boom');
    }, (err) => errors.push(err.message));
    runner.trigger();
    await runner.current();
    runner.trigger();
    await runner.current();
    expect(errors).toEqual(['boom']);
    expect(calls).toBe(2);
  });
});
