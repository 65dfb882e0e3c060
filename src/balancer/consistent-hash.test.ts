import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConsistentHashSelector } from './consistent-hash.js';
import type { LoadView, ReplicaRef } from './selector.js';
import { DEFAULTS } from '../config/defaults.js';

const replicas = (ids: number[]): ReplicaRef[] => ids.map((id) => ({ id, address: `10.0.0.${id}:8000` }));
const idle: LoadView = { inflight: () => 0 };
const keys = Array.from({ length: 10_000 }, () => randomUUID());
/** The gateway's default bounded-load factor (--affinity-load-factor). */
const C = { loadFactor: DEFAULTS.gateway.loadFactor };

class Loads implements LoadView {
  readonly counts = new Map<number, number>();
  inflight(id: number): number {
    return this.counts.get(id) ?? 0;
  }
  add(id: number): void {
    this.counts.set(id, this.inflight(id) + 1);
  }
}

const owners = (s: ConsistentHashSelector, set: ReplicaRef[], load: LoadView = idle) => keys.map((k) => s.select(set, load, k)[0]!.id);

describe('consistent hashing with bounded loads', () => {
  it('sends one key to one replica, with the same fallback order, every time', () => {
    const s = new ConsistentHashSelector(C);
    const set = replicas([1, 2, 3, 4]);
    const first = s.select(set, idle, 'session-42').map((r) => r.id);
    for (let i = 0; i < 200; i++) expect(s.select(set, idle, 'session-42').map((r) => r.id)).toEqual(first);
    expect(new Set(first).size).toBe(4);
    // The ring depends on the ids, not on the array or its order.
    expect(new ConsistentHashSelector(C).select(replicas([4, 3, 2, 1]), idle, 'session-42').map((r) => r.id)).toEqual(first);
  });

  it('moves at most 1.3/5 of 10,000 sessions when a fifth replica joins, all to the new one', () => {
    const s = new ConsistentHashSelector(C);
    const before = owners(s, replicas([1, 2, 3, 4]));
    const after = owners(s, replicas([1, 2, 3, 4, 5]));
    let moved = 0;
    for (let i = 0; i < keys.length; i++) {
      if (before[i] === after[i]) continue;
      moved++;
      expect(after[i]).toBe(5);
    }
    expect(moved / keys.length).toBeLessThanOrEqual(1.3 / 5);
    expect(moved / keys.length).toBeGreaterThan(0.1); // it does take its share
  });

  it('moves only the sessions of a replica that leaves', () => {
    const s = new ConsistentHashSelector(C);
    const before = owners(s, replicas([1, 2, 3, 4]));
    const after = owners(s, replicas([1, 2, 4]));
    for (let i = 0; i < keys.length; i++) if (before[i] !== 3) expect(after[i]).toBe(before[i]);
  });

  it('splits idle sessions evenly enough', () => {
    const counts = new Map<number, number>();
    for (const id of owners(new ConsistentHashSelector(C), replicas([1, 2, 3, 4]))) counts.set(id, (counts.get(id) ?? 0) + 1);
    for (const n of counts.values()) expect(n / keys.length).toBeGreaterThan(0.18), expect(n / keys.length).toBeLessThan(0.32);
  });

  it.each([1.25, 1.5, 2])('never lets a replica exceed ceil(c × mean) in flight with c = %s, even for hot keys', (c) => {
    const s = new ConsistentHashSelector({ loadFactor: c });
    const set = replicas([1, 2, 3, 4]);
    const load = new Loads();
    const hot = ['hot-a', 'hot-b', 'hot-c'];
    for (let assigned = 1; assigned <= 2000; assigned++) {
      const key = assigned % 10 < 7 ? hot[assigned % 3]! : randomUUID();
      load.add(s.select(set, load, key)[0]!.id);
      const bound = Math.ceil((c * assigned) / set.length);
      for (const r of set) expect(load.inflight(r.id)).toBeLessThanOrEqual(bound);
    }
  });

  it('caps the replica of a hot key that plain consistent hashing would overload', () => {
    const set = replicas([1, 2, 3, 4]);
    const bounded = new ConsistentHashSelector({ loadFactor: 1.25 });
    const load = new Loads();
    for (let i = 0; i < 400; i++) load.add(bounded.select(set, load, 'one-hot-session')[0]!.id);
    expect(Math.max(...load.counts.values())).toBeLessThanOrEqual(125); // plain hashing: all 400
  });

  it('handles 0 and 1 replicas, and spreads by load without a key', () => {
    const s = new ConsistentHashSelector(C);
    expect(s.select([], idle, 'k')).toEqual([]);
    expect(s.select(replicas([9]), idle, 'k').map((r) => r.id)).toEqual([9]);
    const load: LoadView = { inflight: (id) => (id === 1 ? 100 : 0) };
    const firsts = Array.from({ length: 200 }, () => s.select(replicas([1, 2]), load, null)[0]!.id);
    expect(firsts.every((id) => id === 2)).toBe(true);
  });

  it('refuses a load factor that bounds nothing', () => {
    expect(() => new ConsistentHashSelector({ loadFactor: 1 })).toThrow(/above 1/);
  });
});
