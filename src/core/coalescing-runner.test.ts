import { describe, expect, it } from 'vitest';
import { CoalescingRunner } from './coalescing-runner.js';

describe('CoalescingRunner', () => {
  it('runs one at a time and folds triggers during a run into one more run', async () => {
    let runs = 0;
    let active = 0;
    let most = 0;
    let open: () => void = () => {};
    const gate = new Promise<void>((r) => (open = r));
    const runner = new CoalescingRunner(async () => {
      runs++;
      active++;
      most = Math.max(most, active);
      await gate; // the first run is still going while the other triggers arrive
      active--;
    }, () => {});
    runner.trigger();
    runner.trigger();
    runner.trigger();
    expect(runs).toBe(1);
    open();
    await runner.settled();
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

  it('settled() waits for the run in progress and the one folded after it', async () => {
    const order: string[] = [];
    let release: () => void = () => {};
    let runs = 0;
    const runner = new CoalescingRunner(async () => {
      const n = ++runs;
      order.push(`start ${n}`);
      if (n === 1) await new Promise<void>((r) => (release = r));
      order.push(`end ${n}`);
    }, () => {});
    runner.trigger();
    runner.trigger(); // folded: one more run after the first
    const settled = runner.settled().then(() => order.push('settled'));
    release();
    await settled;
    expect(order).toEqual(['start 1', 'end 1', 'start 2', 'end 2', 'settled']);
    await runner.settled(); // idle: at once
  });
});
