// The shared scheduler on fake timers: the running cap, the FIFO queue, aborts that free a
// slot at once, and an inter-token interval that grows with the number of running sequences.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Scheduler, type SequenceSpec } from './scheduler.js';

interface Trace {
  started: number[];
  steps: Array<[number, number]>;
  finished: number | null;
}

function seq(steps: number, model = 'm'): { spec: SequenceSpec; trace: Trace } {
  const trace: Trace = { started: [], steps: [], finished: null };
  return {
    trace,
    spec: {
      model,
      steps,
      onStart: () => trace.started.push(Date.now()),
      onStep: (step) => trace.steps.push([step, Date.now()]),
      onFinish: () => (trace.finished = Date.now()),
    },
  };
}

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('Scheduler', () => {
  it('skips the prefill of a sequence whose KV cache was transferred in: first token after one itl', () => {
    const s = new Scheduler({ ttftMs: 50, itlMs: 10, itlGrowth: 0.5, maxRunning: 4 });
    const a = seq(2);
    s.submit({ ...a.spec, skipPrefill: true });
    vi.advanceTimersByTime(1000);
    expect(a.trace.steps).toEqual([
      [0, 10],
      [1, 20],
    ]);
  });

  it('emits the first token ttft after start, then one per itl, then finishes', () => {
    const s = new Scheduler({ ttftMs: 50, itlMs: 10, itlGrowth: 0.5, maxRunning: 4 });
    const a = seq(3);
    s.submit(a.spec);
    expect(s.running).toBe(1);
    vi.advanceTimersByTime(49);
    expect(a.trace.steps).toEqual([]);
    vi.advanceTimersByTime(1000);
    expect(a.trace.steps).toEqual([
      [0, 50],
      [1, 60],
      [2, 70],
    ]);
    expect(a.trace.finished).toBe(70);
    expect(s.running).toBe(0);
  });

  it('caps running sequences and queues the rest in FIFO order', () => {
    const s = new Scheduler({ ttftMs: 10, itlMs: 10, itlGrowth: 0, maxRunning: 2 });
    const seqs = [seq(2), seq(2), seq(2), seq(2)];
    for (const x of seqs) s.submit(x.spec);
    expect(s.running).toBe(2);
    expect(s.waiting).toBe(2);
    expect(s.countsByModel().get('m')).toEqual({ running: 2, waiting: 2 });
    vi.advanceTimersByTime(20); // first two finish at 20
    expect(seqs[0]!.trace.finished).toBe(20);
    expect(seqs[2]!.trace.started).toEqual([20]);
    expect(seqs[3]!.trace.started).toEqual([20]);
    vi.advanceTimersByTime(100);
    expect(seqs.map((x) => x.trace.finished)).toEqual([20, 20, 40, 40]);
  });

  it('starts waiting sequences in arrival order as single slots free up', () => {
    const s = new Scheduler({ ttftMs: 5, itlMs: 5, itlGrowth: 0, maxRunning: 1 });
    const order: string[] = [];
    for (const name of ['a', 'b', 'c']) s.submit({ model: 'm', steps: 1, onStart: () => order.push(name), onStep: () => undefined, onFinish: () => undefined });
    vi.advanceTimersByTime(100);
    expect(order).toEqual(['a', 'b', 'c']);
  });

  it('an aborted running sequence frees its slot at once and gets no more callbacks', () => {
    const s = new Scheduler({ ttftMs: 10, itlMs: 10, itlGrowth: 0, maxRunning: 1 });
    const a = seq(100);
    const b = seq(1);
    const handle = s.submit(a.spec);
    s.submit(b.spec);
    vi.advanceTimersByTime(25);
    expect(a.trace.steps.length).toBe(2);
    handle.abort();
    expect(handle.state).toBe('aborted');
    expect(s.running).toBe(1); // b took the slot
    expect(b.trace.started).toEqual([25]);
    vi.advanceTimersByTime(1000);
    expect(a.trace.steps.length).toBe(2);
    expect(a.trace.finished).toBeNull();
    expect(b.trace.finished).toBe(35);
  });

  it('an aborted waiting sequence leaves the queue and never starts', () => {
    const s = new Scheduler({ ttftMs: 10, itlMs: 10, itlGrowth: 0, maxRunning: 1 });
    const a = seq(1);
    const b = seq(1);
    s.submit(a.spec);
    const hb = s.submit(b.spec);
    expect(s.waiting).toBe(1);
    hb.abort();
    expect(s.waiting).toBe(0);
    vi.advanceTimersByTime(100);
    expect(b.trace.started).toEqual([]);
    expect(a.trace.finished).toBe(10);
  });

  it('grows the inter-token interval with the number of running sequences', () => {
    const s = new Scheduler({ ttftMs: 0, itlMs: 10, itlGrowth: 0.5, maxRunning: 8 });
    expect(s.currentItlMs()).toBe(10);
    const a = seq(4);
    s.submit(a.spec);
    expect(s.currentItlMs()).toBe(10);
    s.submit(seq(100).spec);
    s.submit(seq(100).spec);
    expect(s.currentItlMs()).toBe(20); // 10 × (1 + 0.5 × 2)
    vi.advanceTimersByTime(1000);
    const times = a.trace.steps.map(([, t]) => t);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(gaps).toEqual([20, 20, 20]);
  });

  it('resolves idle() once nothing runs or waits', async () => {
    const s = new Scheduler({ ttftMs: 10, itlMs: 10, itlGrowth: 0, maxRunning: 1 });
    await s.idle();
    s.submit(seq(2).spec);
    s.submit(seq(2).spec);
    let idle = false;
    void s.idle().then(() => (idle = true));
    await vi.advanceTimersByTimeAsync(30);
    expect(idle).toBe(false);
    await vi.advanceTimersByTimeAsync(30);
    expect(idle).toBe(true);
  });

  it('aborts a sequence whose callback throws and keeps scheduling others', () => {
    const errors: unknown[] = [];
    const s = new Scheduler({ ttftMs: 1, itlMs: 1, itlGrowth: 0, maxRunning: 1 }, { onCallbackError: (e) => errors.push(e) });
    const h = s.submit({ model: 'm', steps: 5, onStep: () => { throw new Error('boom'); }, onFinish: () => undefined });
    const b = seq(1);
    s.submit(b.spec);
    vi.advanceTimersByTime(10);
    expect(h.state).toBe('aborted');
    expect(errors).toHaveLength(1);
    expect(b.trace.finished).not.toBeNull();
  });

  it('prefills on one lane in arrival order: a long uncached prompt delays the first token of the next', () => {
    const s = new Scheduler({ ttftMs: 5, itlMs: 10, itlGrowth: 0, maxRunning: 4 });
    const long = seq(1);
    const short = seq(1);
    const cached = seq(1);
    const prefilled: Array<[string, number]> = [];
    s.submit({ ...long.spec, prefillMs: 100, onPrefilled: () => prefilled.push(['long', Date.now()]) });
    s.submit({ ...short.spec, prefillMs: 20, onPrefilled: () => prefilled.push(['short', Date.now()]) });
    s.submit({ ...cached.spec, prefillMs: 0, onPrefilled: () => prefilled.push(['cached', Date.now()]) });
    vi.advanceTimersByTime(1000);
    // All three run at once (the cap is 4); the lane works the prefills one after the other.
    expect(prefilled).toEqual([
      ['cached', 0],
      ['long', 100],
      ['short', 120],
    ]);
    expect(cached.trace.steps).toEqual([[0, 5]]);
    expect(long.trace.steps).toEqual([[0, 105]]);
    expect(short.trace.steps).toEqual([[0, 125]]);
  });

  it('frees the prefill lane at once when the sequence on it is aborted', () => {
    const s = new Scheduler({ ttftMs: 5, itlMs: 10, itlGrowth: 0, maxRunning: 4 });
    const a = seq(1);
    const b = seq(1);
    const handle = s.submit({ ...a.spec, prefillMs: 100 });
    s.submit({ ...b.spec, prefillMs: 20 });
    vi.advanceTimersByTime(30);
    handle.abort();
    vi.advanceTimersByTime(1000);
    expect(a.trace.steps).toEqual([]);
    expect(b.trace.steps).toEqual([[0, 55]]);
    expect(s.running).toBe(0);
  });
});
