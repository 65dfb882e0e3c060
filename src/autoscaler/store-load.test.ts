// The autoscaler's load over several gateways: its own process's gateway read directly, the
// others' reports read from the store (its own report there skipped, not counted twice),
// reports that stop being readable counted only until they are stale; per revision the
// concurrency and 5-second steps summed, queued requests summed, a replica's engine figures
// the freshest any gateway has (and none once stale), and the revisions compared over a window.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LOAD_TOPIC, type LoadReport } from '../domain/load-report.js';
import { emptyStats, ttftBucket, type RevisionStep } from '../domain/revision-stats.js';
import { FileStore } from '../store/file-store.js';
import { StoreLoad, type LocalLoad } from './store-load.js';

const s = (second: number, average: number) => ({ second: second * 1000, average });
const report = (average: number, held: number, replica: number): LoadReport => ({
  at: 1,
  deployments: { 7: { samples: [s(1, average), s(2, average)], held, inflight: replica } },
  replicas: { 3: replica },
});

/** A step at `start` ms with `requests` requests, `errors` of them 5xx, `tokens` completion tokens and first tokens at `ttft` ms. */
function step(start: number, requests: number, errors = 0, tokens = 0, ttft: number[] = []): RevisionStep {
  const stats = emptyStats();
  for (const ms of ttft) stats.ttft[ttftBucket(ms)]! += 1;
  return { start, ...stats, requests, errors, completion_tokens: tokens };
}

const quietLocal: LocalLoad = {
  samples: () => [],
  held: () => 0,
  inflight: () => 0,
  revisionSamples: () => [],
  queued: () => 0,
  replicaSignals: () => null,
  revisionSteps: () => [],
  revisions: () => [],
  busy: () => [],
};

let dir: string;
let store: FileStore;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-store-load-'));
  store = new FileStore({ dir });
  await store.open();
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('StoreLoad', () => {
  const local: LocalLoad = {
    ...quietLocal,
    samples: (id: number) => (id === 7 ? [s(1, 1), s(2, 1)] : []),
    held: (id: number) => (id === 7 ? 1 : 0),
    inflight: (id: number) => (id === 3 ? 1 : 0),
  };

  it('sums the local gateway and the other gateways\' reports, skipping its own', async () => {
    await store.publishReport(LOAD_TOPIC, 'me', JSON.stringify(report(100, 100, 100)), 10_000);
    await store.publishReport(LOAD_TOPIC, 'gw-a', JSON.stringify(report(2, 1, 2)), 10_000);
    await store.publishReport(LOAD_TOPIC, 'gw-b', JSON.stringify(report(3, 0, 1)), 10_000);
    await store.publishReport(LOAD_TOPIC, 'gw-c', 'garbage', 10_000);
    const load = new StoreLoad(store, { publisher: 'me', load: local }, pino({ level: 'silent' }));
    expect(load.samples(7)).toEqual([s(1, 1), s(2, 1)]); // nothing read yet: the local gateway alone
    await load.refresh();
    expect(load.samples(7)).toEqual([s(1, 6), s(2, 6)]);
    expect(load.held(7)).toBe(2);
    expect(load.inflight(3)).toBe(4);
    expect(load.samples(8)).toEqual([]);
    // Older reports carry no revisions, queue or engines: read as none.
    expect(load.queued(7)).toBe(0);
    expect(load.revisionSamples(7, 1)).toEqual([]);
    expect(load.revisionSteps(7, null)).toEqual([]);
    expect(load.replicaSignals(3)).toBeNull();
  });

  it('works without a local gateway (--role control), and forgets reports it cannot refresh', async () => {
    let now = 0;
    await store.publishReport(LOAD_TOPIC, 'gw-a', JSON.stringify(report(2, 1, 2)), 10_000);
    const load = new StoreLoad(store, null, pino({ level: 'silent' }), 5000, () => now);
    await load.refresh();
    expect(load.samples(7)).toEqual([s(1, 2), s(2, 2)]);
    await store.close(); // the store goes away
    now = 4000;
    await load.refresh();
    expect(load.held(7)).toBe(1); // the last reports still count…
    now = 6000;
    expect(load.held(7)).toBe(0); // …until they are stale
    await store.open();
  });

  it('sums revisions\' concurrency, steps and queued requests over gateways; engine figures are the freshest, and none once stale', async () => {
    let now = 100_000;
    const remote = (queued: number, average: number, steps: RevisionStep[], engineAt: number, waiting: number): LoadReport => ({
      at: now,
      deployments: { 7: { samples: [], held: 0, inflight: 0, queued, revisions: { 2: { samples: [s(1, average), s(2, average)], steps } } } },
      replicas: {},
      engines: { 3: { waiting, kvCachePercent: 50, at: engineAt } },
    });
    await store.publishReport(LOAD_TOPIC, 'gw-a', JSON.stringify(remote(2, 1, [step(90_000, 4, 1, 40)], 99_000, 6)), 10_000);
    await store.publishReport(LOAD_TOPIC, 'gw-b', JSON.stringify(remote(1, 2, [step(90_000, 1), step(95_000, 2)], 99_500, 9)), 10_000);
    const mine: LocalLoad = {
      ...quietLocal,
      queued: (id) => (id === 7 ? 4 : 0),
      revisionSamples: (id, revision) => (id === 7 && revision === 2 ? [s(1, 10), s(2, 10)] : []),
      revisionSteps: (id, revision) => (id === 7 && (revision === 2 || revision === null) ? [step(95_000, 3)] : []),
      replicaSignals: (id) => (id === 3 ? { waiting: 1, kvCachePercent: 10, at: 99_200 } : null),
      revisions: (id) => (id === 7 ? [2] : []),
    };
    const load = new StoreLoad(store, { publisher: 'me', load: mine }, pino({ level: 'silent' }), 5000, () => now);
    await load.refresh();
    expect(load.queued(7)).toBe(7);
    expect(load.revisionSamples(7, 2)).toEqual([s(1, 13), s(2, 13)]);
    expect(load.revisionSamples(7, 3)).toEqual([]);
    expect(load.revisionSteps(7, 2).map((x) => [x.start, x.requests, x.errors, x.completion_tokens])).toEqual([
      [90_000, 5, 1, 40],
      [95_000, 5, 0, 0],
    ]);
    expect(load.revisionSteps(7, null).map((x) => x.requests)).toEqual([5, 5]);
    // gw-b scraped replica 3 last: its figures win over gw-a's and the local gateway's.
    expect(load.replicaSignals(3)).toEqual({ waiting: 9, kvCachePercent: 50 });
    now = 104_000;
    expect(load.replicaSignals(3)).toEqual({ waiting: 9, kvCachePercent: 50 });
    now = 104_600; // older than 5 s: not trusted
    expect(load.replicaSignals(3)).toBeNull();
  });

  it('compares the revisions over a window: requests, errors, TTFT p50/p99 and tokens per second', async () => {
    const now = 1_000_000;
    const steps2 = [step(now - 400_000, 50), step(now - 60_000, 10, 1, 600, [40, 40, 40, 40, 40, 40, 40, 40, 40, 900]), step(now - 5_000, 10, 0, 600, new Array<number>(10).fill(40))];
    const steps3 = [step(now - 10_000, 4, 4, 0)];
    const mine: LocalLoad = {
      ...quietLocal,
      revisionSteps: (id, revision) => (id !== 7 ? [] : revision === 2 ? steps2 : revision === 3 ? steps3 : []),
      revisions: (id) => (id === 7 ? [3, 2, 1] : []),
    };
    const load = new StoreLoad(store, { publisher: 'me', load: mine }, pino({ level: 'silent' }), 5000, () => now);
    const compared = load.revisions(7, 300);
    // Revision 1 served nothing in the window; 2's step older than five minutes does not count.
    expect(compared.map((r) => r.revision)).toEqual([2, 3]);
    const [two, three] = compared;
    expect(two).toMatchObject({ revision: 2, requests: 20, errors: 1, tokens_per_second: 4 });
    expect(two!.ttft_p50_ms).toBeGreaterThan(25);
    expect(two!.ttft_p50_ms).toBeLessThanOrEqual(50);
    expect(two!.ttft_p99_ms).toBeGreaterThan(750);
    expect(two!.ttft_p99_ms).toBeLessThanOrEqual(1000);
    expect(three).toEqual({ revision: 3, requests: 4, errors: 4, ttft_p50_ms: null, ttft_p99_ms: null, tokens_per_second: 0 });
    // A 30-second window sees only the last steps.
    expect(load.revisions(7, 30).map((r) => [r.revision, r.requests])).toEqual([
      [2, 10],
      [3, 4],
    ]);
  });
});
