// How a decision that moves the desired count reads as an event: which reason (up, down, to
// zero), and the figures — the signal and its value, window, target, from → to, the revision
// in a split — with the bound, the cooldown or the held requests that decided it; nothing
// when the count stays.

import { describe, expect, it } from 'vitest';
import type { AutoscalingMetric } from '../domain/autoscaling-signal.js';
import { decide, initialState, type AutoscaleSpec, type AutoscaleWindows, type Decision, type DecisionReason } from './decide.js';
import { decisionEvent } from './decision-event.js';

const windows: AutoscaleWindows = { stableMs: 60_000, panicMs: 6_000, scaleToZeroGraceMs: 30_000 };
const spec = (o: Partial<AutoscaleSpec> = {}): AutoscaleSpec => ({ min: 1, max: 5, metric: 'concurrency', target: 2, cooldownMs: 300_000, ...o });
/** A concurrency decision as decide() makes it: `wanted` from the figure of the window that decided. */
const decision = (desired: number, reason: DecisionReason, stable = 0, panic = 0): Decision => ({
  desired,
  reason,
  panic: reason === 'panic',
  stableConcurrency: stable,
  panicConcurrency: panic,
  metric: 'concurrency',
  target: 2,
  stableValue: stable,
  panicValue: panic,
  wanted: Math.ceil((reason === 'panic' ? panic : stable) / 2),
  signal: stable,
  state: initialState(0, desired),
});
/** A decision on another metric: its figures over the stable and panic windows, and what they asked for. */
const signalDecision = (metric: AutoscalingMetric, desired: number, reason: DecisionReason, stableValue: number | null, panicValue: number | null, wanted: number | null, concurrency = 1): Decision => ({
  ...decision(desired, reason, concurrency, concurrency),
  metric,
  stableValue,
  panicValue,
  wanted,
  signal: stableValue,
});

describe('decisionEvent', () => {
  it.each([
    ['scale up on the stable window', 1, decision(3, 'scale_up', 5.5), spec(), 0, 'Replica', 'ScaledUp', 'desired replicas 1 → 3: concurrency 5.5 over the 60 s stable window, target 2 per replica'],
    [
      'panic on the short window',
      1,
      decision(4, 'panic', 2, 7.333),
      spec(),
      0,
      'Replica',
      'ScaledUp',
      'desired replicas 1 → 4: concurrency 7.33 over the 6 s panic window, target 2 per replica (panic mode: up at once, no scale-down while it lasts)',
    ],
    ['capped by max_replicas', 2, decision(5, 'scale_up', 30), spec(), 0, 'Replica', 'ScaledUp', 'desired replicas 2 → 5: concurrency 30 over the 60 s stable window, target 2 per replica, at most max_replicas (5)'],
    [
      'down after the cooldown',
      4,
      decision(2, 'scale_down', 3.1),
      spec(),
      0,
      'Worker',
      'ScaledDown',
      'desired Worker replicas 4 → 2: concurrency 3.1 over the 60 s stable window, target 2 per replica, lower for the whole cooldown_period (300 s)',
    ],
    [
      'to zero when idle',
      1,
      decision(0, 'scale_to_zero'),
      spec({ min: 0 }),
      0,
      'Replica',
      'ScaledToZero',
      'desired replicas 1 → 0: no request for 330 s (cooldown_period 300 s and a 30 s grace); the next request wakes it',
    ],
    ['from zero for held requests', 0, decision(2, 'activate', 3), spec({ min: 0 }), 3, 'Replica', 'ScaledUp', 'desired replicas 0 → 2: 3 requests held with no replica to serve them, target 2 per replica (scale from zero)'],
    ['no target: the minimum', 1, decision(3, 'fixed_size'), spec({ min: 3, target: null }), 0, 'Replica', 'ScaledUp', 'desired replicas 1 → 3: no concurrency target, so min_replicas (3)'],
  ] as const)('%s', (_name, from, d, s, held, component, reason, message) => {
    expect(decisionEvent(from, d, s, windows, held, component)).toEqual({ type: 'normal', reason, message });
  });

  it('says nothing when the count stays', () => {
    expect(decisionEvent(2, decision(2, 'hold_cooldown', 0.5), spec(), windows, 0, 'Replica')).toBeNull();
  });

  it('reads a real decision: a raised minimum', () => {
    const d = decide(spec({ min: 3 }), windows, { samples: [], held: 0, ready: 1, starting: 0 }, initialState(0, 1), 1000);
    expect(decisionEvent(1, d, spec({ min: 3 }), windows, 0, 'Replica')?.message).toBe(
      'desired replicas 1 → 3: concurrency 0 over the 60 s stable window, target 2 per replica, at least min_replicas (3)',
    );
  });

  it.each([
    [
      'queue_depth in panic',
      1,
      signalDecision('queue_depth', 3, 'panic', 4, 12.4, 3),
      spec({ metric: 'queue_depth', target: 5 }),
      'desired replicas 1 → 3: queue_depth 12.4 waiting requests per replica over the 6 s panic window, target 5 (panic mode: up at once, no scale-down while it lasts)',
    ],
    ['kv_cache up', 2, signalDecision('kv_cache', 3, 'scale_up', 95, 95, 3), spec({ metric: 'kv_cache', target: 80 }), 'desired replicas 2 → 3: kv_cache 95 percent of KV cache in use over the 60 s stable window, target 80'],
    [
      'ttft capped',
      2,
      signalDecision('ttft', 5, 'scale_up', 2400, 2400, 10),
      spec({ metric: 'ttft', target: 500 }),
      'desired replicas 2 → 5: ttft 2400 ms p90 time to first token over the 60 s stable window, target 500, at most max_replicas (5)',
    ],
    [
      'kv_cache down to one at min 0',
      3,
      signalDecision('kv_cache', 1, 'scale_down', 5, 5, 0),
      spec({ metric: 'kv_cache', target: 80, min: 0 }),
      'desired replicas 3 → 1: kv_cache 5 percent of KV cache in use over the 60 s stable window, target 80, at least 1 (kv_cache never scales to zero), lower for the whole cooldown_period (300 s)',
    ],
    [
      'ttft with no reading and no load',
      3,
      signalDecision('ttft', 1, 'scale_down', null, null, null, 0),
      spec({ metric: 'ttft', target: 500 }),
      'desired replicas 3 → 1: no ttft reading and no request over the 60 s stable window, at least min_replicas (1), lower for the whole cooldown_period (300 s)',
    ],
    [
      'queue_depth from zero',
      0,
      { ...signalDecision('queue_depth', 2, 'activate', null, null, 2), stableConcurrency: 7 },
      spec({ metric: 'queue_depth', target: 5, min: 0 }),
      'desired replicas 0 → 2: 7 requests held with no replica to serve them, target 5 waiting requests per replica (scale from zero)',
    ],
    ['no target on kv_cache', 1, signalDecision('kv_cache', 2, 'fixed_size', null, null, null), spec({ metric: 'kv_cache', target: null, min: 2 }), 'desired replicas 1 → 2: no kv_cache target, so min_replicas (2)'],
  ] as const)('says the signal: %s', (name, from, d, s, message) => {
    const held = name === 'queue_depth from zero' ? 7 : 0;
    expect(decisionEvent(from, d, s, windows, held, 'Replica')).toEqual({ type: 'normal', reason: from < d.desired ? 'ScaledUp' : 'ScaledDown', message });
  });

  it('names the revision of a split', () => {
    const d = signalDecision('queue_depth', 3, 'panic', 4, 12.4, 3);
    expect(decisionEvent(1, d, spec({ metric: 'queue_depth', target: 5 }), windows, 0, 'Replica', 4)?.message).toMatch(
      /^desired replicas 1 → 3 for revision 4: queue_depth 12\.4 waiting requests per replica over the 6 s panic window, target 5/,
    );
    expect(decisionEvent(2, decision(1, 'scale_down', 1.5), spec(), windows, 0, 'Worker', 7)?.message).toMatch(/^desired Worker replicas 2 → 1 for revision 7: concurrency 1\.5 over/);
  });

  it('reads a real decision on queue_depth', () => {
    const s = spec({ metric: 'queue_depth', target: 5 });
    const d = decide(s, windows, { samples: [], held: 0, ready: 1, starting: 0, signal: { stable: { value: 9, replicas: 1 }, panic: { value: 9, replicas: 1 } } }, initialState(0, 1), 70_000);
    expect(decisionEvent(1, d, s, windows, 0, 'Replica')?.message).toBe(
      'desired replicas 1 → 2: queue_depth 9 waiting requests per replica over the 6 s panic window, target 5 (panic mode: up at once, no scale-down while it lasts)',
    );
  });
});
