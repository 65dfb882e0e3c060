// GET …/activity through the control app with a real activity recorder: the response carries
// the metric and target the deployment scales on and each point's signal (the response schema
// drops what it does not list, so this guards the route and the schema together).

import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testCa } from '../../../test/helpers/control.js';
import { ActivityRecorder } from '../../autoscaler/activity.js';
import { ManualClock, systemClock } from '../../core/clock.js';
import { Sealer } from '../../core/secrets.js';
import { parseCatalog } from '../../domain/catalog.js';
import { DEFAULT_IMAGE_MAP } from '../../domain/image-map.js';
import { deploymentRecord } from '../../store/store.contract.js';
import { FileStore } from '../../store/file-store.js';
import { buildControlApp, type ControlApp } from '../app.js';
import { Credentials } from '../credentials.js';

const KEY = 'igk_activity-route-test-admin-key-0123';
const T0 = Date.parse('2026-03-01T12:00:01.000Z');

let app: ControlApp;
let store: FileStore;
let dir: string;
let id: number;
const clock = new ManualClock(T0);
const activity = new ActivityRecorder(clock);

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-activity-route-'));
  store = new FileStore({ dir });
  await store.open();
  await new Credentials(store, systemClock).ensureAdmin(KEY);
  const base = deploymentRecord(0, 'x');
  id = (
    await store.create('deployment', (n) => ({
      ...base,
      id: n,
      name: 'queued',
      scaling: { ...base.scaling, min_replicas: 1, max_replicas: 4, target_concurrency: 8, autoscaling_metric: 'queue_depth', autoscaling_target: 5 },
    }))
  ).value.id;
  activity.record(id, { samples: [{ second: T0, average: 2 }], held: 0, desired: 3, ready: 2, signal: 12.4 });
  clock.advance(1000);
  app = await buildControlApp({
    store,
    catalog: parseCatalog({ clusters: [{ id: 1, name: 'c', orchestration_enabled: false, hardware: [{ id: 1, name: 'gpu', gpus_per_instance: 1, instances: 1 }] }] }),
    images: DEFAULT_IMAGE_MAP,
    logs: null,
    gpuQuota: 32,
    sealer: new Sealer(randomBytes(32)),
    clock: systemClock,
    endpoint: { domain: 'endpoints.test', port: 443 },
    ca: await testCa(),
    consoleDir: null,
    activity,
  });
});

afterAll(async () => {
  await app?.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('GET /deployments/general/{id}/activity', () => {
  it('says the metric, its target and the signal of each step', async () => {
    const res = await app.inject({ method: 'GET', url: `/deployments/general/${id}/activity`, headers: { authorization: `Bearer ${KEY}` } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      step_seconds: 5,
      window_seconds: 900,
      component: 'Replica',
      metric: 'queue_depth',
      target: 5,
      points: [{ t: '2026-03-01T12:00:00.000Z', in_flight: 2, in_flight_max: 2, held: 0, desired: 3, ready: 2, signal: 12.4 }],
    });
  });
});
