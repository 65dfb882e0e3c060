// Several gateways on one Redis, the autoscaler in a separate control process: `infergate
// serve --role control` runs the controller, its replicas and the autoscaler; two `--role
// gateway` processes serve the endpoints. Streams sent through both gateways scale the
// deployment by their summed concurrency (each gateway's share alone would not); a scale-down
// drain waits for the streams both gateways run on the replica it removes; a request held at
// zero on a gateway wakes the deployment though the autoscaler runs elsewhere. A gateway
// killed with SIGKILL under load costs nothing to requests sent to the other; the control
// leader killed with SIGKILL mid-rollout is replaced by the standby within the lease's time
// to live, which finishes the rollout and applies a PATCH made after the takeover, with
// no revision or usage lost. Every process is stopped by its pid; the test's Redis keys are
// removed.

import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { engineBody, killLeftoverReplicas } from './helpers/platform.js';
import { scopeOf } from './helpers/pods.js';
import { describeWithRedis, redisUrlForTests } from './helpers/redis.js';
import type { ServeProcess } from './helpers/serve-process.js';
import { adminApi, createSummedDeployment, replicaCounts as replicaCountsOf, startOnSharedStore, streamChat } from './helpers/shared-store.js';
import { gatewayFetch } from './helpers/tls-clients.js';
import { removeTempDir } from './helpers/temp-dirs.js';

const DOMAIN = 'endpoints.test';
const ADMIN = 'igk_scale-out-admin-key-for-tests-00';
const TOKEN = 'tok-scale-out-0123456789';
const LEASE_TTL_S = 3;

interface DeploymentView {
  id: number;
  status: string;
  revision: number;
  serving_revision: number | null;
  revisions: { revision: number; status: string }[];
  rollout: { revision: number; from_revision: number | null; state: string } | null;
  components: { Replica: { ready: number; desired: number } };
  totals: { requests: number };
}

describeWithRedis('gateways and the autoscaler in separate processes, on one Redis', () => {
  const prefix = `infergate-test-${randomUUID()}`;
  const running: ServeProcess[] = [];
  let root: string;
  let control: ServeProcess;
  let standby: ServeProcess;
  /** The control API the test talks to: the leader's, then the standby's once it took over. */
  let apiUrl: string;
  let gateways: { proc: ServeProcess; port: number }[];
  let ca: string;

  const start = async (name: string, args: string[]) => {
    // One process per gateway: two cores run all of this test's processes (test/gateway-workers.test.ts covers workers).
    const p = await startOnSharedStore({ root, redisUrl: redisUrlForTests() as string, prefix, adminKey: ADMIN, domain: DOMAIN, secretFill: 9, gatewayWorkers: 1 }, name, args);
    running.push(p);
    return p;
  };
  const metricsPort = (p: ServeProcess) => Number(/metrics on http:\/\/[^:]+:(\d+)\/metrics/.exec(p.output())?.[1]);
  const isLeader = async (p: ServeProcess) => /^infergate_controller_leader 1$/m.test(await (await fetch(`http://127.0.0.1:${metricsPort(p)}/metrics`)).text());
  const gatewayPort = (p: ServeProcess) => Number(/gateway \(TLS[^)]*\) listening on [^:]+:(\d+)/.exec(p.output())?.[1]);

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'infergate-scale-out-'));
    const controlArgs = ['--role', 'control', '--autoscale-stable-window', '4', '--autoscale-panic-window', '2', '--scale-to-zero-grace', '1', '--controller-lease-ttl', String(LEASE_TTL_S)];
    control = await start('control', controlArgs); // first: it takes the lease
    standby = await start('standby', controlArgs);
    apiUrl = control.apiUrl;
    gateways = [];
    for (const name of ['gw-a', 'gw-b']) {
      const proc = await start(name, ['--role', 'gateway']);
      gateways.push({ proc, port: gatewayPort(proc) });
    }
    ca = await readFile(path.join(root, 'certs', 'ca.crt'), 'utf8');
  });

  afterAll(async () => {
    for (const p of running) p.kill('SIGTERM');
    await Promise.all(running.map((p) => p.exited));
    // The control process stops its replicas; any left (it was killed) are stopped by pid.
    for (const name of ['control', 'standby']) killLeftoverReplicas(path.join(root, name, 'data'), scopeOf(root, redisUrlForTests() as string, prefix));
    await removeTempDir(root);
    const redis = new Redis(redisUrlForTests() as string);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  const api = adminApi<DeploymentView>(() => apiUrl, ADMIN);
  const replicaCounts = (id: number) => replicaCountsOf(api, id);
  const client = (name: string, port: number) =>
    new OpenAI({ apiKey: TOKEN, baseURL: `https://${name}.${DOMAIN}:${port}/v1`, fetch: gatewayFetch({ ca }), maxRetries: 0 });

  it('scales by the concurrency summed over both gateways', async () => {
    const id = await createSummedDeployment(api, TOKEN);
    // Three streams through each gateway: 3 alone asks for 2 replicas, 6 together for 3.
    const streams = gateways.flatMap(({ port }) =>
      Array.from({ length: 3 }, async () => {
        const { chunks } = await streamChat(client('summed', port), 'a long answer please', 120);
        return chunks;
      }),
    );
    await expect.poll(async () => (await replicaCounts(id)).desired, { timeout: 15_000 }).toBe(3);
    for (const chunks of await Promise.all(streams)) expect(chunks).toBeGreaterThan(120);
  });

  it('drains a replica only once the streams through both gateways on it are done', async () => {
    const created = await api(
      'POST',
      '/deployments/general',
      // No grace at SIGTERM: only the drain can let the streams finish.
      engineBody('drained', TOKEN, { min_replicas: 2, max_replicas: 2, command: ['--startup-ms', '300', '--ttft-ms', '10', '--itl-ms', '50', '--shutdown-grace-ms', '0'] }),
    );
    const id = created.body.id;
    await expect.poll(() => replicaCounts(id), { timeout: 30_000 }).toEqual({ ready: 2, desired: 2 });
    const replicas = new Set<string>();
    const streams = gateways.flatMap(({ port }) =>
      Array.from({ length: 3 }, () => streamChat(client('drained', port), 'keep talking', 100, (c) => replicas.add(c.system_fingerprint ?? ''))),
    );
    await expect.poll(() => replicas.size, { timeout: 5000 }).toBe(2); // streams on both replicas
    expect((await api('PATCH', `/deployments/general/${id}`, { min_replicas: 1, max_replicas: 1 })).status).toBe(200);
    for (const r of await Promise.all(streams)) expect(r).toEqual({ chunks: expect.any(Number), finish: 'length' });
    await expect.poll(() => replicaCounts(id), { timeout: 15_000 }).toEqual({ ready: 1, desired: 1 });
  });

  it('wakes a deployment at zero from a request held on a gateway, though the autoscaler runs elsewhere', async () => {
    const created = await api(
      'POST',
      '/deployments/general',
      engineBody('woken', TOKEN, { min_replicas: 0, max_replicas: 1, max_concurrency: 2, cooldown_period: 1, command: ['--startup-ms', '300', '--ttft-ms', '10', '--itl-ms', '3'] }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id;
    await expect.poll(() => replicaCounts(id), { timeout: 40_000 }).toEqual({ ready: 0, desired: 0 });
    const answer = await client('woken', gateways[1]!.port).chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'wake up' }], max_tokens: 3 });
    expect(answer.system_fingerprint).toMatch(/^woken-r1-\d+$/);
  }, 90_000);

  it('keeps serving through one gateway while the other is killed with SIGKILL under load', async () => {
    const created = await api('POST', '/deployments/general', engineBody('steady', TOKEN, { min_replicas: 1, max_replicas: 1, command: ['--startup-ms', '300', '--ttft-ms', '5', '--itl-ms', '2'] }));
    await expect.poll(() => replicaCounts(created.body.id), { timeout: 30_000 }).toEqual({ ready: 1, desired: 1 });
    const [doomed, survivor] = gateways as [(typeof gateways)[number], (typeof gateways)[number]];
    let running = true;
    const served = { doomed: 0, survivor: 0, survivorFailed: 0 };
    const loop = async (port: number, onOk: () => void, onFail: () => void) => {
      while (running) {
        try {
          await client('steady', port).chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
          onOk();
        } catch {
          onFail();
        }
      }
    };
    const loops = [
      ...Array.from({ length: 2 }, () => loop(doomed.port, () => served.doomed++, () => undefined)),
      ...Array.from({ length: 2 }, () => loop(survivor.port, () => served.survivor++, () => served.survivorFailed++)),
    ];
    await expect.poll(() => served.doomed, { timeout: 10_000 }).toBeGreaterThan(5);
    doomed.proc.kill('SIGKILL');
    await doomed.proc.exited;
    const atKill = served.survivor;
    await expect.poll(() => served.survivor - atKill, { timeout: 15_000 }).toBeGreaterThan(20);
    running = false;
    await Promise.all(loops);
    expect(served.survivorFailed).toBe(0);
  });

  it('fails over: the standby takes the lease within its time to live after SIGKILL of the leader mid-rollout, finishes the rollout and applies a later PATCH', async () => {
    expect(await isLeader(control)).toBe(true);
    expect(await isLeader(standby)).toBe(false);
    const survivor = gateways[1]!;
    const engine = ['--startup-ms', '300', '--ttft-ms', '5', '--itl-ms', '2'];
    const created = await api('POST', '/deployments/general', engineBody('failover', TOKEN, { min_replicas: 1, max_replicas: 1, command: engine }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id;
    await expect.poll(() => replicaCounts(id), { timeout: 30_000 }).toEqual({ ready: 1, desired: 1 });
    const answered = 4;
    for (let i = 0; i < answered; i++) await client('failover', survivor.port).chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    const usage = async () => ((await api('GET', `/deployments/general/${id}/usage`)).body as unknown as DeploymentView).totals.requests;
    await expect.poll(usage, { timeout: 15_000 }).toBe(answered);
    // Revision 2, slow to start: the leader dies while it rolls out.
    const revised = await api('PATCH', `/deployments/general/${id}`, { command: ['--startup-ms', '2500', '--ttft-ms', '5', '--itl-ms', '2'] });
    expect(revised.status).toBe(200);
    await expect.poll(async () => (await api('GET', `/deployments/general/${id}`)).body.rollout, { timeout: 10_000 }).toMatchObject({ revision: 2, from_revision: 1, state: 'in_progress' });
    const killedAt = Date.now();
    control.kill('SIGKILL');
    await control.exited;
    apiUrl = standby.apiUrl;
    await expect.poll(() => isLeader(standby), { timeout: 15_000, interval: 100 }).toBe(true);
    const takeover = Date.now() - killedAt;
    console.log(`scale-out: the standby took the lease ${takeover} ms after SIGKILL of the leader (time to live ${LEASE_TTL_S} s)`);
    // The leader renewed at most a second before it died; the standby tries every second.
    expect(takeover).toBeLessThan((LEASE_TTL_S + 2) * 1000);
    // The rollout goes on where it was: revision 2 serves, revision 1 is kept as history.
    await expect.poll(async () => (await api('GET', `/deployments/general/${id}`)).body, { timeout: 30_000 }).toMatchObject({ revision: 2, serving_revision: 2, status: 'ready', rollout: { revision: 2, from_revision: 1, state: 'complete' } });
    expect((await api('GET', `/deployments/general/${id}`)).body.revisions.map((r) => r.revision)).toEqual([1, 2]);
    expect(await usage()).toBe(answered);
    // A PATCH after the takeover is applied by the new leader.
    expect((await api('PATCH', `/deployments/general/${id}`, { min_replicas: 2, max_replicas: 2 })).status).toBe(200);
    await expect.poll(() => replicaCounts(id), { timeout: 30_000 }).toEqual({ ready: 2, desired: 2 });
    const after = await client('failover', survivor.port).chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'still there?' }], max_tokens: 2 });
    expect(after.system_fingerprint).toMatch(/^failover-r2-\d+$/);
  }, 120_000);
});
