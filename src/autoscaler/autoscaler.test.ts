// The autoscaler's loop against a real file store and a fake load source: it decides per
// deployment from the gateway's samples, tells the controller when a figure changes, scales
// orchestrated aggregated Workers too, leaves disaggregated pools and paused deployments alone,
// keeps the activity history of what it saw and decided, and tells each change of a desired
// count as an event with its figures (and nothing while the figure stays).

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
import type { ConcurrencySample } from './decide.js';

let dir: string;
let store: FileStore;
const clock = new ManualClock(1_000_000);
const samples = new Map<number, ConcurrencySample[]>();
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
  autoscaler = new Autoscaler({
    events: (id, note) => told.push({ id, note }),
    activity,
    store,
    load: { samples: (id) => samples.get(id) ?? [], held: () => 0 },
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
function load(id: number, c: number, seconds = 10): void {
  const now = clock.now();
  samples.set(id, Array.from({ length: seconds }, (_, i) => ({ second: now - (seconds - i) * 1000, average: c })));
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
});
