// Unit tests of the usage ledger's batches: a failed batch is retried unchanged and blocks
// newer deltas of its key only; numbers increase; confirmed batches are gone.

import { describe, expect, it } from 'vitest';
import { UsageBatches } from './usage-batches.js';

const counter = () => new UsageBatches<{ n: number }>(() => ({ n: 0 }), (into, d) => (into.n += d.n));

describe('UsageBatches', () => {
  it('sums deltas per key into one numbered batch, and forgets it once confirmed', () => {
    const b = counter();
    b.add('a', { n: 1 });
    b.add('a', { n: 2 });
    b.add('b', { n: 5 });
    const taken = b.take();
    expect(taken.map((t) => [t.key, t.seq, t.delta.n])).toEqual([
      ['a', 1, 3],
      ['b', 2, 5],
    ]);
    for (const t of taken) b.confirm(t);
    expect(b.take()).toEqual([]);
    expect(b.size).toBe(0);
  });

  it('writes an unconfirmed batch again unchanged, holding newer deltas of its key back', () => {
    const b = counter();
    b.add('a', { n: 1 });
    b.add('b', { n: 1 });
    const [a1, b1] = b.take();
    b.confirm(b1!);
    // a1's write failed: the store may or may not have applied it.
    b.add('a', { n: 10 });
    b.add('b', { n: 7 });
    const again = b.take();
    expect(again.map((t) => [t.key, t.seq, t.delta.n])).toEqual([
      ['a', 1, 1],
      ['b', 3, 7],
    ]);
    expect(again[0]).toBe(a1);
    b.confirm(again[0]!);
    b.confirm(again[1]!);
    const next = b.take();
    expect(next.map((t) => [t.key, t.seq, t.delta.n])).toEqual([['a', 4, 10]]);
  });

  it('keeps counting while batches stay unconfirmed (a long outage)', () => {
    const b = counter();
    for (let i = 0; i < 100; i++) {
      b.add('a', { n: 1 });
      b.take(); // every write fails
    }
    const [first] = b.take();
    expect(first).toMatchObject({ seq: 1, delta: { n: 1 } });
    b.confirm(first!);
    expect(b.take()).toMatchObject([{ seq: 2, delta: { n: 99 } }]);
    expect(b.size).toBe(1);
  });

  it('ignores the confirmation of a batch that is no longer the unconfirmed one', () => {
    const b = counter();
    b.add('a', { n: 1 });
    const [a1] = b.take();
    b.confirm(a1!);
    b.add('a', { n: 2 });
    const [a2] = b.take();
    b.confirm(a1!);
    expect(b.take()).toEqual([a2]);
  });
});
