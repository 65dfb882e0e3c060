import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Priority } from '../domain/priority.js';
import { DEFAULT_FLOW_CONTROL, type FlowControl } from '../domain/records.js';
import { testRoute } from '../../test/helpers/route.js';
import { FlowController, type FlowMeters, type FlowRequest, type ShedReason } from './flow-control.js';
import type { Rejection } from './phases.js';
import type { Route } from './routing-table.js';

/** Replicas 1 and 2 with a slot count each; a dispatch takes a slot, `free` gives one back. */
function rig(slots: Record<number, number>, flowControl: FlowControl = DEFAULT_FLOW_CONTROL) {
  const used = new Map<number, number>();
  const prefillAhead = new Map<number, number>();
  const capacity = {
    room: (id: number) => (slots[id] ?? 0) - (used.get(id) ?? 0),
    limit: (id: number) => slots[id] ?? 0,
    prefillAheadMs: (id: number) => prefillAhead.get(id) ?? 0,
  };
  const shed: Array<{ priority: Priority; reason: ShedReason }> = [];
  const waits: number[] = [];
  const meters: FlowMeters = { shed: (_d, priority, reason) => shed.push({ priority, reason }), waited: (_d, _p, s) => waits.push(s) };
  const flow = new FlowController(capacity, meters);
  let route: Route = testRoute({ replicas: [{ id: 1, address: 'a' }, { id: 2, address: 'b' }], flowControl });
  const log: string[] = [];
  const refusals: Array<{ tag: string; r: Rejection; reason: ShedReason }> = [];
  // A dispatched request occupies the replica with the most free slots, as a load-aware policy would.
  const take = (): number => {
    const ids = route.replicas.map((r) => r.id).sort((a, b) => (slots[b]! - (used.get(b) ?? 0)) - (slots[a]! - (used.get(a) ?? 0)));
    const id = ids[0]!;
    used.set(id, (used.get(id) ?? 0) + 1);
    return id;
  };
  const request = (tag: string, priority: Priority = 'standard', credential = 'c'): FlowRequest => ({
    priority,
    credential,
    cost: 1,
    go: () => {
      take();
      log.push(tag);
    },
    refuse: (r, reason) => refusals.push({ tag, r, reason }),
  });
  const admit = (tag: string, priority?: Priority, credential?: string) => flow.admit(route, request(tag, priority, credential));
  const free = (id: number) => {
    used.set(id, (used.get(id) ?? 0) - 1);
    flow.released(route.deploymentId);
  };
  const setRoute = (o: Partial<Route>) => {
    route = { ...route, ...o };
    flow.sync([route]);
  };
  return { flow, admit, free, log, refusals, shed, waits, setRoute, used, prefillAhead };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('FlowController', () => {
  it('lets a request go at once, synchronously, while a replica has room and nothing waits', () => {
    const r = rig({ 1: 1, 2: 1 });
    expect(r.admit('a')).toBeNull();
    expect(r.admit('b')).toBeNull();
    expect(r.log).toEqual(['a', 'b']);
    expect(r.flow.waiting(7)).toBeNull();
  });

  it('queues past saturation and dispatches by class as slots free: critical first, sheddable last', () => {
    const r = rig({ 1: 1, 2: 0 });
    r.admit('first');
    expect(r.admit('shed', 'sheddable')).not.toBeNull();
    r.admit('std', 'standard');
    r.admit('crit', 'critical');
    expect(r.flow.waiting(7)).toEqual({ critical: 1, standard: 1, sheddable: 1 });
    r.free(1);
    r.free(1);
    r.free(1);
    expect(r.log).toEqual(['first', 'crit', 'std', 'shed']);
    expect(r.waits).toHaveLength(3);
  });

  it('a newcomer does not overtake the queue while requests wait, even when a slot is free', () => {
    const r = rig({ 1: 1, 2: 0 });
    r.admit('first');
    r.admit('waiting');
    r.used.set(1, 0); // a slot freed without telling: the next admit must not jump the queue
    expect(r.admit('late')).not.toBeNull();
    r.flow.released(7);
    expect(r.log).toEqual(['first', 'waiting']);
  });

  it('shares a class fairly between credentials: a flood does not starve an interactive client', () => {
    const r = rig({ 1: 1, 2: 0 });
    r.admit('busy');
    for (let i = 0; i < 20; i++) r.admit(`f${i}`, 'sheddable', 'flood');
    for (let i = 0; i < 20; i++) r.admit(`x${i}`, 'standard', 'flood2');
    r.admit('u0', 'standard', 'user');
    r.admit('u1', 'standard', 'user');
    for (let i = 0; i < 4; i++) r.free(1);
    expect(r.log.slice(1)).toEqual(['u0', 'x0', 'u1', 'x1']);
  });

  it("answers 429 with Retry-After once a request has waited its class's limit", async () => {
    const r = rig({ 1: 1, 2: 0 }, { max_queue: 10, max_wait_seconds: { critical: 60, standard: 30, sheddable: 5 } });
    r.admit('busy');
    r.admit('s', 'sheddable');
    r.admit('n', 'standard');
    await vi.advanceTimersByTimeAsync(5_000);
    expect(r.refusals.map((x) => [x.tag, x.r.status, x.reason])).toEqual([['s', 429, 'wait_timeout']]);
    expect(Number(r.refusals[0]!.r.headers!['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(r.refusals[0]!.r.message).toMatch(/sheddable request waited 5 s/);
    await vi.advanceTimersByTimeAsync(25_000);
    expect(r.refusals.map((x) => x.tag)).toEqual(['s', 'n']);
    expect(r.shed).toEqual([
      { priority: 'sheddable', reason: 'wait_timeout' },
      { priority: 'standard', reason: 'wait_timeout' },
    ]);
  });

  it('a full queue sheds the newest of a lower class for a higher newcomer, else refuses the newcomer', () => {
    const r = rig({ 1: 1, 2: 0 }, { max_queue: 2, max_wait_seconds: DEFAULT_FLOW_CONTROL.max_wait_seconds });
    r.admit('busy');
    r.admit('s0', 'sheddable');
    r.admit('s1', 'sheddable');
    r.admit('n0', 'standard');
    expect(r.refusals.map((x) => [x.tag, x.r.status, x.reason])).toEqual([['s1', 429, 'displaced']]);
    r.admit('s2', 'sheddable');
    expect(r.refusals.map((x) => [x.tag, x.reason])).toEqual([
      ['s1', 'displaced'],
      ['s2', 'queue_full'],
    ]);
    expect(r.refusals[1]!.r.headers!['retry-after']).toMatch(/^\d+$/);
  });

  it('a class with max_wait_seconds 0 and a queue of 0 never wait', () => {
    const r = rig({ 1: 1, 2: 0 }, { max_queue: 5, max_wait_seconds: { critical: 60, standard: 30, sheddable: 0 } });
    r.admit('busy');
    r.admit('s', 'sheddable');
    expect(r.refusals.map((x) => [x.tag, x.reason])).toEqual([['s', 'wait_timeout']]);
    const none = rig({ 1: 1, 2: 0 }, { max_queue: 0, max_wait_seconds: DEFAULT_FLOW_CONTROL.max_wait_seconds });
    none.admit('busy');
    none.admit('c', 'critical');
    expect(none.refusals.map((x) => [x.tag, x.reason])).toEqual([['c', 'queue_full']]);
  });

  it('a cancelled request (its client left) leaves the queue and is never dispatched nor refused', async () => {
    const r = rig({ 1: 1, 2: 0 });
    r.admit('busy');
    const w = r.admit('gone')!;
    r.admit('next');
    expect(w.cancel()).toBe(true);
    expect(w.cancel()).toBe(false);
    expect(r.flow.waiting(7)).toEqual({ critical: 0, standard: 1, sheddable: 0 });
    r.free(1);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(r.log).toEqual(['busy', 'next']);
    expect(r.refusals).toEqual([]);
  });

  it('answers 503 with Retry-After when the deployment can no longer serve: no replica, or paused', () => {
    const r = rig({ 1: 1, 2: 0 });
    r.admit('busy');
    r.admit('a');
    r.setRoute({ replicas: [] });
    expect(r.refusals.map((x) => [x.tag, x.r.status, x.r.headers!['retry-after'], x.reason])).toEqual([['a', 503, '5', 'unavailable']]);
    const p = rig({ 1: 1, 2: 0 });
    p.admit('busy');
    p.admit('b');
    p.setRoute({ paused: true });
    expect(p.refusals[0]!.r.message).toMatch(/paused/);
  });

  it('while interactive requests come, sheddable ones leave part of each replica free for them; a flood alone takes every slot', () => {
    const r = rig({ 1: 8, 2: 0 });
    for (let i = 0; i < 8; i++) r.admit(`s${i}`, 'sheddable', 'flood');
    expect(r.log).toHaveLength(8); // nothing interactive seen: all 8 slots
    r.admit('s8', 'sheddable', 'flood'); // queued: the flow exists from here
    r.free(1);
    r.free(1);
    r.admit('c0', 'critical', 'user'); // an interactive request: the reserve (1 of 8) applies now
    expect(r.log).toEqual(['s0', 's1', 's2', 's3', 's4', 's5', 's6', 's7', 's8', 'c0']);
    r.free(1);
    r.admit('s9', 'sheddable', 'flood');
    // One slot free, and it is the reserve: the sheddable request waits, a critical one goes.
    expect(r.log.at(-1)).toBe('c0');
    r.admit('c1', 'critical', 'user');
    expect(r.log.at(-1)).toBe('c1');
    r.free(1);
    r.free(1);
    expect(r.log.at(-1)).toBe('s9');
  });

  it('while interactive requests come, a sheddable one waits for a replica whose prefill ahead is short; critical ones do not', () => {
    const r = rig({ 1: 4, 2: 4 });
    for (let i = 0; i < 8; i++) r.admit(`f${i}`, 'sheddable');
    r.admit('q', 'sheddable'); // waits: every slot is taken
    r.prefillAhead.set(1, 400);
    r.prefillAhead.set(2, 400);
    r.admit('c', 'critical');
    r.free(1);
    expect(r.log.slice(8)).toEqual(['c']);
    r.free(2);
    // A slot on replica 2, but 400 ms of prefill ahead there: the sheddable request keeps waiting.
    expect(r.log.slice(8)).toEqual(['c']);
    r.prefillAhead.set(2, 10);
    r.flow.released(7);
    expect(r.log.slice(8)).toEqual(['c', 'q']);
  });

  it('with no limit known, a sheddable request goes at once even while interactive ones come', () => {
    const r = rig({ 1: Infinity, 2: 0 });
    r.admit('c', 'critical');
    r.admit('s', 'sheddable');
    expect(r.log).toEqual(['c', 's']);
  });

  it('looks again on its own while requests wait, for limits that change without a request ending', async () => {
    const r = rig({ 1: 1, 2: 0 });
    r.admit('busy');
    r.admit('a');
    r.used.set(1, 0);
    await vi.advanceTimersByTimeAsync(100);
    expect(r.log).toEqual(['busy', 'a']);
  });
});
