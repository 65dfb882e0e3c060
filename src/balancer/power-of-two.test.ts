import { describe, expect, it } from 'vitest';
import { PowerOfTwoSelector } from './power-of-two.js';
import type { LoadView, ReplicaRef } from './selector.js';

const replicas = (n: number): ReplicaRef[] => Array.from({ length: n }, (_, i) => ({ id: i + 1, address: `h:${i + 1}` }));
const sequence = (...values: number[]) => {
  let i = 0;
  return () => values[i++ % values.length]!;
};

describe('power of two choices', () => {
  it.each([
    ['the less loaded of the two draws first', [0.0, 0.5], { 1: 5, 3: 1 }, [3, 1, 2, 4]],
    ['the first draw on a tie', [0.0, 0.5], {}, [1, 3, 2, 4]],
    ['a second draw that would repeat the first shifted past it', [0.25, 0.5], {}, [2, 3, 1, 4]],
  ])('puts %s', (_what, draws, loads, expected) => {
    const load: LoadView = { inflight: (id) => (loads as Record<number, number>)[id] ?? 0 };
    expect(new PowerOfTwoSelector(sequence(...draws)).select(replicas(4), load).map((r) => r.id)).toEqual(expected);
  });

  it('rarely picks a heavily loaded replica, and lists every replica once', () => {
    const s = new PowerOfTwoSelector();
    const load: LoadView = { inflight: (id) => (id === 1 ? 50 : 1) };
    let heavy = 0;
    for (let i = 0; i < 4000; i++) {
      const order = s.select(replicas(4), load);
      expect(new Set(order.map((r) => r.id)).size).toBe(4);
      if (order[0]!.id === 1) heavy++;
    }
    expect(heavy).toBe(0); // only picked when drawn twice, which p2c never does
  });

  it('handles 0, 1 and 2 replicas', () => {
    const s = new PowerOfTwoSelector();
    const idle: LoadView = { inflight: () => 0 };
    expect(s.select([], idle)).toEqual([]);
    expect(s.select(replicas(1), idle).map((r) => r.id)).toEqual([1]);
    expect(new Set(s.select(replicas(2), idle).map((r) => r.id))).toEqual(new Set([1, 2]));
  });
});
