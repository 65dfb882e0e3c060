// How a decision that moves the desired count reads as an event: which reason (up, down, to
// zero), and the figures — concurrency, window, target, from → to — with the bound, the
// cooldown or the held requests that decided it; nothing when the count stays.

import { describe, expect, it } from 'vitest';
import { decide, initialState, type AutoscaleSpec, type AutoscaleWindows, type Decision, type DecisionReason } from './decide.js';
import { decisionEvent } from './decision-event.js';

const windows: AutoscaleWindows = { stableMs: 60_000, panicMs: 6_000, scaleToZeroGraceMs: 30_000 };
const spec = (o: Partial<AutoscaleSpec> = {}): AutoscaleSpec => ({ min: 1, max: 5, target: 2, cooldownMs: 300_000, ...o });
const decision = (desired: number, reason: DecisionReason, stable = 0, panic = 0): Decision => ({
  desired,
  reason,
  panic: reason === 'panic',
  stableConcurrency: stable,
  panicConcurrency: panic,
  state: initialState(0, desired),
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
});
