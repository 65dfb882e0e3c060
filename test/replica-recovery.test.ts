// Replicas that fail and share: a replica killed with SIGKILL under steady load is restarted
// (its restart counted) while requests not on it succeed; a second replica of a cached model
// loads from the warm cache and starts faster; and the metrics listener's service discovery
// lists every ready replica's scrape target with deployment, revision and component labels.

import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { engineBody, replicaMains, usePlatform, type Platform } from './helpers/platform.js';

let platform: Platform;

usePlatform('recovery', [], (p) => (platform = p));

const TOKEN = 'tok-recovery-0123456789';

async function create(body: Record<string, unknown>): Promise<number> {
  const res = await platform.call('POST', '/deployments/general', body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as number;
}

async function replicas(id: number): Promise<{ name: string; state: string; restarts: number }[]> {
  return (await platform.call('GET', `/deployments/general/${id}/replicas`)).body.items;
}

describe('a replica killed under steady load', () => {
  it('is restarted with its restart counted, and requests not on it succeed', async () => {
    const id = await create(engineBody('steady', TOKEN, { min_replicas: 2, max_replicas: 2 }));
    await platform.waitFor(id, (d) => d.components.Replica.ready === 2, 30_000, 'two ready replicas');
    const client = platform.client('steady', TOKEN);
    let running = true;
    const served: { at: number; replica: string }[] = [];
    const failures: string[] = [];
    const worker = async () => {
      while (running) {
        try {
          const c = await client.chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'steady' }], max_tokens: 8 });
          served.push({ at: Date.now(), replica: c.system_fingerprint ?? '' });
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
    };
    const workers = Array.from({ length: 4 }, worker);
    // The kill lands in steady traffic: the workers are being served before it.
    await expect.poll(() => served.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(8);

    const victim = replicaMains(platform.dataDir, 'steady-')[0]!;
    process.kill(victim.pid, 'SIGKILL');
    const killedAt = Date.now();
    await expect
      .poll(async () => (await replicas(id)).find((r) => r.name === victim.replica), { timeout: 30_000, interval: 200 })
      .toMatchObject({ state: 'ready', restarts: 1 });
    // Serve on a little with the restarted replica back in rotation.
    await expect.poll(() => served.some((s) => s.at > killedAt && s.replica === victim.replica), { timeout: 10_000 }).toBe(true);
    running = false;
    await Promise.all(workers);

    // Only requests that were on the killed replica at that moment may fail: at most one per client.
    expect(failures.length).toBeLessThanOrEqual(4);
    expect(served.filter((s) => s.at > killedAt && s.replica !== victim.replica).length).toBeGreaterThan(5);
    expect(served.length).toBeGreaterThan(20);
    expect((await platform.deployment(id)).status).toBe('ready');
  });
});

describe('model caching and replica service discovery', () => {
  it('a second replica of a cached model loads from the warm cache and starts faster; SD lists both targets', async () => {
    const body = engineBody('cached', TOKEN, { enable_model_caching: true, command: ['--startup-ms', '3000', '--ttft-ms', '10', '--model', 'org/cached-model'] });
    let t0 = Date.now();
    const id = await create(body);
    await platform.waitFor(id, (d) => d.components.Replica.ready === 1, 30_000, 'first replica');
    const coldMs = Date.now() - t0;

    t0 = Date.now();
    await platform.call('PATCH', `/deployments/general/${id}`, { min_replicas: 2, max_replicas: 2 });
    await platform.waitFor(id, (d) => d.components.Replica.ready === 2, 30_000, 'second replica');
    const warmMs = Date.now() - t0;
    expect(warmMs).toBeLessThan(coldMs);
    // The deployment's own cache, not one shared with every other deployment's replicas.
    expect(readdirSync(path.join(platform.dataDir, 'model-cache'))).toEqual([String(id)]);

    const lines: { line: string; replica: string }[] = (await platform.call('GET', `/deployments/general/${id}/logs?tail=500`)).body.lines;
    const loads = lines.filter((l) => l.line.includes('model cache')).map((l) => ({ replica: l.replica, ...(JSON.parse(l.line) as { cache: string; load_ms: number }) }));
    const cold = loads.find((l) => l.cache === 'cold');
    const warm = loads.find((l) => l.cache === 'warm');
    expect(cold, JSON.stringify(loads)).toBeDefined();
    expect(warm, JSON.stringify(loads)).toBeDefined();
    expect(warm!.replica).not.toBe(cold!.replica);
    expect(warm!.load_ms).toBeLessThan(cold!.load_ms / 2);

    const sd = await fetch(`http://127.0.0.1:${platform.ports.metrics}/sd/replicas`);
    expect(sd.headers.get('content-type')).toContain('application/json');
    const groups = ((await sd.json()) as { targets: string[]; labels: Record<string, string> }[]).filter((g) => g.labels.deployment === 'cached');
    expect(groups).toHaveLength(2);
    for (const g of groups) {
      expect(g.labels).toMatchObject({ deployment: 'cached', revision: '1', component: 'Replica', __metrics_path__: '/metrics' });
      expect(g.targets).toHaveLength(1);
      const scraped = await (await fetch(`http://${g.targets[0]}${g.labels.__metrics_path__}`)).text();
      expect(scraped).toContain('vllm:num_requests_running');
    }
    expect(new Set(groups.map((g) => g.targets[0])).size).toBe(2);
  });
});
