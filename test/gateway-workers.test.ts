// Gateway workers: `infergate serve --gateway-workers 2` on Redis runs its gateway in two
// node:cluster worker processes sharing the gateway port. Streams sent on separate connections
// are served by both workers (their access log lines say which), and the autoscaler scales by
// the concurrency summed over both (one worker's share alone would ask for fewer replicas).
// /metrics merges the workers' counters; a worker killed with SIGKILL is replaced while
// requests keep being served, and the merged counters keep what it had counted; stopping the process stops its workers. Every process is
// stopped by its pid; the test's Redis keys are removed.

import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { engineBody, killLeftoverReplicas } from './helpers/platform.js';
import { scopeOf } from './helpers/pods.js';
import { describeWithRedis, redisUrlForTests } from './helpers/redis.js';
import type { ServeProcess } from './helpers/serve-process.js';
import { adminApi, createSummedDeployment, replicaCounts as replicaCountsOf, startOnSharedStore, streamChat } from './helpers/shared-store.js';
import { gatewayFetch } from './helpers/tls-clients.js';
import { removeTempDir } from './helpers/temp-dirs.js';

const DOMAIN = 'endpoints.test';
const ADMIN = 'igk_gateway-workers-admin-key-for-tests';
const TOKEN = 'tok-gateway-workers-0123456789';

/** The serve process's gateway workers: its children forked with the worker variable set (replicas are children too). */
function workerPids(pid: number): number[] {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  return children.filter((child) => {
    try {
      return readFileSync(`/proc/${child}/environ`, 'utf8').split('\0').some((v) => v.startsWith('INFERGATE_GATEWAY_WORKER='));
    } catch {
      return false;
    }
  });
}

const alive = (pid: number) => existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));

describeWithRedis('gateway workers sharing the gateway port', () => {
  const prefix = `infergate-test-${randomUUID()}`;
  let root: string;
  let serve: ServeProcess;
  let gatewayPort: number;
  let metricsPort: number;
  let ca: string;

  // What serve said, when a test failed: a worker's death and the primary's account of it.
  afterEach((ctx) => {
    if (ctx.task.result?.state === 'fail') process.stderr.write(`--- infergate serve output ---\n${serve?.output() ?? ''}\n`);
  });

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'infergate-workers-'));
    serve = await startOnSharedStore(
      { root, redisUrl: redisUrlForTests() as string, prefix, adminKey: ADMIN, domain: DOMAIN, secretFill: 5, gatewayWorkers: 2 },
      'serve',
      ['--access-log', '--autoscale-stable-window', '4', '--autoscale-panic-window', '2'],
    );
    gatewayPort = Number(/gateway \(TLS[^)]*\) listening on [^:]+:(\d+) by 2 worker processes/.exec(serve.output())?.[1]);
    metricsPort = Number(/metrics on http:\/\/[^:]+:(\d+)\/metrics/.exec(serve.output())?.[1]);
    ca = await readFile(path.join(root, 'certs', 'ca.crt'), 'utf8');
  });

  afterAll(async () => {
    serve?.kill('SIGTERM');
    await serve?.exited;
    killLeftoverReplicas(path.join(root, 'serve', 'data'), scopeOf(root, redisUrlForTests() as string, prefix));
    await removeTempDir(root);
    const redis = new Redis(redisUrlForTests() as string);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  const api = adminApi<{ id: number; components: { Replica: { ready: number; desired: number } } }>(() => serve.apiUrl, ADMIN);
  const replicaCounts = (id: number) => replicaCountsOf(api, id);
  /** A client with its own connection pool: each one's first request opens a new connection. */
  const client = (name: string) => new OpenAI({ apiKey: TOKEN, baseURL: `https://${name}.${DOMAIN}:${gatewayPort}/v1`, fetch: gatewayFetch({ ca }), maxRetries: 0 });
  const metrics = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const metric = (text: string, line: RegExp) => Number(line.exec(text)?.[1] ?? NaN);
  const chat = (name: string) =>
    client(name).chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'hello' }], max_tokens: 4 });
  const accessLogWorkers = (deployment: string) =>
    new Set(
      serve
        .output()
        .split('\n')
        .filter((l) => l.includes('"msg":"request"') && l.includes(`"deployment":"${deployment}"`))
        .map((l) => (JSON.parse(l) as { worker: number }).worker),
    );

  it('starts two worker processes on one port and reports them in /metrics', async () => {
    expect(gatewayPort).toBeGreaterThan(0);
    expect(workerPids(serve.child.pid!)).toHaveLength(2);
    const text = await metrics();
    expect(metric(text, /^infergate_gateway_workers (\d+)$/m)).toBe(2);
    expect(metric(text, /^infergate_gateway_workers_scraped (\d+)$/m)).toBe(2);
    // The store's health is the lowest of the primary's and the workers', not their sum.
    expect(metric(text, /^infergate_store_up (\d+)$/m)).toBe(1);
  });

  it('serves through both workers and scales by the concurrency summed over them', async () => {
    const id = await createSummedDeployment(api, TOKEN);
    // Six streams on six connections, handed to the workers in turn: one worker's three ask
    // for 2 replicas, the six together for 3.
    const streams = Array.from({ length: 6 }, async () => (await streamChat(client('summed'), 'a long answer please', 120)).chunks);
    await expect.poll(async () => (await replicaCounts(id)).desired, { timeout: 15_000 }).toBe(3);
    for (const chunks of await Promise.all(streams)) expect(chunks).toBeGreaterThan(120);
    await expect.poll(() => accessLogWorkers('summed').size, { timeout: 5_000 }).toBe(2);
    // The scrape sums the workers' counters: all six streams, whichever worker served them.
    const text = await metrics();
    expect(metric(text, /^infergate_requests_total\{deployment="summed",status="200",protocol="http"\} (\d+)$/m)).toBe(6);
  });

  it('replaces a worker killed with SIGKILL while requests keep being served', async () => {
    const [victim, survivor] = workerPids(serve.child.pid!) as [number, number];
    // Both workers have served (the test before): the victim takes its count with it, unless the primary keeps it.
    const served = /^infergate_requests_total\{deployment="summed",status="200",protocol="http"\} (\d+)$/m;
    const before = metric(await metrics(), served);
    process.kill(victim, 'SIGKILL');
    // Once the primary has seen the worker die (a connection node:cluster hands to a worker in
    // the instant it dies is lost with it — docs/operations.md), new connections go to the
    // survivor while the replacement starts, then to both.
    await expect.poll(async () => metric(await metrics(), /^infergate_gateway_worker_restarts_total (\d+)$/m), { timeout: 10_000 }).toBe(1);
    for (let i = 0; i < 20; i++) {
      const answer = await chat('summed');
      expect(answer.choices[0]?.message.content).toBeTruthy();
    }
    await expect.poll(async () => metric(await metrics(), /^infergate_gateway_workers (\d+)$/m), { timeout: 10_000 }).toBe(2);
    // The merged counter goes on from where it was: the dead worker's share is kept.
    expect(metric(await metrics(), served)).toBe(before + 20);
    const now = workerPids(serve.child.pid!);
    expect(now).toHaveLength(2);
    expect(now).toContain(survivor);
    expect(now).not.toContain(victim);
  });

  it('stops its workers when it stops', async () => {
    const workers = workerPids(serve.child.pid!);
    expect(workers).toHaveLength(2);
    serve.kill('SIGTERM');
    expect(await serve.exited).toEqual({ code: 0, signal: null });
    await expect.poll(() => workers.filter(alive), { timeout: 10_000 }).toEqual([]);
  });
});
