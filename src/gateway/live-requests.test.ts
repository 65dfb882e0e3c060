// The live-requests list: what was added and not removed is what a shutdown sees, whatever
// the order of removal, and removing twice (or what was never added) changes nothing.

import { describe, expect, it } from 'vitest';
import { LiveRequests, type LiveLinks } from './live-requests.js';

const item = (name: string) => ({ name, livePrev: null as LiveLinks | null, liveNext: null as LiveLinks | null });

describe('LiveRequests', () => {
  it('keeps what was added and not removed, removed from the head, the middle or the tail', () => {
    const live = new LiveRequests<ReturnType<typeof item>>();
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(item);
    for (const x of [a!, b!, c!, d!]) live.add(x);
    live.delete(c!); // middle
    live.delete(d!); // head (the last added)
    live.delete(a!); // tail
    expect(live.snapshot().map((x) => x.name)).toEqual(['b']);
    expect(live.size).toBe(1);
    live.delete(a!); // again: nothing changes
    live.delete(item('never added'));
    expect(live.size).toBe(1);
    live.delete(b!);
    expect([live.snapshot(), live.size]).toEqual([[], 0]);
  });

  it('lets each item of a snapshot remove itself', () => {
    const live = new LiveRequests<ReturnType<typeof item>>();
    const all = ['a', 'b', 'c'].map(item);
    for (const x of all) live.add(x);
    for (const x of live.snapshot()) live.delete(x);
    expect(live.size).toBe(0);
  });
});
