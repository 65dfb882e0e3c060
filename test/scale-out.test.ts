// Several gateways on one Redis, the autoscaler in a separate control process: `infergate
// serve --role control` runs the controller, its replicas and the autoscaler; two `--role
// gateway` processes serve the endpoints. Streams sent through both gateways scale the
// deployment by their summed concurrency (each gateway's share alone would not); a scale-down
// drain waits for the streams both gateways run on the replica it removes; a request held at
// zero on a gateway wakes the deployment though the autoscaler runs elsewhere. Every
// process is stopped by its pid; the test's Redis keys are removed.

import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { engineBody, replicaProcesses } from './helpers/platform.js';
import { describeWithRedis, redisUrlForTests } from './helpers/redis.js';
import { startServe, type ServeProcess } from './helpers/serve-process.js';
import { gatewayFetch } from './helpers/tls-clients.js';

const DOMAIN = 'endpoints.test';
const ADMIN = 'igk_scale-out-admin-key-for-tests-00';
const TOKEN = 'tok-scale-out-0123456789';

describeWithRedis('gateways and the autoscaler in separate processes, on one Redis', () => {
  const prefix = `infergate-test-${randomUUID()}`;
  const running: ServeProcess[] = [];
  let root: string;
  let control: ServeProcess;
  let gateways: { proc: ServeProcess; port: number }[];
  let ca: string;

  const start = async (name: string, args: string[]) => {
    const p = await startServe({
      dataDir: path.join(root, name, 'data'),
      certsDir: path.join(root, 'certs'),
      args,
      env: {
        INFERGATE_REDIS_URL: redisUrlForTests() as string,
        INFERGATE_REDIS_PREFIX: prefix,
        INFERGATE_ADMIN_KEY: ADMIN,
        INFERGATE_SECRET_KEY: Buffer.alloc(32, 9).toString('base64'),
        INFERGATE_DOMAIN: DOMAIN,
      },
    });
    running.push(p);
    return p;
  };
  const gatewayPort = (p: ServeProcess) => Number(/gateway \(TLS[^)]*\) listening on [^:]+:(\d+)/.exec(p.output())?.[1]);

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'infergate-scale-out-'));
    control = await start('control', ['--role', 'control', '--autoscale-stable-window', '4', '--autoscale-panic-window', '2', '--scale-to-zero-grace', '1']);
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
    for (const r of replicaProcesses(path.join(root, 'control', 'data'))) process.kill(r.pid, 'SIGKILL');
    await rm(root, { recursive: true, force: true });
    const redis = new Redis(redisUrlForTests() as string);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  const api = async (method: string, route: string, body?: unknown) => {
    const res = await fetch(`${control.apiUrl}${route}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as { id: number; components: { Replica: { ready: number; desired: number } } } };
  };
  const replicaCounts = async (id: number) => (await api('GET', `/deployments/general/${id}`)).body.components.Replica;
  const client = (name: string, port: number) =>
    new OpenAI({ apiKey: TOKEN, baseURL: `https://${name}.${DOMAIN}:${port}/v1`, fetch: gatewayFetch({ ca }), maxRetries: 0 });

  it('scales by the concurrency summed over both gateways', async () => {
    const created = await api(
      'POST',
      '/deployments/general',
      engineBody('summed', TOKEN, { min_replicas: 1, max_replicas: 3, max_concurrency: 2, cooldown_period: 30, command: ['--startup-ms', '300', '--ttft-ms', '10', '--itl-ms', '50'] }),
    );
    expect(created.status).toBe(201);
    const id = created.body.id;
    await expect.poll(() => replicaCounts(id), { timeout: 30_000 }).toEqual({ ready: 1, desired: 1 });
    // Three streams through each gateway: 3 alone asks for 2 replicas, 6 together for 3.
    const streams = gateways.flatMap(({ port }) =>
      Array.from({ length: 3 }, async () => {
        const s = await client('summed', port).chat.completions.create({
          model: 'sim/model',
          messages: [{ role: 'user', content: 'a long answer please' }],
          max_tokens: 120,
          stream: true,
          ignore_eos: true,
        } as OpenAI.ChatCompletionCreateParamsStreaming);
        let chunks = 0;
        for await (const _ of s) chunks++;
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
      Array.from({ length: 3 }, async () => {
        const s = await client('drained', port).chat.completions.create({
          model: 'sim/model',
          messages: [{ role: 'user', content: 'keep talking' }],
          max_tokens: 100,
          stream: true,
          ignore_eos: true,
        } as OpenAI.ChatCompletionCreateParamsStreaming);
        let chunks = 0;
        let finish: string | null = null;
        for await (const c of s) {
          chunks++;
          replicas.add(c.system_fingerprint ?? '');
          finish = c.choices[0]?.finish_reason ?? finish;
        }
        return { chunks, finish };
      }),
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
});
