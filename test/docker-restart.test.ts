// A restart of `infergate serve` under the Docker runtime, against the real dockerd of this
// machine: SIGTERM leaves the replicas' containers running (and their network), says so, and
// the next start on the same data dir takes them back — the same containers, none started
// again, restart counts unchanged — and answers at once; `--drain-on-stop` drains them and
// leaves no container and no network. With the gateway in a process of its own (on Redis), a
// SIGTERM and a new start of the control process under steady load fail no request. Skipped
// loudly without a daemon, failed under CI=true; every container and network made is removed.

import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type Dockerode from 'dockerode';
import OpenAI from 'openai';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dockerClient } from '../src/runtime/docker/client.js';
import { LABEL } from '../src/runtime/docker/container-spec.js';
import { networkName } from '../src/runtime/docker/docker-runtime.js';
import { serviceScope } from '../src/runtime/service-scope.js';
import { adminApi, startOnSharedStore } from './helpers/shared-store.js';
import { dockerGate, ensureEngineImage, removeContainersWithLabel } from './helpers/docker.js';
import { engineBody, platformDirs, startPlatform, type Platform, type PlatformDirs } from './helpers/platform.js';
import { redisUrlForTests } from './helpers/redis.js';
import type { ServeProcess } from './helpers/serve-process.js';
import { gatewayFetch } from './helpers/tls-clients.js';
import { removeTempDir } from './helpers/temp-dirs.js';

const available = await dockerGate();
const docker: Dockerode = dockerClient();
const TOKEN = 'tok-restart-docker-0123456789';
const SERVE_ARGS = ['--runtime', 'docker', '--stop-grace', '1', '--drain-timeout', '1'];

type View = { id: number; status: string; components: { Replica: { ready: number } } };
type ReplicaView = { name: string; restarts: number; state: string };

/** What says a container was not started again: its id, when it started, the daemon's restart count. */
async function containerStates(scope: string): Promise<Array<{ id: string; startedAt: string; restartCount: number; running: boolean }>> {
  const listed = await docker.listContainers({ all: true, filters: { label: [`${LABEL.scope}=${scope}`] } });
  const inspected = await Promise.all(listed.map((c) => docker.getContainer(c.Id).inspect()));
  return inspected.map((i) => ({ id: i.Id, startedAt: i.State.StartedAt, restartCount: i.RestartCount, running: i.State.Running })).sort((a, b) => a.id.localeCompare(b.id));
}

async function networkExists(scope: string): Promise<boolean> {
  return (await docker.listNetworks({ filters: { name: [networkName(scope)] } })).some((n) => n.Name === networkName(scope));
}

/** One chat through a gateway: the replica that answered. */
async function chat(client: OpenAI): Promise<string> {
  const c = await client.chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'still there?' }], max_tokens: 2 });
  return c.system_fingerprint ?? '';
}

describe.skipIf(!available)('a restart of the service under the Docker runtime (one process)', () => {
  let root: string;
  let dirs: PlatformDirs;
  let platform: Platform;
  let engineImage: string;
  let scope: string;
  const args = () => [...SERVE_ARGS, '--engine-image', engineImage];

  beforeAll(async () => {
    engineImage = await ensureEngineImage();
    root = await mkdtemp(path.join(os.tmpdir(), 'infergate-docker-restart-'));
    dirs = await platformDirs(root, 'keep');
    platform = await startPlatform(dirs, args());
    scope = serviceScope(dirs.dataDir, null);
  }, 240_000);

  afterAll(async () => {
    platform?.serve.kill('SIGKILL');
    await platform?.serve.exited;
    if (scope) {
      await removeContainersWithLabel(docker, LABEL.scope, scope);
      await docker.getNetwork(networkName(scope)).remove().catch(() => undefined);
    }
    if (root) await removeTempDir(root);
  }, 60_000);

  it('SIGTERM leaves the containers serving; the next start takes them back without starting any again, and answers at once', async () => {
    expect(platform.serve.output()).toMatch(/at a stop \(SIGTERM\), replicas keep running and serving; the next start on this store takes them back/);
    const created = await platform.call('POST', '/deployments/general', engineBody('kept', TOKEN, { min_replicas: 2, max_replicas: 2 }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as number;
    await platform.waitFor(id, (d: View) => d.status === 'ready' && d.components.Replica.ready === 2, 90_000, 'kept ready');
    const records = async () => ((await platform.call('GET', `/deployments/general/${id}/replicas`)).body.items as ReplicaView[]).map((r) => ({ name: r.name, restarts: r.restarts, state: r.state }));
    const before = { containers: await containerStates(scope), records: await records() };
    expect(before.containers).toHaveLength(2);

    const sigterm = performance.now();
    expect(await platform.stop()).toBe(0);
    expect(platform.serve.output()).toMatch(/infergate: 2 replicas keep running; the next start of infergate serve on this store takes them back/);
    expect(platform.serve.output()).not.toMatch(/draining replica/);
    // Left as they were, on their network.
    expect(await containerStates(scope)).toEqual(before.containers);
    expect(before.containers.every((c) => c.running)).toBe(true);
    expect(await networkExists(scope)).toBe(true);

    platform = await startPlatform(dirs, args());
    const client = platform.client('kept', TOKEN);
    let answeredBy = '';
    await expect.poll(async () => (answeredBy = await chat(client).catch(() => '')), { timeout: 20_000, interval: 20 }).not.toBe('');
    const measured = performance.now() - sigterm;
    console.log(`docker-restart: SIGTERM → first answer after a new start (node dist/cli/main.js serve, under vitest): ${measured.toFixed(0)} ms`);
    expect(before.records.map((r) => r.name)).toContain(answeredBy);
    expect(await containerStates(scope)).toEqual(before.containers);
    expect(await records()).toEqual(before.records);
    expect(((await platform.deployment(id)) as View).status).toBe('ready');
  }, 180_000);

  it('--drain-on-stop: a stop drains the replicas and leaves no container and no network', async () => {
    expect(await platform.stop()).toBe(0);
    platform = await startPlatform(dirs, [...args(), '--drain-on-stop']);
    expect(platform.serve.output()).toMatch(/at a stop \(SIGTERM\), every replica is drained and removed \(--drain-on-stop\)/);
    // Taken back (not started anew) first: the start's first pass does that before the banner.
    expect((await containerStates(scope)).every((c) => c.running)).toBe(true);
    expect(await platform.stop()).toBe(0);
    expect(platform.serve.output()).toMatch(/infergate: 2 replicas drained and stopped/);
    expect(await containerStates(scope)).toEqual([]);
    expect(await networkExists(scope)).toBe(false);
  }, 90_000);
});

const redisUrl = redisUrlForTests();
if (!redisUrl) console.warn('SKIPPED (no Redis): a restart of the control process with the gateway in its own process');

describe.skipIf(!available || !redisUrl)('a restart of the control process with the gateway in its own process (on Redis)', () => {
  const prefix = `infergate-test-${randomUUID()}`;
  const ADMIN = 'igk_restart-docker-admin-key-000';
  const DOMAIN = 'endpoints.test';
  const running: ServeProcess[] = [];
  let root: string;
  let scope: string;

  afterAll(async () => {
    for (const p of running) p.kill('SIGKILL');
    await Promise.all(running.map((p) => p.exited));
    if (scope) {
      await removeContainersWithLabel(docker, LABEL.scope, scope);
      await docker.getNetwork(networkName(scope)).remove().catch(() => undefined);
    }
    const redis = new Redis(redisUrl as string);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
    if (root) await removeTempDir(root);
  }, 60_000);

  it('SIGTERM and a new start of the control process under steady load fail no request', async () => {
    const engineImage = await ensureEngineImage();
    root = await mkdtemp(path.join(os.tmpdir(), 'infergate-docker-restart-redis-'));
    scope = serviceScope(path.join(root, 'control', 'data'), redisUrl as string, prefix);
    const start = async (name: string, args: string[]) => {
      const p = await startOnSharedStore({ root, redisUrl: redisUrl as string, prefix, adminKey: ADMIN, domain: DOMAIN, secretFill: 5, gatewayWorkers: 1 }, name, args);
      running.push(p);
      return p;
    };
    const controlArgs = ['--role', 'control', ...SERVE_ARGS, '--engine-image', engineImage];
    let control = await start('control', controlArgs);
    const gateway = await start('gateway', ['--role', 'gateway']);
    const port = Number(/gateway \(TLS[^)]*\) listening on [^:]+:(\d+)/.exec(gateway.output())?.[1]);
    let apiUrl = control.apiUrl;
    const api = adminApi<View>(() => apiUrl, ADMIN);
    const created = await api('POST', '/deployments/general', engineBody('steady', TOKEN, { min_replicas: 2, max_replicas: 2 }));
    expect(created.status).toBe(201);
    const id = created.body.id;
    await expect.poll(async () => (await api('GET', `/deployments/general/${id}`)).body.components.Replica.ready, { timeout: 90_000, interval: 200 }).toBe(2);
    const before = await containerStates(scope);
    expect(before).toHaveLength(2);

    // Steady load through the gateway process: two clients, one request after another each.
    const ca = await readFile(path.join(root, 'certs', 'ca.crt'), 'utf8');
    const client = new OpenAI({ apiKey: TOKEN, baseURL: `https://steady.${DOMAIN}:${port}/v1`, fetch: gatewayFetch({ ca }), maxRetries: 0 });
    let stop = false;
    let answered = 0;
    let answeredWhileDown = 0;
    let down = false;
    const failures: string[] = [];
    const load = Promise.all(
      [0, 1].map(async () => {
        while (!stop) {
          try {
            await chat(client);
            answered++;
            if (down) answeredWhileDown++;
          } catch (err) {
            failures.push((err as Error).message);
          }
        }
      }),
    );
    await expect.poll(() => answered, { timeout: 10_000, interval: 20 }).toBeGreaterThan(20);

    down = true;
    control.kill('SIGTERM');
    expect((await control.exited).code).toBe(0);
    expect(control.output()).toMatch(/2 replicas keep running/);
    const atExit = answered;
    await expect.poll(() => answered, { timeout: 10_000, interval: 20 }).toBeGreaterThan(atExit + 20);
    control = await start('control', controlArgs);
    down = false;
    apiUrl = control.apiUrl;
    const atStart = answered;
    await expect.poll(() => answered, { timeout: 10_000, interval: 20 }).toBeGreaterThan(atStart + 40);
    stop = true;
    await load;

    expect(failures).toEqual([]);
    expect(answeredWhileDown).toBeGreaterThan(20);
    expect(await containerStates(scope)).toEqual(before);
    expect((await api('GET', `/deployments/general/${id}`)).body.status).toBe('ready');
  }, 240_000);
});
