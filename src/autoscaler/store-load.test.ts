// The autoscaler's load over several gateways: its own process's gateway read directly, the
// others' reports read from the store (its own report there skipped, not counted twice),
// reports that stop being readable counted only until they are stale.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LOAD_TOPIC, type LoadReport } from '../domain/load-report.js';
import { FileStore } from '../store/file-store.js';
import { StoreLoad } from './store-load.js';

const s = (second: number, average: number) => ({ second: second * 1000, average });
const report = (average: number, held: number, replica: number): LoadReport => ({
  at: 1,
  deployments: { 7: { samples: [s(1, average), s(2, average)], held, inflight: replica } },
  replicas: { 3: replica },
});

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
  const local = { samples: (id: number) => (id === 7 ? [s(1, 1), s(2, 1)] : []), held: (id: number) => (id === 7 ? 1 : 0), inflight: (id: number) => (id === 3 ? 1 : 0) };

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
});
