// decide() as tables over a fake clock: each scenario feeds one observation per second and
// checks the decisions, so every rule of docs/autoscaling.md is pinned without a timer — for
// every metric: concurrency from the gateway's samples, queue_depth and kv_cache from gauge
// readings through signals.ts, ttft from 5-second steps of first-token times.

import { describe, expect, it } from 'vitest';
import { STATS_STEP_MS, emptyStats, ttftBucket, type RevisionStep } from '../domain/revision-stats.js';
import {
  DECISION_REASONS,
  decide,
  initialState,
  type AutoscaleSpec,
  type AutoscaleState,
  type AutoscaleWindows,
  type ConcurrencySample,
  type Decision,
  type DecisionReason,
  type SignalFigures,
} from './decide.js';
import { readingOf, remember, signalFigures, type EngineReading, type SignalReading } from './signals.js';

const windows: AutoscaleWindows = { stableMs: 60_000, panicMs: 6_000, scaleToZeroGraceMs: 30_000 };
const spec = (o: Partial<AutoscaleSpec> = {}): AutoscaleSpec => ({ min: 1, max: 10, metric: 'concurrency', target: 2, cooldownMs: 30_000, ...o });

/** What the engines and the gateway say in one second, for the metrics other than concurrency. */
interface SecondSignals {
  /** Each ready replica's engine, given how many are ready. */
  engine?: (ready: number) => EngineReading | null;
  /** The flow-control queue. */
  queued?: number;
  /** First-token times of the second's streamed requests, ms. */
  ttft?: number[];
}

/** A run: concurrency (and the signals) per second from functions of the second, replicas follow decisions. */
class Run {
  now = 1_000_000;
  samples: ConcurrencySample[] = [];
  readings: SignalReading[] = [];
  steps: RevisionStep[] = [];
  state: AutoscaleState;
  decisions: Decision[] = [];
  ready: number;
  held = 0;
  starting = 0;
  /** The signals of second `i` of a step() call, given the replicas ready then. */
  signals: (i: number, ready: number) => SecondSignals = () => ({});

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
      const signal = this.observe(i);
      last = decide(this.s, windows, { samples: this.samples, held: this.held, ready: this.ready, starting: this.starting, ...(signal ? { signal } : {}) }, this.state, this.now);
      this.state = last.state;
      this.decisions.push(last);
      if (readyFollows) this.ready = last.desired;
      this.now += 1000;
    }
    return last;
  }

  /** What the autoscaler would read this second: a gauge reading kept in the history, the TTFT steps. */
  private observe(i: number): SignalFigures | undefined {
    if (this.s.metric === 'concurrency') return undefined;
    const said = this.signals(i, this.ready);
    const engines = Array.from({ length: this.ready }, () => said.engine?.(this.ready) ?? null);
    this.readings = remember(this.readings, readingOf(this.s.metric, engines, said.queued ?? 0, this.now), windows.stableMs);
    if (said.ttft && said.ttft.length > 0) {
      const start = this.now - (this.now % STATS_STEP_MS);
      let step = this.steps.find((x) => x.start === start);
      if (!step) {
        step = { start, ...emptyStats() };
        this.steps.push(step);
      }
      for (const ms of said.ttft) {
        step.requests++;
        step.ttft[ttftBucket(ms)]!++;
      }
    }
    return signalFigures(this.s.metric, this.readings, this.steps, this.now, windows, this.ready);
  }
}

const reasons = (run: Run): Set<DecisionReason> => new Set(run.decisions.map((d) => d.reason));

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

describe('decide on queue_depth', () => {
  const queue = (o: Partial<AutoscaleSpec> = {}) => spec({ metric: 'queue_depth', target: 5, ...o });
  /** `total` requests waiting over the engines of the ready replicas (spread evenly). */
  const waitingOf = (total: number) => (ready: number) => ({ waiting: total / ready, kvCachePercent: null });

  it("scales up when the engines' waiting queue passes the target while in-flight concurrency stays below its own target", () => {
    const run = new Run(queue(), 2);
    run.signals = () => ({ engine: waitingOf(12), queued: 2 });
    const first = run.step(1, () => 3);
    // 14 waiting over 2 replicas: 7 per replica against 5 → ceil(2 × 7 / 5) = 3.
    expect(first).toMatchObject({ reason: 'scale_up', desired: 3, panic: false, metric: 'queue_depth', target: 5, stableValue: 7 });
    run.step(120, () => 3);
    // The load per replica fell as replicas were added: no order on a stale figure.
    expect(run.state.desired).toBe(3);
    expect(run.decisions.every((d) => d.stableConcurrency <= 3)).toBe(true);
    // The same samples on concurrency with this target would never have gone above 1.
    const byConcurrency = new Run(spec({ target: 5 }), 2);
    expect(byConcurrency.step(121, () => 3).desired).toBe(1);
  });

  it.each([
    ['within the band above', 16.4, 3, 'steady'],
    ['within the band below', 13.6, 3, 'steady'],
    ['past the band', 17, 4, 'scale_up'],
  ] as const)('a 10 %% tolerance band keeps the current figure: %s', (_name, total, desired, reason) => {
    const run = new Run(queue(), 3);
    run.signals = () => ({ engine: waitingOf(total) });
    expect(run.step(1, () => 2)).toMatchObject({ desired, reason });
    expect(run.step(60, () => 2).desired).toBe(desired);
  });

  it('panics on a spike: up at once on the short window, no scale-down while it lasts', () => {
    const run = new Run(queue({ cooldownMs: 0 }), 1);
    let total = 2;
    run.signals = () => ({ engine: waitingOf(total) });
    run.step(30, () => 1);
    total = 40;
    expect(run.state.desired).toBe(1);
    const spike = run.step(1, () => 1);
    expect(spike).toMatchObject({ reason: 'panic', panic: true });
    run.step(6, () => 1);
    expect(run.state.desired).toBe(8);
    total = 0;
    expect(run.step(30, () => 1)).toMatchObject({ reason: 'hold_panic', desired: 8, panic: true });
    run.step(40, () => 1);
    expect(run.state.desired).toBeLessThan(8);
  });

  it('holds a scale-down for cooldown_period', () => {
    const run = new Run(queue({ cooldownMs: 30_000 }), 4);
    run.signals = (i) => ({ engine: waitingOf(i < 60 ? 20 : 5) });
    run.step(220, () => 2);
    const firstLower = run.decisions.findIndex((d, i) => i >= 60 && d.reason === 'hold_cooldown');
    const firstDown = run.decisions.findIndex((d, i) => i >= 60 && d.reason === 'scale_down');
    expect(firstLower).toBeGreaterThan(0);
    expect(firstDown - firstLower).toBeGreaterThanOrEqual(29);
    expect(run.state.desired).toBe(1);
  });

  it('goes to zero when idle (min 0), and held requests wake it', () => {
    const run = new Run(queue({ min: 0, max: 4, cooldownMs: 10_000 }), 1);
    run.signals = () => ({ engine: waitingOf(0) });
    run.step(10, () => 1);
    run.step(100, () => 0);
    expect(reasons(run)).toContain('scale_to_zero');
    expect(run.state.desired).toBe(0);
    run.step(30, () => 0);
    expect(run.state.desired).toBe(0);
    run.held = 12;
    expect(run.step(1, () => 0, false)).toMatchObject({ reason: 'activate', desired: 3 });
  });

  it("counts a revision's share of the gateway's queue: readingOf", () => {
    expect(readingOf('queue_depth', [{ waiting: 3, kvCachePercent: null }, null], 4, 12_345)).toEqual({ second: 12_000, ready: 2, total: 7 });
    expect(readingOf('queue_depth', [], 4, 12_345)).toEqual({ second: 12_000, ready: 0, total: null });
  });
});

describe('decide on kv_cache', () => {
  const kv = (o: Partial<AutoscaleSpec> = {}) => spec({ metric: 'kv_cache', target: 80, ...o });
  /** The KV cache a fixed load fills, spread over the ready replicas. */
  const kvOf = (totalPercent: number) => (ready: number) => ({ waiting: null, kvCachePercent: Math.min(100, totalPercent / ready) });

  it('scales up past the target while in-flight concurrency is low, and settles', () => {
    const run = new Run(kv(), 2);
    run.signals = () => ({ engine: kvOf(190) });
    const first = run.step(1, () => 1);
    expect(first).toMatchObject({ reason: 'scale_up', desired: 3, stableValue: 95, signal: 95 });
    run.step(120, () => 1);
    expect(run.state.desired).toBe(3);
  });

  it('the mean over the replicas that report it', () => {
    expect(readingOf('kv_cache', [{ waiting: null, kvCachePercent: 90 }, { waiting: 2, kvCachePercent: null }, { waiting: null, kvCachePercent: 70 }], 0, 5000)).toEqual({ second: 5000, ready: 3, total: 240 });
  });

  it('keeps the current figure within 10 % of the target', () => {
    const run = new Run(kv(), 2);
    run.signals = () => ({ engine: kvOf(2 * 86) });
    expect(run.step(20, () => 1)).toMatchObject({ reason: 'steady', desired: 2 });
  });

  it('never goes to zero, even at min 0 and idle for long', () => {
    const run = new Run(kv({ min: 0, cooldownMs: 0 }), 2);
    run.signals = () => ({ engine: kvOf(0) });
    run.step(400, () => 0);
    expect(run.decisions.every((d) => d.desired >= 1)).toBe(true);
    expect(run.state.desired).toBe(1);
    expect(reasons(run)).not.toContain('scale_to_zero');
  });

  it('no samples is no evidence: the figure stays under load, and drops to the floor only with no load at all', () => {
    const run = new Run(kv({ min: 0, cooldownMs: 10_000 }), 3);
    run.signals = () => ({ engine: () => ({ waiting: 4, kvCachePercent: null }) });
    const busy = run.step(120, () => 9);
    expect(busy).toMatchObject({ reason: 'hold_no_signal', desired: 3, stableValue: null, signal: null, wanted: null });
    expect(run.decisions.every((d) => d.desired === 3)).toBe(true);
    run.step(60, () => 0);
    expect(run.state.desired).toBe(3); // the stable window still saw load
    run.step(15, () => 0);
    expect(run.state.desired).toBe(1);
    expect(run.decisions.every((d) => d.desired >= 1)).toBe(true);
  });
});

describe('decide on ttft', () => {
  const ttft = (o: Partial<AutoscaleSpec> = {}) => spec({ metric: 'ttft', target: 500, ...o });

  it('scales up when the observed p90 passes the objective while in-flight concurrency is low', () => {
    const run = new Run(ttft(), 2);
    run.signals = () => ({ ttft: Array.from({ length: 10 }, () => 700) });
    const first = run.step(1, () => 1);
    // p90 of first tokens in (500, 750] ms is 725: ceil(2 × 725 / 500) = 3.
    expect(first).toMatchObject({ reason: 'scale_up', desired: 3, panic: false, stableValue: 725 });
  });

  it('scales on the p90, not the mean: a slow tenth decides', () => {
    const run = new Run(ttft(), 2);
    run.signals = () => ({ ttft: [...Array.from({ length: 8 }, () => 100), 1200, 1200] });
    const d = run.step(1, () => 1);
    expect(d.stableValue).toBeGreaterThan(1000);
    expect(d.desired).toBeGreaterThan(2);
  });

  it('panics on a spike of the short window', () => {
    const run = new Run(ttft({ cooldownMs: 0 }), 1);
    let ms = 200;
    run.signals = () => ({ ttft: [ms] });
    run.step(30, () => 1);
    expect(run.state.desired).toBe(1);
    ms = 4000;
    run.step(10, () => 1);
    expect(reasons(run)).toContain('panic');
    expect(run.state.desired).toBe(10);
  });

  it('keeps the current figure within 10 % of the objective', () => {
    const run = new Run(ttft(), 2);
    run.signals = () => ({ ttft: Array.from({ length: 10 }, () => 490) });
    // p90 in (300, 500] is 480: within 10 % of 500.
    expect(run.step(20, () => 1)).toMatchObject({ reason: 'steady', desired: 2 });
  });

  it('no first tokens (requests not streamed) is no evidence; idle goes to 1, never zero', () => {
    const run = new Run(ttft({ min: 0, cooldownMs: 5000 }), 2);
    run.signals = () => ({});
    expect(run.step(90, () => 4)).toMatchObject({ reason: 'hold_no_signal', desired: 2 });
    run.step(200, () => 0);
    expect(run.state.desired).toBe(1);
    expect(reasons(run)).not.toContain('scale_to_zero');
  });
});

describe('decide: one observation, every metric', () => {
  const figures = (value: number | null, replicas: number, panic = value): SignalFigures => ({ stable: { value, replicas }, panic: { value: panic, replicas } });
  const now = 1_000_000;
  const settled = (desired: number): AutoscaleState => initialState(now - windows.stableMs, desired);
  it.each([
    // metric, min, target, ready, current, figures, concurrency, → desired, reason
    ['concurrency: ceil(average / target)', 'concurrency', 1, 2, 3, 3, undefined, 7, 4, 'scale_up'],
    ['concurrency: a panic at twice the capacity', 'concurrency', 1, 2, 2, 2, undefined, 7, 4, 'panic'],
    ['queue_depth: ceil(replicas × value / target)', 'queue_depth', 1, 5, 3, 3, figures(7, 3), 1, 5, 'scale_up'],
    ['queue_depth: the replicas the value was measured over, not those ready now', 'queue_depth', 1, 5, 4, 4, figures(12, 2, 6), 1, 5, 'scale_up'],
    ['queue_depth: within the band', 'queue_depth', 1, 5, 2, 2, figures(5.4, 2), 1, 2, 'steady'],
    ['queue_depth: nothing ready to divide by is no evidence', 'queue_depth', 1, 5, 0, 2, figures(null, 0), 1, 2, 'hold_no_signal'],
    ['kv_cache: down when far below', 'kv_cache', 1, 80, 4, 4, figures(30, 4), 1, 2, 'scale_down'],
    ['kv_cache: min 0 still keeps one', 'kv_cache', 0, 80, 2, 2, figures(0, 2), 0, 1, 'scale_down'],
    ['kv_cache: no reading, no load', 'kv_cache', 1, 80, 3, 3, figures(null, 0), 0, 1, 'scale_down'],
    ['ttft: up past the objective', 'ttft', 1, 500, 2, 2, figures(900, 2, 900), 1, 4, 'panic'],
    ['ttft: no first token under load', 'ttft', 1, 500, 2, 2, figures(null, 2), 3, 2, 'hold_no_signal'],
  ] as const)('%s', (_name, metric, min, target, ready, current, signal, concurrency, desired, reason) => {
    const samples = Array.from({ length: 60 }, (_, i) => ({ second: now - (60 - i) * 1000, average: concurrency }));
    const d = decide(spec({ metric, min, target, cooldownMs: 0 }), windows, { samples, held: 0, ready, starting: 0, ...(signal ? { signal } : {}) }, settled(current), now);
    expect({ desired: d.desired, reason: d.reason, metric: d.metric, target: d.target }).toEqual({ desired, reason, metric, target });
  });

  it('every reason a decision gives is in DECISION_REASONS', () => {
    const all = new Set<DecisionReason>();
    for (const metric of ['concurrency', 'queue_depth', 'kv_cache', 'ttft'] as const) {
      const run = new Run(spec({ metric, min: 0, max: 4, cooldownMs: 5000, target: metric === 'ttft' ? 500 : metric === 'kv_cache' ? 80 : 2 }), 1);
      run.signals = (i) => ({ engine: () => ({ waiting: i % 5, kvCachePercent: (i % 4) * 30 }), ttft: i % 3 === 0 ? [i * 40] : [] });
      run.step(30, (i) => (i % 7) * 2);
      run.step(150, () => 0);
      for (const r of reasons(run)) all.add(r);
    }
    for (const r of all) expect(DECISION_REASONS).toContain(r);
    expect(new Set(DECISION_REASONS).size).toBe(DECISION_REASONS.length);
  });
});
