// The workers file parser and the pool's pick: fewest in-flight first, ties round-robin,
// counts kept by address across a rewrite of the file.
import { describe, expect, it } from 'vitest';
import { PrefixAwareSelector } from '../balancer/prefix-aware.js';
import { parseWorkersFile, WorkerPool } from './workers.js';

describe('parseWorkersFile', () => {
  it('reads the lists of its mode, trims and dedupes; empty means none', () => {
    expect(parseWorkersFile('{"workers": ["a:1", " a:1 ", "http://b:2/"]}', 'aggregated')).toEqual({ workers: ['a:1', 'http://b:2'], prefill: [], decode: [] });
    expect(parseWorkersFile('{"prefill": ["[::1]:7"], "decode": []}', 'disaggregated')).toEqual({ workers: [], prefill: ['[::1]:7'], decode: [] });
    expect(parseWorkersFile('  ', 'aggregated')).toEqual({ workers: [], prefill: [], decode: [] });
  });

  it('says why a file cannot be used', () => {
    expect(parseWorkersFile('{"workers": ["a:1"', 'aggregated')).toMatch(/not JSON/);
    expect(parseWorkersFile('[]', 'aggregated')).toMatch(/JSON object/);
    expect(parseWorkersFile('{"prefill": "a:1"}', 'disaggregated')).toMatch(/"prefill" must be an array/);
    expect(parseWorkersFile('{"decode": ["nohost"]}', 'disaggregated')).toMatch(/not "host:port"/);
    expect(parseWorkersFile('{"workers": ["a:70000"]}', 'aggregated')).toMatch(/out of range/);
  });
});

describe('WorkerPool', () => {
  it('picks the least loaded worker, ties round-robin', () => {
    const pool = new WorkerPool('workers');
    expect(pool.pick()).toBeNull();
    pool.set(['a:1', 'b:1', 'c:1']);
    const first = pool.pick();
    const second = pool.pick();
    const third = pool.pick();
    expect([first?.address, second?.address, third?.address]).toEqual(['a:1', 'b:1', 'c:1']);
    second?.release();
    second?.release(); // idempotent
    expect(pool.pick()?.address).toBe('b:1');
    expect(pool.inFlightOf('b:1')).toBe(1);
    first?.release();
    third?.release();
    // a and c are idle now; round-robin continues after b.
    expect(pool.pick()?.address).toBe('c:1');
  });

  it('keeps in-flight counts across a rewrite of the list', () => {
    const pool = new WorkerPool('decode');
    pool.set(['a:1', 'b:1']);
    const lease = pool.pick();
    expect(lease?.address).toBe('a:1');
    pool.set(['b:1', 'a:1']);
    expect(pool.pick()?.address).toBe('b:1');
    expect(pool.inFlightOf('a:1')).toBe(1);
    lease?.release();
    expect(pool.inFlightOf('a:1')).toBe(0);
  });
});

describe('WorkerPool with the prefix-aware policy', () => {
  const prompt = (n: number, base = 0) => Array.from({ length: n }, (_, i) => base + i + 1);

  it('sends a prompt to the worker that holds its prefix, and spreads unrelated ones by load', () => {
    const pool = new WorkerPool('workers', new PrefixAwareSelector({ random: () => 0 }));
    pool.set(['a:1', 'b:2', 'c:3']);
    const first = pool.pick({ session: null, blocks: prompt(40) })!;
    first.firstByte();
    first.release();
    // The same conversation, one turn longer: to the worker that served the first.
    const second = pool.pick({ session: null, blocks: prompt(48) })!;
    expect(second.address).toBe(first.address);
    // While it is busy with that, an unrelated prompt goes elsewhere.
    const other = pool.pick({ session: null, blocks: prompt(40, 1000) })!;
    expect(other.address).not.toBe(first.address);
    second.release();
    other.release();
    expect([pool.inFlightOf('a:1'), pool.inFlightOf('b:2'), pool.inFlightOf('c:3')]).toEqual([0, 0, 0]);
  });

  it('forgets what a worker that left the file held', () => {
    const policy = new PrefixAwareSelector({ random: () => 0 });
    const pool = new WorkerPool('workers', policy);
    pool.set(['a:1', 'b:2']);
    const lease = pool.pick({ session: 's', blocks: prompt(10) })!;
    lease.release();
    pool.set(lease.address === 'a:1' ? ['b:2'] : ['a:1']);
    pool.set(['a:1', 'b:2']); // it comes back: as a new worker, with nothing cached
    expect(policy.index.match(1, prompt(10)) + policy.index.match(2, prompt(10)) + policy.index.match(3, prompt(10))).toBe(0);
  });
});
