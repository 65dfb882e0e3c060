// `infergate serve` restarted: deployments come back ready on the same data dir, and no
// replica process outlives the service — after SIGTERM (it stops them) and after SIGKILL
// (the kernel's parent-death signal stops them), checked in the process list; the start-up and
// stop lines say a stop drains them.

import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { engineBody, killLeftoverReplicas, platformDirs, replicaMains, replicaProcesses, startPlatform, type Platform, type PlatformDirs } from './helpers/platform.js';
import { removeTempDir } from './helpers/temp-dirs.js';

let root: string;
let dirs: PlatformDirs;
const started: Platform[] = [];

afterAll(async () => {
  for (const p of started) {
    p.serve.kill('SIGKILL');
    await p.serve.exited;
  }
  if (dirs) killLeftoverReplicas(dirs.dataDir);
  if (root) await removeTempDir(root);
});

const TOKEN = 'tok-restart-0123456789';
const twoReady = (d: { status: string; components: { Replica: { ready: number } } }) => d.status === 'ready' && d.components.Replica.ready === 2;

async function start(): Promise<Platform> {
  const p = await startPlatform(dirs);
  started.push(p);
  return p;
}

describe('restarting infergate serve', () => {
  it('brings every deployment back, and leaves no replica process behind after SIGTERM or SIGKILL', async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'infergate-restart-'));
    dirs = await platformDirs(root, 'restart');
    const first = await start();
    const created = await first.call('POST', '/deployments/general', engineBody('keep', TOKEN, { min_replicas: 2, max_replicas: 2 }));
    expect(created.status).toBe(201);
    const id = created.body.id as number;
    await first.waitFor(id, twoReady, 30_000, 'keep ready');
    expect(replicaMains(dirs.dataDir)).toHaveLength(2);

    // The local runtime's replicas are processes of the service: a stop drains them, and says so.
    expect(first.serve.output()).toMatch(/at a stop \(SIGTERM\), every replica is drained and stopped: under the local runtime replicas are processes of this service/);
    expect(await first.stop()).toBe(0);
    expect(first.serve.output()).toMatch(/infergate: 2 replicas drained and stopped/);
    expect(replicaProcesses(dirs.dataDir)).toEqual([]);

    const second = await start();
    await second.waitFor(id, twoReady, 30_000, 'keep ready after a restart');
    const completion = await second.client('keep', TOKEN).chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'back?' }], max_tokens: 3 });
    expect(completion.system_fingerprint).toMatch(/^keep-r1-/);

    second.serve.kill('SIGKILL');
    await second.serve.exited;
    await expect.poll(() => replicaProcesses(dirs.dataDir), { timeout: 5000 }).toEqual([]);

    const third = await start();
    await third.waitFor(id, twoReady, 30_000, 'keep ready after SIGKILL');
    expect(await third.stop()).toBe(0);
    expect(replicaProcesses(dirs.dataDir)).toEqual([]);
  });
});
