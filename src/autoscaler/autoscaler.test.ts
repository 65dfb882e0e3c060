// The autoscaler's loop against a real file store and a fake load source: it decides per
// deployment from the gateway's samples, tells the controller when a figure changes, scales
// orchestrated aggregated Workers too, leaves disaggregated pools and paused deployments alone,
// keeps the activity history of what it saw and decided, and tells each change of a desired
// count as an event with its figures (and nothing while the figure stays). With traffic split
// between revisions it decides per revision, on that revision's figures; on the LLM signals it
// reads the engines' gauges, the flow-control queue and the TTFT steps, and says the signal.

import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../core/clock.js';
import type { DeploymentRecord } from '../domain/records.js';
import { FileStore } from '../store/file-store.js';
import { modify } from '../store/store.js';
import { deploymentRecord, replicaRecord } from '../store/store.contract.js';
import { orchestratedSpec } from '../../test/helpers/spec-fixtures.js';
import { ActivityRecorder } from './activity.js';
import { Autoscaler } from './autoscaler.js';
import type { EventNote } from '../store/event-writer.js';
import { STATS_STEP_MS, emptyStats, ttftBucket, type RevisionStep } from '../domain/revision-stats.js';
import type { TrafficTarget } from '../domain/traffic.js';
import type { ReplicaEngineSignals } from './autoscaler.js';
import type { ConcurrencySample } from './decide.js';

let dir: string;
let store: FileStore;
const clock = new ManualClock(1_000_000);
const samples = new Map<number, ConcurrencySample[]>();
/** Per `${deployment}/${revision}`: that revision's concurrency samples and TTFT steps. */
const revisionSamples = new Map<string, ConcurrencySample[]>();
const steps = new Map<string, RevisionStep[]>();
const queued = new Map<number, number>();
const engines = new Map<number, ReplicaEngineSignals>();
const held = new Map<number, number>();
let changes = 0;
let autoscaler: Autoscaler;
let registry: Registry;
let activity: ActivityRecorder;
let told: Array<{ id: number; note: EventNote }>;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-autoscaler-'));
  store = new FileStore({ dir });
  await store.open();
  changes = 0;
  registry = new Registry();
  activity = new ActivityRecorder(clock);
  told = [];
  for (const m of [samples, revisionSamples, steps, queued, engines, held]) m.clear();
  autoscaler = new Autoscaler({
    events: (id, note) => told.push({ id, note }),
    activity,
    store,
    load: {
      samples: (id) => samples.get(id) ?? [],
      held: (id) => held.get(id) ?? 0,
      revisionSamples: (id, revision) => revisionSamples.get(`${id}/${revision}`) ?? [],
      queued: (id) => queued.get(id) ?? 0,
      replicaSignals: (replicaId) => engines.get(replicaId) ?? null,
      revisionSteps: (id, revision) => steps.get(`${id}/${revision ?? 'all'}`) ?? [],
    },
    clock,
    windows: { stableMs: 10_000, panicMs: 2_000, scaleToZeroGraceMs: 0 },
    logger: pino({ level: 'silent' }),
    registry,
    onChange: () => changes++,
  });
});

afterEach(async () => {
  await autoscaler.stop();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

async function add(o: Partial<DeploymentRecord>, scaling: Partial<DeploymentRecord['scaling']>): Promise<number> {
  const base = deploymentRecord(0, 'x');
  const created = await store.create('deployment', (id) => ({ ...base, id, name: `d${id}`, ...o, scaling: { ...base.scaling, ...scaling } }));
  return created.value.id;
}

/** Steady concurrency `c` over the last `seconds`. */
const series = (c: number, seconds = 10): ConcurrencySample[] => Array.from({ length: seconds }, (_, i) => ({ second: clock.now() - (seconds - i) * 1000, average: c }));
function load(id: number, c: number, seconds = 10): void {
  samples.set(id, series(c, seconds));
}

/** `n` replicas of revision `revision` of deployment `id`, in `state`; their ids. */
async function replicasOf(id: number, revision: number, n: number, state: 'ready' | 'starting' = 'ready'): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = await store.create('replica', (rid) => ({ ...replicaRecord(rid), deployment_id: id, revision, component: 'Replica', state }));
    ids.push(r.value.id);
  }
  return ids;
}

/** A 90/10 split of deployment at revision 3: revision 2 at 90 %, the latest (3) at 10 % tagged canary. */
const SPLIT: TrafficTarget[] = [
  { revision: 2, latest: false, percent: 90, tag: null },
  { revision: null, latest: true, percent: 10, tag: 'canary' },
];

/** First tokens of `count` streamed requests at `ms` each, in the step now. */
function ttft(key: string, ms: number, count = 10): void {
  const start = clock.now() - (clock.now() % STATS_STEP_MS);
  const step = { start, ...emptyStats() };
  step.requests = count;
  step.ttft[ttftBucket(ms)] = count;
  steps.set(key, [step]);
}

async function tick(): Promise<void> {
  autoscaler.poke();
  await autoscaler.stop();
}

describe('Autoscaler', () => {
  it('decides per deployment from the samples and tells the controller when a figure changes', async () => {
    const id = await add({}, { min_replicas: 1, max_replicas: 5, target_concurrency: 2 });
    load(id, 1);
    await tick();
    expect(autoscaler.desired(id)).toBe(1);
    const before = changes;
    load(id, 6);
    clock.advance(1000);
    await tick();
    expect(autoscaler.desired(id)).toBe(3);
    expect(autoscaler.decision(id)?.reason).toMatch(/panic|scale_up/);
    expect(changes).toBe(before + 1);
    expect(await registry.metrics()).toMatch(/infergate_autoscaler_desired_replicas\{deployment="d1"\} 3/);
    // One event, for the change only: the first decision kept the count (1 → 1).
    expect(told).toHaveLength(1);
    expect(told[0]!.id).toBe(id);
    expect(told[0]!.note).toMatchObject({ type: 'normal', reason: 'ScaledUp' });
    expect(told[0]!.note.message).toMatch(/^desired replicas 1 → 3: concurrency 6 over the (2 s panic|10 s stable) window, target 2 per replica/);
    clock.advance(1000);
    await tick();
    expect(told).toHaveLength(1);
  });

  it('scales orchestrated aggregated Workers; disaggregated pools and paused deployments are left alone', async () => {
    const aggregated = await add({ family: 'orchestrated', spec: orchestratedSpec({ hardware_instance_id: 1 }) }, { min_replicas: 1, max_replicas: 4, target_concurrency: 1 });
    const disaggregated = await add(
      { family: 'orchestrated', spec: orchestratedSpec({ serving_mode: 'disaggregated', worker_pools: { prefill: { hardware_instance_id: 1 }, decode: { hardware_instance_id: 1 } } }) },
      { min_replicas: 1, max_replicas: 1, pools: { prefill: 1, decode: 2 } },
    );
    const paused = await add({ paused: true, status: 'paused' }, { min_replicas: 1, max_replicas: 3, target_concurrency: 1 });
    for (const id of [aggregated, disaggregated, paused]) load(id, 3);
    await tick();
    expect(autoscaler.desired(aggregated)).toBe(3);
    expect(autoscaler.desired(disaggregated)).toBeUndefined();
    expect(autoscaler.desired(paused)).toBeUndefined();
  });

  it('records each tick in the activity history: samples, desired and ready replicas; paused undecided; deleted forgotten', async () => {
    const id = await add({}, { min_replicas: 1, max_replicas: 5, target_concurrency: 2 });
    const other = await add({}, { min_replicas: 1, max_replicas: 1 });
    await store.create('replica', (rid) => ({ ...replicaRecord(rid), deployment_id: id, component: 'Replica', state: 'ready' }));
    await store.create('replica', (rid) => ({ ...replicaRecord(rid), deployment_id: id, component: 'Replica', state: 'starting' }));
    clock.set(Math.ceil(clock.now() / 5000) * 5000 + 1000); // one second into a bucket: the next sample lands in it
    await tick();
    clock.advance(1000);
    samples.set(id, [{ second: clock.now() - 1000, average: 6 }]);
    await tick();
    const view = async (n: number) => activity.view((await store.get('deployment', n))!.value);
    const last = (await view(id)).points.at(-1);
    expect(last).toMatchObject({ in_flight: 6, in_flight_max: 6, desired: autoscaler.desired(id), ready: 1 });
    expect(autoscaler.desired(id)).toBeGreaterThan(1);

    await modify(store, 'deployment', id, (d) => ({ ...d, paused: true, status: 'paused' }));
    clock.advance(5000);
    await tick();
    expect((await view(id)).points.at(-1)).toMatchObject({ desired: null, ready: 1 });

    expect(activity.has(other)).toBe(true);
    await store.delete('deployment', other);
    await tick();
    expect(activity.has(other)).toBe(false);
  });

  it('with a split, decides per revision on its own figures, within [max(1, min), max]; desiredFor and desired agree', async () => {
    const id = await add({ revision: 3, traffic: SPLIT }, { min_replicas: 0, max_replicas: 6, target_concurrency: 2 });
    await replicasOf(id, 2, 2);
    await replicasOf(id, 3, 1);
    load(id, 8.2);
    revisionSamples.set(`${id}/2`, series(8));
    revisionSamples.set(`${id}/3`, series(0.2));
    await tick();
    expect(autoscaler.desiredFor(id, 2)).toBe(4);
    // An idle canary keeps one replica: no scale to zero inside a split.
    expect(autoscaler.desiredFor(id, 3)).toBe(1);
    expect(autoscaler.desiredFor(id, null)).toBeUndefined();
    expect(autoscaler.decision(id)).toBeUndefined();
    expect(autoscaler.desired(id)).toBe(5);
    expect(await registry.metrics()).toMatch(/infergate_autoscaler_desired_replicas\{deployment="d1"\} 5/);
    expect(told.map((t) => t.note.message)).toEqual([expect.stringMatching(/^desired replicas 2 → 4 for revision 2: concurrency 8 over the/)]);
    const metrics = await registry.metrics();
    expect(metrics).toMatch(/infergate_autoscaler_signal\{deployment="d1",revision="2",metric="concurrency"\} 4\b/);
    expect(metrics).toMatch(/infergate_autoscaler_signal\{deployment="d1",revision="3",metric="concurrency"\} 0\.2\b/);
    const view = activity.view((await store.get('deployment', id))!.value);
    expect(view.points.at(-1)).toMatchObject({ desired: 5, ready: 3, signal: 4 });
  });

  it('a revision that leaves the split is forgotten; back to one revision, the deployment is one unit again', async () => {
    const id = await add({ revision: 3, traffic: SPLIT }, { min_replicas: 1, max_replicas: 6, target_concurrency: 2 });
    await replicasOf(id, 2, 1);
    await replicasOf(id, 3, 1);
    await tick();
    expect(autoscaler.desiredFor(id, 2)).toBe(1);
    await modify(store, 'deployment', id, (d) => ({ ...d, traffic: [{ revision: null, latest: true, percent: 100, tag: null }] }));
    clock.advance(1000);
    await tick();
    expect(autoscaler.desiredFor(id, 2)).toBeUndefined();
    expect(autoscaler.desiredFor(id, 3)).toBeUndefined();
    expect(autoscaler.desiredFor(id, null)).toBe(1);
    expect(await registry.metrics()).not.toMatch(/infergate_autoscaler_signal\{[^}]*revision="2"/);
  });

  it('a revision joining a split starts from the replicas it runs, or from what the controller last applied to it', async () => {
    const id = await add({ revision: 3, traffic: SPLIT, revision_desired: { '3': { Replica: 2 } } }, { min_replicas: 1, max_replicas: 6, target_concurrency: 10, cooldown_period: 600 });
    await replicasOf(id, 2, 3);
    await replicasOf(id, 3, 2);
    await tick();
    expect(autoscaler.desiredFor(id, 2)).toBe(3);
    expect(autoscaler.desiredFor(id, 3)).toBe(2);
    expect(told).toEqual([]);
  });

  it("queue_depth: scales up on the engines' waiting requests and the flow-control queue while in-flight concurrency stays below target", async () => {
    const id = await add({}, { min_replicas: 1, max_replicas: 8, target_concurrency: 4, autoscaling_metric: 'queue_depth', autoscaling_target: 5 });
    const [a, b] = await replicasOf(id, 1, 2);
    load(id, 3);
    engines.set(a!, { waiting: 9, kvCachePercent: 40 });
    engines.set(b!, { waiting: 5, kvCachePercent: null });
    queued.set(id, 2);
    await tick();
    // 16 waiting over 2 replicas: 8 per replica against 5 → ceil(2 × 8 / 5) = 4; by concurrency (3 against 4) it would be 1.
    expect(autoscaler.desired(id)).toBe(4);
    expect(autoscaler.decision(id)).toMatchObject({ metric: 'queue_depth', target: 5, stableValue: 8, signal: 8 });
    expect(autoscaler.decision(id)!.stableConcurrency).toBeLessThan(4);
    expect(told.at(-1)?.note).toMatchObject({ reason: 'ScaledUp' });
    expect(told.at(-1)?.note.message).toMatch(/^desired replicas 1 → 4: queue_depth 8 waiting requests per replica over the (2 s panic|10 s stable) window, target 5/);
    expect(await registry.metrics()).toMatch(/infergate_autoscaler_signal\{deployment="d1",revision="",metric="queue_depth"\} 8\b/);
    expect(activity.view((await store.get('deployment', id))!.value)).toMatchObject({ metric: 'queue_depth', target: 5 });
    expect(activity.view((await store.get('deployment', id))!.value).points.at(-1)?.signal).toBe(8);
  });

  it("queue_depth in a split: each revision counts its replicas' engines and its share of the gateway's queue", async () => {
    const id = await add({ revision: 3, traffic: SPLIT }, { min_replicas: 1, max_replicas: 8, target_concurrency: 4, autoscaling_metric: 'queue_depth', autoscaling_target: 5 });
    const [old] = await replicasOf(id, 2, 1);
    const [canary] = await replicasOf(id, 3, 1);
    engines.set(old!, { waiting: 1, kvCachePercent: null });
    engines.set(canary!, { waiting: 0, kvCachePercent: null });
    queued.set(id, 10);
    await tick();
    // Revision 2: 1 + 90 % of 10 = 10 waiting → 2; revision 3: 10 % of 10 = 1 → stays 1.
    expect(autoscaler.decisionFor(id, 2)).toMatchObject({ stableValue: 10, desired: 2 });
    expect(autoscaler.decisionFor(id, 3)).toMatchObject({ stableValue: 1, desired: 1 });
  });

  it('kv_cache: the mean over ready replicas that report it; none reporting keeps the figure', async () => {
    const id = await add({}, { min_replicas: 0, max_replicas: 8, target_concurrency: 4, autoscaling_metric: 'kv_cache', autoscaling_target: 80 });
    const [a, b, c] = await replicasOf(id, 1, 3);
    await replicasOf(id, 1, 1, 'starting');
    load(id, 2);
    await tick();
    expect(autoscaler.decision(id)).toMatchObject({ reason: 'hold_no_signal', signal: null });
    expect(await registry.metrics()).not.toMatch(/infergate_autoscaler_signal\{/);
    engines.set(a!, { waiting: null, kvCachePercent: 100 });
    engines.set(b!, { waiting: null, kvCachePercent: 90 });
    engines.set(c!, { waiting: 3, kvCachePercent: null });
    clock.advance(1000);
    await tick();
    // Mean 95 % over the reporting replicas, for the 3 ready: ceil(3 × 95 / 80) = 4.
    expect(autoscaler.decision(id)).toMatchObject({ metric: 'kv_cache', stableValue: 95, desired: 4 });
  });

  it("ttft: the p90 of the unit's steps over the window; in a split each revision's own", async () => {
    const id = await add({ revision: 3, traffic: SPLIT }, { min_replicas: 1, max_replicas: 8, target_concurrency: 4, autoscaling_metric: 'ttft', autoscaling_target: 500 });
    await replicasOf(id, 2, 2);
    await replicasOf(id, 3, 1);
    ttft(`${id}/2`, 200);
    ttft(`${id}/3`, 700);
    ttft(`${id}/all`, 5000);
    revisionSamples.set(`${id}/2`, series(1));
    revisionSamples.set(`${id}/3`, series(0.5));
    await tick();
    expect(autoscaler.decisionFor(id, 2)).toMatchObject({ metric: 'ttft', desired: 2 });
    expect(autoscaler.decisionFor(id, 2)!.stableValue).toBeLessThan(200);
    expect(autoscaler.decisionFor(id, 3)).toMatchObject({ metric: 'ttft', stableValue: 725, desired: 2 });
    // One ready replica asked to double: the panic window's figure, at once.
    expect(told.map((t) => t.note.message)).toEqual([
      'desired replicas 1 → 2 for revision 3: ttft 725 ms p90 time to first token over the 2 s panic window, target 500 (panic mode: up at once, no scale-down while it lasts)',
    ]);
  });

  it('changing the metric replaces the signal series and starts its readings afresh', async () => {
    const id = await add({}, { min_replicas: 1, max_replicas: 8, target_concurrency: 4, autoscaling_metric: 'queue_depth', autoscaling_target: 5 });
    const [a] = await replicasOf(id, 1, 1);
    engines.set(a!, { waiting: 2, kvCachePercent: 50 });
    await tick();
    expect(await registry.metrics()).toMatch(/metric="queue_depth"\} 2\b/);
    await modify(store, 'deployment', id, (d) => ({ ...d, scaling: { ...d.scaling, autoscaling_metric: 'kv_cache', autoscaling_target: 80 } }));
    clock.advance(1000);
    await tick();
    const metrics = await registry.metrics();
    expect(metrics).not.toMatch(/metric="queue_depth"/);
    expect(metrics).toMatch(/metric="kv_cache"\} 50\b/);
  });
  it('leaves a deployment idle at zero undecided, and decides exactly as when it decides every tick: from zero, up, down to zero, and again', async () => {
    // The same store and load for two autoscalers: one told which deployments have load (it
    // skips those idle at zero), one not (it decides every deployment every tick).
    const history = new Map<number, ConcurrencySample[]>();
    const base = {
      store,
      load: {
        samples: (id: number) => history.get(id) ?? [],
        held: (id: number) => held.get(id) ?? 0,
        revisionSamples: () => [],
        queued: () => 0,
        replicaSignals: () => null,
        revisionSteps: () => [],
      },
      clock,
      windows: { stableMs: 10_000, panicMs: 2_000, scaleToZeroGraceMs: 1_000 },
      logger: pino({ level: 'silent' }),
      onChange: () => {},
      tickMs: 3_600_000,
    };
    const refActivity = new ActivityRecorder(clock);
    const reference = new Autoscaler({ ...base, registry: new Registry(), activity: refActivity });
    const skipping = new Autoscaler({
      ...base,
      load: { ...base.load, busy: () => [...new Set([...[...history].filter(([, h]) => h.some((x) => x.average > 0)).map(([id]) => id), ...[...held].filter(([, n]) => n > 0).map(([id]) => id)])] },
      registry: new Registry(),
      activity,
    });
    const id = await add({ desired_replicas: { Replica: 0 } }, { min_replicas: 0, max_replicas: 5, target_concurrency: 2, cooldown_period: 5 });
    const other = await add({ desired_replicas: { Replica: 0 } }, { min_replicas: 0, max_replicas: 5, target_concurrency: 2, cooldown_period: 5 });
    clock.set(Math.ceil(clock.now() / 5000) * 5000);
    let concurrency = 0;
    const replicas: number[] = [];
    const skipped: number[] = [];
    /** One second: the gateway closes it, both decide, the controller follows the figure (replicas ready at once). */
    const second = async () => {
      clock.advance(1000);
      const h = history.get(id) ?? [];
      if (concurrency > 0 || h.length > 0) history.set(id, [...h, { second: clock.now() - 1000, average: concurrency }].slice(-180));
      await Promise.all([reference.tickNow(), skipping.tickNow()]);
      const want = reference.desiredFor(id, null)!;
      expect(skipping.desiredFor(id, null)).toBe(want);
      expect(skipping.decision(id)).toMatchObject({ desired: want, reason: reference.decision(id)!.reason, panic: reference.decision(id)!.panic });
      expect(skipping.desiredFor(other, null)).toBe(reference.desiredFor(other, null));
      if (!skipping.activeDeployments().has(id)) skipped.push(clock.now());
      while (replicas.length < want) replicas.push((await store.create('replica', (rid) => ({ ...replicaRecord(rid), deployment_id: id, component: 'Replica', state: 'ready' as const }))).value.id);
      while (replicas.length > want) await store.delete('replica', replicas.pop()!);
    };
    reference.start();
    skipping.start();
    try {
      for (let i = 0; i < 20; i++) await second();
      expect(skipped.length).toBeGreaterThan(15);
      // Requests held at zero, then served at 5 in flight: up from zero, then up again.
      held.set(id, 3);
      await second();
      expect(reference.decision(id)).toMatchObject({ reason: 'activate', desired: 2 });
      held.delete(id);
      concurrency = 5;
      for (let i = 0; i < 15; i++) await second();
      expect(reference.desiredFor(id, null)).toBe(3);
      // Quiet: down, then to zero after the cooldown and grace, then idle again.
      concurrency = 0;
      const before = skipped.length;
      for (let i = 0; i < 240; i++) await second();
      expect(reference.desiredFor(id, null)).toBe(0);
      expect(skipped.length).toBeGreaterThan(before);
      // Traffic again after minutes at zero: the same figures as the one that never skipped.
      concurrency = 1;
      held.set(id, 1);
      await second();
      held.delete(id);
      for (let i = 0; i < 10; i++) await second();
      expect(reference.desiredFor(id, null)).toBeGreaterThan(0);
      // And the activity history reads the same, the steps made while idle included.
      for (const d of [id, other]) {
        const record = (await store.get('deployment', d))!.value;
        expect(activity.view(record)).toEqual(refActivity.view(record));
      }
    } finally {
      await Promise.all([reference.stop(), skipping.stop()]);
    }
  });
});
