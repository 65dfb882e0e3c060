// Table tests of the latency model on synthetic replicas (a + b·tokens + c·in flight, seeded
// noise): what it learns, what it must not be thrown by, and what it forgets.

import { describe, expect, it } from 'vitest';
import { LatencyModel, type LatencySample } from './latency-model.js';

/** A seeded generator (mulberry32): the same samples on every run. */
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A replica that answers in base + perToken·t + perInflight·i ms, ±5 % noise, never queueing. */
interface Synthetic {
  base: number;
  perToken: number;
  perInflight: number;
}
const truth = (r: Synthetic, tokens: number, inflight: number) => r.base + r.perToken * tokens + r.perInflight * inflight;
const FLEET: Synthetic = { base: 30, perToken: 0.2, perInflight: 1.5 };
const SCOPE = 7;

function feed(model: LatencyModel, replicaId: number, r: Synthetic, n: number, random: () => number, inflightMax = 6): void {
  for (let k = 0; k < n; k++) {
    const tokens = Math.floor(random() * 4000);
    const inflight = Math.floor(random() * (inflightMax + 1));
    const ttftMs = truth(r, tokens, inflight) * (0.95 + 0.1 * random());
    model.observe({ replicaId, scope: SCOPE, tokensAhead: tokens, inflight, ttftMs });
  }
}

/** A model that knows replicas 1 and 2 of the fleet well. */
function trained(): LatencyModel {
  const model = new LatencyModel();
  const random = seeded(1);
  for (let k = 0; k < 150; k++) {
    feed(model, 1, FLEET, 1, random);
    feed(model, 2, FLEET, 1, random);
  }
  return model;
}

/** Samples at `inflight` that took `ttftMs` (a queued one: far past the prediction). */
const at = (replicaId: number, inflight: number, ttftMs: number): LatencySample => ({ replicaId, scope: SCOPE, tokensAhead: 500, inflight, ttftMs });
const fleetAt = (inflight: number) => truth(FLEET, 500, inflight);

describe('latency model', () => {
  it('predicts a fresh deployment from its prior: fixed cost, prefill and load all count', () => {
    const model = new LatencyModel();
    expect(model.predict(1, SCOPE, 0, 0)).toBeCloseTo(50);
    expect(model.predict(1, SCOPE, 1000, 0)).toBeCloseTo(150);
    expect(model.predict(1, SCOPE, 0, 5)).toBeCloseTo(60);
    expect(model.limit(1)).toBe(Infinity);
    expect(model.queueTurnMs(1, SCOPE)).toBe(250);
    expect(model.describe(1)).toBeNull();
  });

  it('converges on a synthetic replica (a + b·tokens + c·in flight)', () => {
    const model = new LatencyModel();
    feed(model, 1, FLEET, 300, seeded(2));
    for (const [tokens, inflight] of [
      [0, 0],
      [2000, 3],
      [4000, 6],
    ] as const) {
      expect(model.predict(1, SCOPE, tokens, inflight)).toBeGreaterThan(truth(FLEET, tokens, inflight) * 0.9);
      expect(model.predict(1, SCOPE, tokens, inflight)).toBeLessThan(truth(FLEET, tokens, inflight) * 1.1);
    }
    const belief = model.describe(1)!;
    expect(belief.samples).toBe(300);
    expect(belief.msPerToken).toBeGreaterThan(0.18);
    expect(belief.msPerToken).toBeLessThan(0.22);
    expect(belief.baseMs).toBeGreaterThan(20);
    expect(belief.baseMs).toBeLessThan(40);
    // A new replica of the same deployment starts from what its fleet showed, not the prior.
    expect(model.predict(9, SCOPE, 2000, 0) / truth(FLEET, 2000, 0)).toBeCloseTo(1, 1);
    expect(model.predict(9, SCOPE + 1, 2000, 0)).toBeCloseTo(250);
  });

  it('follows its fleet when it changes (forgetting), one coefficient at a time', () => {
    const model = trained();
    // A new engine version: prefill 2.5× slower, the fixed part the same. A speed factor alone
    // cannot say that (it scales both), the fit must.
    const slowerPrefill = { ...FLEET, perToken: 0.5 };
    const random = seeded(7);
    for (let k = 0; k < 150; k++) {
      feed(model, 1, slowerPrefill, 1, random);
      feed(model, 2, slowerPrefill, 1, random);
    }
    for (const [tokens, inflight] of [
      [0, 1],
      [4000, 1],
    ] as const) {
      expect(model.predict(1, SCOPE, tokens, inflight) / truth(slowerPrefill, tokens, inflight)).toBeCloseTo(1, 1);
    }
  });

  it('expects a new replica where its fleet is now, after the whole fleet slowed down', () => {
    const model = trained();
    const slower = { base: FLEET.base * 2, perToken: FLEET.perToken * 2, perInflight: FLEET.perInflight * 2 };
    const random = seeded(11);
    for (let k = 0; k < 100; k++) {
      feed(model, 1, slower, 1, random);
      feed(model, 2, slower, 1, random);
    }
    expect(model.predict(3, SCOPE, 2000, 1) / truth(slower, 2000, 1)).toBeCloseTo(1, 1);
    expect(model.describe(1)!.speed).toBeCloseTo(1, 1); // the fleet's, not the replica's
  });

  it('tries a replica whose samples all fell in its fit\u2019s warm-up, rather than leave it at the fleet\u2019s mean', () => {
    // What a gateway saw of a 5 ms replica (1) and a 150 ms one (2), one request at a time (a
    // failing end-to-end run): the fit's first eight samples teach no speed, and the fit then
    // predicts about 170 ms (the first sample, with nothing ahead, set its intercept). Replica 1
    // stood there with no speed of its own while replica 2 measured just below it, and was
    // never sent another request.
    const model = new LatencyModel();
    const sample = (replicaId: number, ttftMs: number, tokensAhead = 16) => model.observe({ replicaId, scope: SCOPE, tokensAhead, inflight: 0, ttftMs });
    // The first request of the run found no prompt tokens owed or uncached: 0 tokens ahead.
    sample(2, 182, 0);
    for (const [id, ms] of [[1, 14], [2, 163], [1, 7], [1, 7], [2, 156], [2, 153], [2, 156]] as const) sample(id, ms);
    expect(model.describe(1)?.samples).toBe(3);
    // Replica 2's first sample past the warm-up gives it a speed; replica 1 has none yet.
    sample(2, 157);
    expect(model.predict(1, SCOPE, 16, 0)).toBeLessThan(model.predict(2, SCOPE, 16, 0));
    // Tried, its own samples keep it ahead, and soon far ahead.
    for (let k = 0; k < 10; k++) {
      sample(1, 7);
      expect(model.predict(1, SCOPE, 16, 0)).toBeLessThan(model.predict(2, SCOPE, 16, 0));
    }
    expect(model.predict(1, SCOPE, 16, 0)).toBeLessThan(model.predict(2, SCOPE, 16, 0) / 4);
  });

  it('predicts a replica seen only in the warm-up just under its deployment\u2019s fastest, and by its own speed from its next samples', () => {
    const model = new LatencyModel();
    // Replica 3's one sample falls in the fit's warm-up (its first eight samples).
    model.observe(at(3, 0, fleetAt(0)));
    const random = seeded(5);
    for (let k = 0; k < 20; k++) {
      feed(model, 1, FLEET, 1, random);
      feed(model, 2, FLEET, 1, random);
    }
    const best = Math.min(model.predict(1, SCOPE, 500, 0), model.predict(2, SCOPE, 500, 0));
    expect(model.predict(3, SCOPE, 500, 0)).toBeLessThan(best);
    expect(model.predict(3, SCOPE, 500, 0)).toBeGreaterThan(best * 0.9);
    // One sample three times slower ends the head start; more teach its speed.
    model.observe(at(3, 0, 3 * fleetAt(0)));
    expect(model.predict(3, SCOPE, 500, 0)).toBeGreaterThan(best);
    for (let k = 0; k < 15; k++) model.observe(at(3, 0, 3 * fleetAt(0)));
    expect(model.predict(3, SCOPE, 500, 0) / fleetAt(0)).toBeCloseTo(3, 0);
  });

  it('is not thrown by one stall, even with nothing in flight', () => {
    const model = trained();
    model.observe(at(1, 0, 60_000)); // a minute: a stuck connection, a garbage collection
    expect(model.predict(1, SCOPE, 2000, 1) / truth(FLEET, 2000, 1)).toBeLessThan(1.2);
    expect(model.predict(2, SCOPE, 2000, 1) / truth(FLEET, 2000, 1)).toBeCloseTo(1, 1); // the fleet's fit did not move
    expect(model.limit(1)).toBe(Infinity);
  });

  it('is not thrown by a stall while it is still learning', () => {
    const model = new LatencyModel();
    const random = seeded(9);
    feed(model, 1, FLEET, 2, random);
    model.observe(at(1, 1, 60_000));
    feed(model, 1, FLEET, 30, random);
    expect(model.predict(1, SCOPE, 2000, 2) / truth(FLEET, 2000, 2)).toBeCloseTo(1, 1);
  });

  it('keeps learning the prefill rate after one enormous prompt', () => {
    const model = trained();
    model.observe({ replicaId: 1, scope: SCOPE, tokensAhead: 4_000_000, inflight: 0, ttftMs: truth(FLEET, 4_000_000, 0) });
    const slowerPrefill = { ...FLEET, perToken: 0.5 };
    const random = seeded(8);
    for (let k = 0; k < 150; k++) {
      feed(model, 1, slowerPrefill, 1, random);
      feed(model, 2, slowerPrefill, 1, random);
    }
    expect(model.predict(1, SCOPE, 4000, 1) / truth(slowerPrefill, 4000, 1)).toBeCloseTo(1, 1);
  });

  it('predicts a 3× slower replica at about 3× after a handful of samples, before any queue', () => {
    const model = trained();
    const random = seeded(3);
    feed(model, 3, { base: FLEET.base * 3, perToken: FLEET.perToken * 3, perInflight: FLEET.perInflight * 3 }, 5, random, 3);
    for (const [tokens, inflight] of [
      [100, 1],
      [3000, 2],
    ] as const) {
      const ratio = model.predict(3, SCOPE, tokens, inflight) / model.predict(1, SCOPE, tokens, inflight);
      expect(ratio).toBeGreaterThan(2.6);
      expect(ratio).toBeLessThan(3.4);
    }
    expect(model.describe(3)!.speed).toBeGreaterThan(2.6);
    expect(model.limit(3)).toBe(Infinity); // slow is not queueing
    // Its samples did not drag the fleet's fit along.
    expect(model.predict(1, SCOPE, 2000, 2) / truth(FLEET, 2000, 2)).toBeCloseTo(1, 1);
  });

  it('learns a replica that turned slower everywhere (a noisy neighbour), and lets go of any queue it took that for', () => {
    const model = trained();
    const random = seeded(4);
    const slow = { base: FLEET.base * 3, perToken: FLEET.perToken * 3, perInflight: FLEET.perInflight * 3 };
    for (let k = 0; k < 40; k++) {
      feed(model, 1, FLEET, 1, random, 2);
      const tokens = Math.floor(random() * 4000);
      const inflight = Math.floor(random() * 3);
      model.observe({ replicaId: 2, scope: SCOPE, tokensAhead: tokens, inflight, ttftMs: truth(slow, tokens, inflight) * (0.95 + 0.1 * random()) });
    }
    const ratio = model.predict(2, SCOPE, 2000, 1) / model.predict(1, SCOPE, 2000, 1);
    expect(ratio).toBeGreaterThan(2.5);
    expect(ratio).toBeLessThan(3.5);
    // Its first slow samples may have looked like a queue; once its speed explains them, it is
    // seen to run all three it was sent at once again.
    expect(model.limit(2)).toBeGreaterThanOrEqual(3);
  });

  it('does not lower the limit for a lone outlier; does for queueing repeated at k', () => {
    const model = trained();
    model.observe(at(1, 6, 5_000)); // one stall at 6 in flight
    expect(model.limit(1)).toBe(Infinity);
    for (let i = 0; i < 3; i++) model.observe(at(1, i, fleetAt(i)));
    expect(model.limit(1)).toBe(Infinity);
    // Queued twice at 6 within four samples: its batch is full at 6.
    model.observe(at(1, 6, fleetAt(6) + 400));
    model.observe(at(1, 2, fleetAt(2)));
    model.observe(at(1, 6, fleetAt(6) + 400));
    expect(model.limit(1)).toBe(6);
    expect(model.saturated(1, 6)).toBe(true);
    expect(model.saturated(1, 5)).toBe(false);
    expect(model.limit(2)).toBe(Infinity); // its own, not the fleet's
    // A turn: 400 ms past the prediction for one place in the queue.
    expect(model.queueTurnMs(1, SCOPE)).toBeGreaterThan(300);
    expect(model.queueTurnMs(1, SCOPE)).toBeLessThan(500);
    expect(model.queuePositions(1, 8)).toBe(3);
    expect(model.predict(1, SCOPE, 500, 8) - model.predict(1, SCOPE, 500, 5)).toBeGreaterThan(3 * 300);
    // Its deployment's other replicas are expected to queue alike until they show their own.
    expect(model.queueTurnMs(2, SCOPE)).toBeCloseTo(model.queueTurnMs(1, SCOPE));
    for (let i = 0; i < 10; i++) model.observe(at(2, 3, fleetAt(3) + 200));
    expect(model.limit(2)).toBe(3);
    expect(model.queueTurnMs(2, SCOPE)).toBeLessThan(250);
    expect(model.queueTurnMs(1, SCOPE)).toBeGreaterThan(300);
  });

  it('raises the limit again: additively at its edge, at once past it', () => {
    const model = trained();
    model.observe(at(1, 4, fleetAt(4) + 400));
    model.observe(at(1, 4, fleetAt(4) + 400));
    expect(model.limit(1)).toBe(4);
    for (let i = 0; i < 5; i++) model.observe(at(1, 3, fleetAt(3)));
    expect(model.limit(1)).toBe(5);
    for (let i = 0; i < 30; i++) model.observe(at(1, model.limit(1) - 1, fleetAt(model.limit(1) - 1)));
    expect(model.limit(1)).toBeGreaterThanOrEqual(8);
    model.observe(at(1, 20, fleetAt(20))); // 20 in flight, no queue
    expect(model.limit(1)).toBe(20);
  });

  it('never predicts a replica with more in flight as cheaper, even where load showed no cost', () => {
    const model = new LatencyModel();
    const random = seeded(10);
    for (let k = 0; k < 200; k++) {
      const tokens = Math.floor(random() * 4000);
      model.observe({ replicaId: 1, scope: SCOPE, tokensAhead: tokens, inflight: k % 8, ttftMs: 30 + 0.2 * tokens - 0.5 * (k % 8) });
    }
    expect(model.predict(1, SCOPE, 1000, 3)).toBeGreaterThan(model.predict(1, SCOPE, 1000, 2));
    expect(model.predict(2, SCOPE, 1000, 1)).toBeGreaterThan(model.predict(2, SCOPE, 1000, 0));
  });

  it('takes the limit from the engine when it says it queues, and raises it when it runs more', () => {
    const model = new LatencyModel();
    model.engineBatch(1, SCOPE, 16, 0);
    expect(model.limit(1)).toBe(Infinity);
    model.engineBatch(1, SCOPE, 16, 3);
    expect(model.limit(1)).toBe(16);
    // A full batch with none waiting is not a bigger one.
    model.engineBatch(1, SCOPE, 16, 0);
    expect(model.limit(1)).toBe(16);
    model.engineBatch(1, SCOPE, 18, 0);
    expect(model.limit(1)).toBe(18);
    expect(model.predict(1, SCOPE, 0, 18) - model.predict(1, SCOPE, 0, 17)).toBeGreaterThanOrEqual(250);
  });

  it.each<[string, Partial<LatencySample>]>([
    ['zero ttft', { ttftMs: 0 }],
    ['huge ttft', { ttftMs: 1e15 }],
    ['infinite ttft', { ttftMs: Infinity }],
    ['NaN ttft', { ttftMs: NaN }],
    ['negative ttft', { ttftMs: -5 }],
    ['huge tokensAhead', { tokensAhead: 1e12 }],
    ['negative and NaN inputs', { tokensAhead: -1, inflight: NaN }],
    ['huge in flight', { inflight: 1e9 }],
  ])('stays finite after %s, many times over', (_what, override) => {
    const model = new LatencyModel();
    const random = seeded(5);
    for (let k = 0; k < 200; k++) {
      model.observe({ ...at(1, Math.floor(random() * 4), 50 + random() * 100), tokensAhead: Math.floor(random() * 2000), ...override });
      model.observe(at(2, 1, 60));
    }
    for (const [tokens, inflight] of [
      [0, 0],
      [1e9, 1e9],
      [500, 3],
      [-1, -1],
    ] as const) {
      for (const id of [1, 2, 3]) {
        const ms = model.predict(id, SCOPE, tokens, inflight);
        expect(Number.isFinite(ms)).toBe(true);
        expect(ms).toBeGreaterThan(0);
        expect(Number.isFinite(model.queueTurnMs(id, SCOPE))).toBe(true);
      }
    }
    const belief = model.describe(2)!;
    for (const v of [belief.speed, belief.baseMs, belief.msPerToken]) expect(Number.isFinite(v)).toBe(true);
  });

  it('does not wind up on inputs that never vary, and learns at once when they do', () => {
    const model = new LatencyModel();
    // Months of one prompt length at one concurrency: only a + b·1000 + c·2 is identified.
    for (let k = 0; k < 60_000; k++) model.observe({ replicaId: 1, scope: SCOPE, tokensAhead: 1000, inflight: 2, ttftMs: truth(FLEET, 1000, 2) });
    expect(model.predict(1, SCOPE, 1000, 2)).toBeCloseTo(truth(FLEET, 1000, 2), 0);
    expect(Number.isFinite(model.describe(1)!.msPerToken)).toBe(true);
    feed(model, 1, FLEET, 60, seeded(6));
    expect(model.predict(1, SCOPE, 3000, 1) / truth(FLEET, 3000, 1)).toBeCloseTo(1, 1);
    expect(model.predict(1, SCOPE, 0, 5) / truth(FLEET, 0, 5)).toBeCloseTo(1, 1);
  });

  it('forgets the replicas retain leaves out, keeping their deployment\u2019s fit', () => {
    const model = trained();
    model.observe(at(1, 4, fleetAt(4) + 400));
    model.observe(at(1, 4, fleetAt(4) + 400));
    expect(model.limit(1)).toBe(4);
    model.retain(new Set([2]));
    expect(model.describe(1)).toBeNull();
    expect(model.limit(1)).toBe(Infinity);
    expect(model.describe(2)).not.toBeNull();
    expect(model.predict(1, SCOPE, 2000, 0) / truth(FLEET, 2000, 0)).toBeCloseTo(1, 1);
  });
});
