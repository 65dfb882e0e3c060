// Rate limits shared by every gateway on one Redis: an `infergate serve --role control` runs a
// deployment with `rate_limit: {requests_per_second: 50}` and two `--role gateway` processes
// serve it. A client sends as fast as it can through both gateways at once for a few seconds
// (a bounded number of requests); once the burst is spent (the first 429), the two together
// admit 50 requests a second ± 10 % — with limits kept in each gateway's memory they would
// admit 100. A measurement in which a gateway decided anything from its local share (its Redis
// batch later than the 50 ms timeout, as a loaded machine makes it now and then) measured the
// fallback instead, and is made again, up to three times.
// Every process is stopped by its pid; the test's Redis keys are removed.

import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { request, type Agent } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { engineBody, killLeftoverReplicas } from './helpers/platform.js';
import { scopeOf } from './helpers/pods.js';
import { describeWithRedis, redisUrlForTests } from './helpers/redis.js';
import type { ServeProcess } from './helpers/serve-process.js';
import { adminApi, replicaCounts, startOnSharedStore } from './helpers/shared-store.js';
import { gatewayAgent } from './helpers/tls-clients.js';
import { removeTempDir } from './helpers/temp-dirs.js';

const DOMAIN = 'endpoints.test';
const ADMIN = 'igk_shared-limits-admin-key-for-tests';
const TOKEN = 'tok-shared-limits-0123456789';
const LIMIT = 50;
/**
 * Measured from the first refusal, when the burst (one second's worth) is known to be spent —
 * not from a fixed second: on a loaded machine the client may not empty the bucket in its first
 * second, and what is left of the burst would be counted as rate. At most WARM_UP_MAX_MS to get there.
 */
const WARM_UP_MAX_MS = 5_000;
const MEASURE_MS = 3_000;
/** Request loops per gateway, and a cap on all requests sent. */
const LOOPS = 2;
const MAX_REQUESTS = 40_000;

describeWithRedis('rate limits shared by two gateway processes on one Redis', () => {
  const prefix = `infergate-test-${randomUUID()}`;
  const running: ServeProcess[] = [];
  let root: string;
  let control: ServeProcess;
  let gateways: { port: number; metrics: number; proc: ServeProcess }[];
  let ca: string;

  const start = async (name: string, args: string[]) => {
    const p = await startOnSharedStore({ root, redisUrl: redisUrlForTests() as string, prefix, adminKey: ADMIN, domain: DOMAIN, secretFill: 11, gatewayWorkers: 1 }, name, args);
    running.push(p);
    return p;
  };

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'infergate-shared-limits-'));
    control = await start('control', ['--role', 'control']);
    gateways = [];
    for (const name of ['gw-a', 'gw-b']) {
      const proc = await start(name, ['--role', 'gateway']);
      gateways.push({
        proc,
        port: Number(/gateway \(TLS[^)]*\) listening on [^:]+:(\d+)/.exec(proc.output())?.[1]),
        metrics: Number(/metrics on http:\/\/[^:]+:(\d+)\/metrics/.exec(proc.output())?.[1]),
      });
    }
    ca = await readFile(path.join(root, 'certs', 'ca.crt'), 'utf8');
  });

  afterAll(async () => {
    for (const p of running) p.kill('SIGTERM');
    await Promise.all(running.map((p) => p.exited));
    killLeftoverReplicas(path.join(root, 'control', 'data'), scopeOf(root, redisUrlForTests() as string, prefix));
    await removeTempDir(root);
    const redis = new Redis(redisUrlForTests() as string);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  const metric = async (port: number, series: string): Promise<number> => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? 0 : Number(line.split(' ')[1]);
  };

  it(`admits ${LIMIT} requests a second through both gateways together, not ${LIMIT} each`, async () => {
    const api = adminApi<{ id: number; components: { Replica: { ready: number; desired: number } } }>(() => control.apiUrl, ADMIN);
    const created = await api('POST', '/deployments/general', engineBody('rated', TOKEN, { rate_limit: { requests_per_second: LIMIT } }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await expect.poll(() => replicaCounts(api, created.body.id), { timeout: 30_000 }).toEqual({ ready: 1, desired: 1 });
    const agents: Agent[] = gateways.map(() => gatewayAgent({ ca }));
    const url = (port: number) => `https://rated.${DOMAIN}:${port}/v1/models`;
    // Both gateways route the deployment before the load starts.
    for (const [i, { port }] of gateways.entries()) {
      await expect.poll(async () => (await request(url(port), { dispatcher: agents[i], headers: { authorization: `Bearer ${TOKEN}` } }).then(async (r) => (await r.body.dump(), r.statusCode))), { timeout: 15_000 }).not.toBe(404);
    }

    const fallbackTotal = async () => (await Promise.all(gateways.map((g) => metric(g.metrics, 'infergate_gateway_rate_limit_fallback_decisions_total')))).reduce((a, b) => a + b, 0);

    /**
     * One measurement. A gateway whose Redis batch answers later than its 50 ms timeout decides
     * that batch from its local share (a fallback decision, counted in its metrics): the window
     * then measured the fallback, not the shared limit this test names, so the caller measures
     * again when any was made (a loaded machine makes them now and then).
     */
    const measureOnce = async () => {
      const fallbacksBefore = await fallbackTotal();
      const startedAt = performance.now();
      const statuses = new Map<number, number>();
      const measured = { admitted: 0, refused: 0, perGateway: [0, 0] };
      let sent = 0;
      let lastAt = 0;
      /** When the first 429 came back: the start of the measured window. */
      let firstRefusalAt: number | undefined;
      const endAt = () => (firstRefusalAt ?? WARM_UP_MAX_MS) + MEASURE_MS;
      const loop = async (g: number): Promise<void> => {
        while (performance.now() - startedAt < endAt() && sent < MAX_REQUESTS) {
          sent++;
          const res = await request(url(gateways[g]!.port), { dispatcher: agents[g], headers: { authorization: `Bearer ${TOKEN}` } });
          await res.body.dump();
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
          const at = performance.now() - startedAt;
          if (res.statusCode === 429) firstRefusalAt ??= at;
          lastAt = Math.max(lastAt, at);
          if (firstRefusalAt === undefined || at <= firstRefusalAt || at >= endAt()) continue;
          if (res.statusCode === 200) {
            measured.admitted++;
            measured.perGateway[g]!++;
          } else measured.refused++;
        }
      };
      await Promise.all(gateways.flatMap((_, g) => Array.from({ length: LOOPS }, () => loop(g))));
      const fallbacks = (await fallbackTotal()) - fallbacksBefore;
      // Over the window the load covered (the request cap may end it early).
      const windowMs = firstRefusalAt === undefined ? 0 : Math.min(lastAt, endAt()) - firstRefusalAt;
      const perSecond = windowMs > 0 ? measured.admitted / (windowMs / 1000) : 0;
      console.log(
        `shared rate limit: ${sent} requests sent in ${((performance.now() - startedAt) / 1000).toFixed(1)} s (${JSON.stringify(Object.fromEntries(statuses))}); ` +
          (firstRefusalAt === undefined ? 'no refusal; ' : `from the first refusal at ${(firstRefusalAt / 1000).toFixed(2)} s, `) +
          `${perSecond.toFixed(1)} admitted/s (gw-a ${measured.perGateway[0]}, gw-b ${measured.perGateway[1]}), ${measured.refused} refused; fallback decisions ${fallbacks}`,
      );
      return { statuses, measured, firstRefusalAt, windowMs, perSecond, fallbacks };
    };

    let run = await measureOnce();
    for (let attempt = 2; attempt <= 3 && run.fallbacks > 0; attempt++) run = await measureOnce();
    await Promise.all(agents.map((a) => a.close()));
    for (const g of gateways) for (const line of g.proc.output().split('\n').filter((l) => l.includes('rate limits:'))) console.log(line);

    const { statuses, measured, firstRefusalAt, windowMs, perSecond, fallbacks } = run;
    // Every decision of the measured window was Redis's: it measured the shared limit.
    expect(fallbacks, 'decisions made from a local share in each of 3 measurements').toBe(0);
    expect(firstRefusalAt, 'the load spent the burst').toBeDefined();
    expect(windowMs).toBeGreaterThan(MEASURE_MS / 2);
    // Only 200 (admitted) and 429 (refused): nothing failed.
    expect([...statuses.keys()].sort()).toEqual([200, 429]);
    // The client pushed far past the limit through each gateway, and both admitted some.
    expect(measured.refused).toBeGreaterThan(measured.admitted * 3);
    expect(measured.perGateway.every((n) => n > 0)).toBe(true);
    expect(perSecond).toBeGreaterThanOrEqual(LIMIT * 0.9);
    expect(perSecond).toBeLessThanOrEqual(LIMIT * 1.1);
    for (const g of gateways) expect(await metric(g.metrics, 'infergate_gateway_rate_limit_shared{state="redis"}')).toBe(1);
  }, 150_000);
});
