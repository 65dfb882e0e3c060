import { describe, expect, it } from 'vitest';
import type { ReplicaSignals } from '../balancer/prefix-aware.js';
import { ReplicaCapacity } from './replica-capacity.js';

function rig() {
  const inflight = new Map<number, number>();
  const limits = new Map<number, number>();
  const signals = new Map<number, ReplicaSignals>();
  const capacity = new ReplicaCapacity({
    inflight: (id) => inflight.get(id) ?? 0,
    limit: (id) => limits.get(id) ?? Infinity,
    signals: (id) => signals.get(id) ?? null,
    prefillAheadMs: () => 0,
  });
  return { capacity, inflight, limits, signals };
}

describe('ReplicaCapacity', () => {
  it('a replica nothing is known of always has room', () => {
    const r = rig();
    r.inflight.set(1, 500);
    expect(r.capacity.room(1)).toBeGreaterThan(0);
  });

  it('is saturated at the latency model’s learnt limit, without any engine metric', () => {
    const r = rig();
    r.limits.set(1, 4);
    r.inflight.set(1, 3);
    expect(r.capacity.room(1)).toBeGreaterThan(0);
    r.inflight.set(1, 4);
    expect(r.capacity.room(1)).toBeLessThanOrEqual(0);
  });

  it('is saturated at the batch the engine ran when it said it queued, and has room again as soon as requests end', () => {
    const r = rig();
    r.signals.set(1, { running: 8, waiting: 2, kvUsage: null });
    r.inflight.set(1, 10);
    expect(r.capacity.room(1)).toBeLessThanOrEqual(0);
    // The scrape is stale but the gateway's count is not: two ended, below the batch of 8.
    r.inflight.set(1, 7);
    expect(r.capacity.room(1)).toBeGreaterThan(0);
    // Signals gone (stale, or a replica without metrics): the remembered batch still counts.
    r.signals.delete(1);
    r.inflight.set(1, 8);
    expect(r.capacity.room(1)).toBeLessThanOrEqual(0);
  });

  it('raises the remembered batch when the engine later runs more without queueing', () => {
    const r = rig();
    r.signals.set(1, { running: 4, waiting: 1, kvUsage: null });
    expect(r.capacity.engineLimit(1)).toBe(4);
    // A full batch with none waiting says nothing new.
    r.signals.set(1, { running: 4, waiting: 0, kvUsage: null });
    expect(r.capacity.engineLimit(1)).toBe(4);
    r.signals.set(1, { running: 6, waiting: 0, kvUsage: null });
    expect(r.capacity.engineLimit(1)).toBe(6);
    r.capacity.retain(new Set());
    r.signals.delete(1);
    expect(r.capacity.engineLimit(1)).toBe(Infinity);
  });
});
