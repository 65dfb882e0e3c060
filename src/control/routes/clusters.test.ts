// The catalog routes show a hardware instance's cpus and memory_gib when the catalog file
// gives them, and leave them out when it does not (the response schema drops what it does
// not list, so this guards the route and the schema together).

import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testCa } from '../../../test/helpers/control.js';
import { systemClock } from '../../core/clock.js';
import { Sealer } from '../../core/secrets.js';
import { parseCatalog } from '../../domain/catalog.js';
import { DEFAULT_IMAGE_MAP } from '../../domain/image-map.js';
import { FileStore } from '../../store/file-store.js';
import { buildControlApp, type ControlApp } from '../app.js';
import { Credentials } from '../credentials.js';

const KEY = 'igk_clusters-test-admin-key-0123456789';

const catalog = parseCatalog({
  clusters: [
    {
      id: 7,
      name: 'sized',
      orchestration_enabled: false,
      hardware: [
        { id: 1, name: 'h100-8x', gpus_per_instance: 8, instances: 2, cpus: 96, memory_gib: 1536 },
        { id: 2, name: 'cpu-box', gpus_per_instance: 0, instances: 4 },
      ],
    },
  ],
});

let app: ControlApp;
let store: FileStore;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-clusters-'));
  store = new FileStore({ dir });
  await store.open();
  await new Credentials(store, systemClock).ensureAdmin(KEY);
  app = await buildControlApp({
    store,
    catalog,
    images: DEFAULT_IMAGE_MAP,
    logs: null,
    gpuQuota: 32,
    sealer: new Sealer(randomBytes(32)),
    clock: systemClock,
    endpoint: { domain: 'endpoints.test', port: 443 },
    ca: await testCa(),
    consoleDir: null,
  });
});

afterAll(async () => {
  await app.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const get = async (url: string): Promise<unknown> => {
  const res = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${KEY}` } });
  expect(res.statusCode).toBe(200);
  return res.json();
};

describe('hardware sizes in the catalog routes', () => {
  it('lists cpus and memory_gib where the catalog gives them', async () => {
    expect(await get('/clusters/7/hardware')).toEqual({
      items: [
        { id: 1, name: 'h100-8x', gpus_per_instance: 8, instances: 2, instances_free: 2, cpus: 96, memory_gib: 1536 },
        { id: 2, name: 'cpu-box', gpus_per_instance: 0, instances: 4, instances_free: 4 },
      ],
    });
  });

  it('the cluster listing carries the same fields', async () => {
    const body = (await get('/clusters')) as { items: { hardware: Record<string, unknown>[] }[] };
    expect(body.items[0]?.hardware[0]).toMatchObject({ cpus: 96, memory_gib: 1536 });
  });
});
