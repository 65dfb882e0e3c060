// decide() as tables over a fake clock: each scenario feeds one observation per second and
// checks the decisions, so every rule of docs/autoscaling.md is pinned without a timer.

import { describe, expect, it } from 'vitest';
import { decide, initialState, type AutoscaleSpec, type AutoscaleState, type AutoscaleWindows, type ConcurrencySample, type Decision } from './decide.js';

const windows: AutoscaleWindows = { stableMs: 60_000, panicMs: 6_000, scaleToZeroGraceMs: 30_000 };
const spec = (o: Partial<AutoscaleSpec> = {}): AutoscaleSpec => ({ min: 1, max: 10, target: 2, cooldownMs: 30_000, ...o });

/** A run: concurrency per second from a function of the second, replicas follow decisions. */
class Run {
  now = 1_000_000;
  samples: ConcurrencySample[] = [];
  state: AutoscaleState;
  decisions: Decision[] = [];
  ready: number;
  held = 0;
  starting = 0;

  constructor(
    private readonly s: AutoscaleSpec,
    start: number,
    /** Started this long ago (the restart hold is over by default). */
    age = windows.stableMs,
  ) {
    this.ready = start;
    this.state = initialState(this.now - age, start);
  }

  /** Advance `seconds`, each with concurrency `c(i)`; replicas are ready at once unless told. */
  step(seconds: number, c: (i: number) => number, readyFollows = true): Decision {
    let last!: Decision;
    for (let i = 0; i < seconds; i++) {
      this.samples.push({ second: this.now - 1000, average: c(i) });
      if (this.samples.length > 180) this.samples.shift();
      last = decide(this.s, windows, { samples: this.samples, held: this.held, ready: this.ready, starting: this.starting }, this.state, this.now);
      this.state = last.state;
      this.decisions.push(last);
      if (readyFollows) this.ready = last.desired;
      this.now += 1000;
    }
    return last;
  }
}

describe('decide', () => {
  it('a load step: desired = ceil(average / target), reached as the stable window fills', () => {
    const run = new Run(spec(), 2);
    run.step(60, () => 4);
    expect(run.state.desired).toBe(2);
    const d = run.step(60, () => 6); // wants 3 against 2: a step, not a burst
    expect(d.desired).toBe(3);
    expect(run.decisions.filter((x) => x.reason === 'scale_up')).toHaveLength(1);
    expect(run.decisions.some((x) => x.panic)).toBe(false);
    expect(d.stableConcurrency).toBeCloseTo(6);
  });

  it('a burst twice the capacity panics: scale up at once, no scale-down while panicking', () => {
    const run = new Run(spec({ cooldownMs: 0 }), 1);
    run.step(30, () => 1);
    const burst = run.step(1, () => 20);
    expect(burst).toMatchObject({ reason: 'panic', panic: true });
    expect(burst.desired).toBeGreaterThanOrEqual(2);
    run.step(5, () => 20);
    const peak = run.state.desired;
    expect(peak).toBe(10);
    // The burst ends: no scale-down for a stable window after the last trigger.
    const calm = run.step(30, () => 0);
    expect(calm).toMatchObject({ reason: 'hold_panic', desired: peak, panic: true });
    run.step(40, () => 0);
    expect(run.state.desired).toBeLessThan(peak);
    expect(run.decisions.at(-1)?.panic).toBe(false);
  });

  it('cooldown holds a scale-down until the lower recommendation held for cooldown_period', () => {
    const run = new Run(spec({ cooldownMs: 30_000 }), 4);
    run.step(60, () => 8);
    expect(run.state.desired).toBe(4);
    run.step(100, () => 2); // the stable average falls to 2 per replica over a window
    const firstLower = run.decisions.findIndex((d, i) => i >= 60 && d.reason === 'hold_cooldown');
    const firstDown = run.decisions.findIndex((d, i) => i >= 60 && d.reason === 'scale_down');
    expect(firstLower).toBeGreaterThan(0);
    expect(firstDown).toBeGreaterThan(firstLower);
    // The down step came at least cooldown_period after the first lower recommendation.
    expect(firstDown - firstLower).toBeGreaterThanOrEqual(29);
    expect(run.state.desired).toBe(1);
  });

  it('clamps to [min, max]', () => {
    const high = new Run(spec({ min: 2, max: 3 }), 2);
    expect(high.step(61, () => 50).desired).toBe(3);
    const low = new Run(spec({ min: 2, max: 3, cooldownMs: 0 }), 3);
    expect(low.step(80, () => 0).desired).toBe(2);
  });

  it('no target means a fixed size of min', () => {
    const run = new Run(spec({ target: null, min: 2, max: 2 }), 2);
    expect(run.step(5, () => 40)).toMatchObject({ desired: 2, reason: 'fixed_size' });
  });

  it('scale to zero only after cooldown_period plus the grace without traffic; held requests activate at once', () => {
    const run = new Run(spec({ min: 0, max: 3, cooldownMs: 10_000 }), 1);
    run.step(10, () => 1);
    run.step(60, () => 0);
    const zeroAt = run.decisions.findIndex((d) => d.reason === 'scale_to_zero');
    expect(zeroAt).toBe(-1); // 60 s idle: the stable window is only just empty
    run.step(40, () => 0);
    const zero = run.decisions.findIndex((d) => d.reason === 'scale_to_zero');
    expect(zero).toBeGreaterThan(0);
    // Idle at least cooldown (10 s) + grace (30 s) and a stable window (60 s) before it.
    expect(zero - 10).toBeGreaterThanOrEqual(60);
    expect(run.state.desired).toBe(0);

    run.held = 5;
    const activation = run.step(1, () => 0, false);
    expect(activation).toMatchObject({ reason: 'activate', desired: 3 });
  });

  it('after a restart, no scale-down for one stable window', () => {
    const run = new Run(spec({ cooldownMs: 0 }), 5, 0);
    const early = run.step(30, () => 0);
    expect(early).toMatchObject({ reason: 'hold_restart', desired: 5 });
    run.step(40, () => 0);
    expect(run.state.desired).toBe(1);
  });

  it('no scale-down while nothing is ready and replicas are still starting', () => {
    const run = new Run(spec({ min: 0, max: 3, cooldownMs: 0 }), 1);
    run.ready = 0;
    run.starting = 1;
    expect(run.step(120, () => 0, false)).toMatchObject({ reason: 'hold_starting', desired: 1 });
  });

  it('replicas still starting count as capacity: no repeated panic while they come up', () => {
    const run = new Run(spec({ cooldownMs: 0 }), 2);
    run.step(10, () => 4);
    run.starting = 2;
    const d = run.step(1, () => 7, false); // wants 4 against ready 2 + starting 2
    expect(d.reason).not.toBe('panic');
  });

  it('every decision names a reason from the bounded set', () => {
    const run = new Run(spec({ min: 0, max: 4, cooldownMs: 5000 }), 1);
    run.step(20, (i) => (i % 7) * 2);
    run.step(120, () => 0);
    for (const d of run.decisions) expect(typeof d.reason).toBe('string');
    expect(new Set(run.decisions.map((d) => d.reason)).size).toBeGreaterThan(2);
  });
});
