import { describe, expect, it } from 'vitest';
import { ManualClock } from '../core/clock.js';
import { ReplicaHealth } from './replica-health.js';

describe('replica ejection', () => {
  it('ejects after consecutive failures, for twice as long each time, and a success resets it', () => {
    const clock = new ManualClock(0);
    const h = new ReplicaHealth({ threshold: 3, baseMs: 1000, maxMs: 3000 }, clock);
    expect([h.failure(1), h.failure(1), h.failure(1)]).toEqual([false, false, true]);
    expect(h.isEjected(1)).toBe(true);
    clock.advance(1000);
    expect(h.isEjected(1)).toBe(false); // back for a probe
    h.failure(1);
    h.failure(1);
    expect(h.failure(1)).toBe(true);
    clock.advance(1999);
    expect(h.isEjected(1)).toBe(true); // second ejection: 2 s
    clock.advance(1);
    for (let i = 0; i < 3; i++) h.failure(1);
    clock.advance(2999);
    expect(h.isEjected(1)).toBe(true); // capped at 3 s, not 4
    clock.advance(1);
    expect(h.isEjected(1)).toBe(false);
    h.failure(1);
    h.success(1);
    h.failure(1);
    h.failure(1);
    expect(h.isEjected(1)).toBe(false); // the success broke the run
  });

  it('forgets replicas that left', () => {
    const h = new ReplicaHealth({ threshold: 1, baseMs: 1000, maxMs: 1000 }, new ManualClock());
    h.failure(5);
    h.retain(new Set([6]));
    expect(h.isEjected(5)).toBe(false);
  });
});
