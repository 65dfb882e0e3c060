import { describe, expect, it } from 'vitest';
import type { Priority } from '../domain/priority.js';
import { FlowQueue, type QueueEntry } from './flow-queue.js';

const entry = (priority: Priority, credential: string, cost = 1, tag = ''): QueueEntry & { tag: string } => ({
  priority,
  credential,
  cost,
  prev: null,
  next: null,
  queued: false,
  tag,
});

const popAll = (q: FlowQueue): string[] => {
  const out: string[] = [];
  for (let e = q.pop(); e !== null; e = q.pop()) out.push((e as QueueEntry & { tag: string }).tag);
  return out;
};

describe('FlowQueue', () => {
  it('serves strictly by class: every critical before any standard, every standard before any sheddable', () => {
    const q = new FlowQueue();
    q.push(entry('sheddable', 'a', 1, 's1'));
    q.push(entry('standard', 'a', 1, 'n1'));
    q.push(entry('critical', 'a', 1, 'c1'));
    q.push(entry('standard', 'a', 1, 'n2'));
    q.push(entry('critical', 'a', 1, 'c2'));
    expect(q.size).toBe(5);
    expect(q.sizeOf('standard')).toBe(2);
    expect(popAll(q)).toEqual(['c1', 'c2', 'n1', 'n2', 's1']);
    expect(q.size).toBe(0);
  });

  it('inside a class, a flooding credential cannot take more than its share while another waits', () => {
    const q = new FlowQueue();
    for (let i = 0; i < 10; i++) q.push(entry('standard', 'flood', 100, `f${i}`));
    q.push(entry('standard', 'user', 100, 'u0'));
    q.push(entry('standard', 'user', 100, 'u1'));
    // The user joined level with the flood and goes first on the tie; then they alternate.
    expect(popAll(q).slice(0, 5)).toEqual(['u0', 'f0', 'u1', 'f1', 'f2']);
  });

  it('shares by tokens, not requests: a credential of big requests gets fewer of them', () => {
    const q = new FlowQueue();
    for (let i = 0; i < 6; i++) q.push(entry('standard', 'big', 300, `b${i}`));
    for (let i = 0; i < 6; i++) q.push(entry('standard', 'small', 100, `s${i}`));
    const order = popAll(q).slice(0, 8);
    expect(order.filter((t) => t.startsWith('s')).length).toBeGreaterThanOrEqual(5);
  });

  it('a credential that rejoins starts level with those waiting: it banks no credit while idle', () => {
    const q = new FlowQueue();
    q.push(entry('standard', 'idle', 1, 'i0'));
    expect(popAll(q)).toEqual(['i0']);
    for (let i = 0; i < 20; i++) q.push(entry('standard', 'busy', 10, `b${i}`));
    for (let i = 0; i < 10; i++) q.pop(); // busy is served 100 tokens meanwhile
    for (let i = 0; i < 4; i++) q.push(entry('standard', 'idle', 10, `i${i + 1}`));
    const next = popAll(q).slice(0, 4);
    // Not all four of idle's in a row, as a counter kept from before (1 token) would give.
    expect(next.filter((t) => t.startsWith('i')).length).toBe(2);
  });

  it('remove takes a waiting request out once; a second remove or a popped one says false', () => {
    const q = new FlowQueue();
    const a = entry('standard', 'x', 1, 'a');
    const b = entry('standard', 'x', 1, 'b');
    const c = entry('standard', 'x', 1, 'c');
    q.push(a);
    q.push(b);
    q.push(c);
    expect(q.remove(b)).toBe(true);
    expect(q.remove(b)).toBe(false);
    expect(q.size).toBe(2);
    expect(popAll(q)).toEqual(['a', 'c']);
    expect(q.remove(a)).toBe(false);
  });

  it('makes room in a full queue by the newest request of the lowest class below the newcomer', () => {
    const q = new FlowQueue();
    q.push(entry('sheddable', 'flood', 1, 's0'));
    q.push(entry('sheddable', 'flood', 1, 's1'));
    q.push(entry('standard', 'user', 1, 'n0'));
    expect((q.displaceFor('critical') as QueueEntry & { tag: string }).tag).toBe('s1');
    expect((q.displaceFor('standard') as QueueEntry & { tag: string }).tag).toBe('s0');
    // Nothing below standard is left: a standard or sheddable newcomer finds no room.
    expect(q.displaceFor('standard')).toBeNull();
    expect(q.displaceFor('sheddable')).toBeNull();
    expect((q.displaceFor('critical') as QueueEntry & { tag: string }).tag).toBe('n0');
    expect(q.size).toBe(0);
  });

  it('drain empties every class', () => {
    const q = new FlowQueue();
    q.push(entry('critical', 'a'));
    q.push(entry('sheddable', 'b'));
    expect(q.drain()).toHaveLength(2);
    expect(q.size).toBe(0);
  });
});
