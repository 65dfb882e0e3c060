// A deleted deployment leaves nothing behind, whatever state it was in: its log and model
// cache directories and its usage rows go — for a deployment deleted while paused (no replica
// left to retire), and for one deleted while the service was down (swept at the next start).
// `infergate serve` runs as a real process; what is left is read from its data dir
// (directories, and the file store's files for its records), since the API 404s a deleted id.

import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readState } from '../src/store/file-open.js';
import { FileStore } from '../src/store/file-store.js';
import { engineBody, killLeftoverReplicas, platformDirs, replicaProcesses, startPlatform, type Platform, type PlatformDirs } from './helpers/platform.js';
import { removeTempDir } from './helpers/temp-dirs.js';

let root: string;
const started: Platform[] = [];
const dataDirs: string[] = [];

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'infergate-cleanup-'));
});

afterAll(async () => {
  for (const p of started) {
    p.serve.kill('SIGKILL');
    await p.serve.exited;
  }
  for (const dir of dataDirs) killLeftoverReplicas(dir);
  if (root) await removeTempDir(root);
});

const TOKEN = 'tok-cleanup-0123456789';

async function start(dirs: PlatformDirs): Promise<Platform> {
  const p = await startPlatform(dirs);
  started.push(p);
  return p;
}

async function newDirs(name: string): Promise<PlatformDirs> {
  const dirs = await platformDirs(root, name);
  dataDirs.push(dirs.dataDir);
  return dirs;
}

/** Store records of a deployment, read from the file store's files (read-only, beside the running service). */
async function recordsOf(dataDir: string, deploymentId: number): Promise<{ usage: number; replicas: number }> {
  const state = await readState(dataDir);
  const count = (kind: 'usage' | 'replica') => [...(state.records.get(kind)?.values() ?? [])].filter((s) => (s.record.value as { deployment_id: number }).deployment_id === deploymentId).length;
  return { usage: count('usage'), replicas: count('replica') };
}

/** What a deployment can leave on disk and in the store. */
async function leftovers(dataDir: string, id: number): Promise<string[]> {
  const found: string[] = [];
  for (const dir of ['logs', 'model-cache', 'orchestrated']) if (existsSync(path.join(dataDir, dir, String(id)))) found.push(`${dir}/${id}`);
  const records = await recordsOf(dataDir, id);
  if (records.usage > 0) found.push('usage rows'); // one per hour it ran: an hour may turn during the test
  if (records.replicas > 0) found.push(`${records.replicas} replica records`);
  return found;
}

/** Creates a deployment with logs and a model cache, waits until it is ready and its replica's lifetime is in the usage view. */
async function readyWithLeftovers(platform: Platform, name: string): Promise<number> {
  const created = await platform.call('POST', '/deployments/general', engineBody(name, TOKEN.replace('cleanup', name), { enable_logging: true, enable_model_caching: true }));
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const id = created.body.id as number;
  await platform.waitFor(id, (d) => d.status === 'ready', 30_000, `${name} ready`);
  // The controller counts replica-seconds every pass; the ledger writes them within 2 s.
  await expect.poll(async () => (await platform.call('GET', `/deployments/general/${id}/usage`)).body.totals?.replica_seconds?.Replica ?? 0, { timeout: 10_000 }).toBeGreaterThan(0);
  expect(await leftovers(platform.dataDir, id)).toEqual([`logs/${id}`, `model-cache/${id}`, 'usage rows', '1 replica records']);
  return id;
}

describe('cleaning up a deleted deployment', () => {
  it('removes the logs, model cache and usage rows of a deployment deleted while paused', async () => {
    const platform = await start(await newDirs('paused'));
    const id = await readyWithLeftovers(platform, 'paused');

    expect((await platform.call('POST', `/deployments/general/${id}/pause`)).status).toBe(202);
    await platform.waitFor(id, (d) => d.status === 'paused' && d.components.Replica.ready === 0, 20_000, 'paused');
    await expect.poll(() => replicaProcesses(platform.dataDir).filter((p) => p.replica.startsWith('paused-')), { timeout: 20_000 }).toEqual([]);
    // Paused, nothing runs, but what the deployment made is still there.
    await expect.poll(() => leftovers(platform.dataDir, id), { timeout: 5000 }).toEqual([`logs/${id}`, `model-cache/${id}`, 'usage rows']);

    expect((await platform.call('DELETE', `/deployments/general/${id}`)).status).toBe(202);
    expect((await platform.call('GET', `/deployments/general/${id}/usage`)).status).toBe(404);
    await expect.poll(() => leftovers(platform.dataDir, id), { timeout: 10_000 }).toEqual([]);
    expect(await platform.stop()).toBe(0);
  });

  it('sweeps at start what a deployment deleted while the service was down left', async () => {
    const dirs = await newDirs('down');
    const first = await start(dirs);
    const id = await readyWithLeftovers(first, 'down');
    const kept = await readyWithLeftovers(first, 'kept');

    // The service dies outright, and the deployment is deleted before it is back: the store
    // no longer has it, so no controller ever sees it leave.
    first.serve.kill('SIGKILL');
    await first.serve.exited;
    await expect.poll(() => replicaProcesses(dirs.dataDir), { timeout: 5000 }).toEqual([]);
    const store = new FileStore({ dir: dirs.dataDir });
    await store.open();
    expect(await store.delete('deployment', id)).toBe(true);
    await store.close();
    expect(await leftovers(dirs.dataDir, id)).toEqual([`logs/${id}`, `model-cache/${id}`, 'usage rows', '1 replica records']);

    const second = await start(dirs);
    await expect.poll(() => leftovers(dirs.dataDir, id), { timeout: 15_000 }).toEqual([]);
    // A deployment that still exists keeps everything (its replica runs again).
    await second.waitFor(kept, (d) => d.status === 'ready', 30_000, 'kept ready again');
    expect(await leftovers(dirs.dataDir, kept)).toEqual([`logs/${kept}`, `model-cache/${kept}`, 'usage rows', '1 replica records']);
    expect(await second.stop()).toBe(0);
  });
});
